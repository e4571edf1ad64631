"""The library version and the warning about models from another version (a leaf module).

Everything that needs the version imports it from here: the package ``__init__`` re-exports it
as ``robustkernel.__version__``, :mod:`robustkernel.persistence` writes and checks it in model
files, and :mod:`robustkernel._version_stamp` puts it in every estimator's pickled state. This
module imports nothing from the package, so any module may import it.
"""

from __future__ import annotations

__version__ = "0.1.0.dev0"


class ModelVersionWarning(UserWarning):
    """The model file was written by another version of robustkernel."""
