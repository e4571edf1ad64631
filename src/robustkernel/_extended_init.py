"""An estimator's ``__init__`` built from its base class's: the base's parameters, some with
other defaults, a first parameter (positional or keyword) before them and keyword-only ones
after them.

scikit-learn reads an estimator's parameters from the signature of its ``__init__`` (no
``*args`` or ``**kwargs``): a subclass that adds one parameter would restate every one of the
base's. :func:`extended_init` gives the subclass an ``__init__`` whose ``__signature__`` lists
them all, and which stores each argument as an attribute of the same name, as scikit-learn
requires.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


def extended_init(
    base: type,
    added: dict[str, tuple[Any, str]] | None = None,
    defaults: dict[str, Any] | None = None,
    first: tuple[str, Any, str] | None = None,
) -> Callable[..., None]:
    """The ``__init__`` of a subclass of ``base``.

    Parameters
    ----------
    base : type
        The class whose ``__init__`` takes the shared parameters.
    added : dict, default=None
        name -> (default, annotation) of the keyword-only parameters the subclass adds.
    defaults : dict, default=None
        name -> the subclass's default of a parameter of ``base``.
    first : (name, default, annotation), default=None
        A parameter the subclass adds before the base's (positional or keyword; the base's
        must then all be keyword-only).

    Returns
    -------
    __init__ : callable
        Binds its arguments to the extended signature (a TypeError names an unknown or
        missing one), calls ``base.__init__`` with the shared ones and sets the added ones.
    """
    added, defaults = added or {}, defaults or {}
    shared = inspect.signature(base.__init__)
    unknown = set(defaults) - set(shared.parameters)
    if unknown:
        raise TypeError(f"{base.__name__}.__init__ has no parameter {sorted(unknown)}")
    self_parameter, *shared_parameters = (
        parameter.replace(default=defaults[name]) if name in defaults else parameter
        for name, parameter in shared.parameters.items()
    )
    leading = [] if first is None else [
        inspect.Parameter(
            first[0], inspect.Parameter.POSITIONAL_OR_KEYWORD, default=first[1],
            annotation=first[2],
        )
    ]
    trailing = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint)
        for name, (default, hint) in added.items()
    ]
    own = [parameter.name for parameter in leading + trailing]
    signature = shared.replace(
        parameters=[self_parameter, *leading, *shared_parameters, *trailing]
    )

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        del values["self"]
        extra = {name: values.pop(name) for name in own}
        base.__init__(self, **values)
        for name, value in extra.items():
            setattr(self, name, value)

    __init__.__signature__ = signature  # type: ignore[attr-defined]
    return __init__
