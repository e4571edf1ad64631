"""robustkernel: kernel methods that stay right when a fraction of the training data is wrong."""

from .subquantile import SubquantileKernelClassifier, SubquantileKernelRegressor

__version__ = "0.1.0.dev0"

__all__ = ["SubquantileKernelClassifier", "SubquantileKernelRegressor", "__version__"]
