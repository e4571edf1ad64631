"""A fit away from NumPy in memory: over a Dask array, or on a PyTorch device.

In: validated settings and a Dask array (:mod:`.distributed`: passes over the chunks, "auto"
from an in-memory fit of a sample), or the exact kernel model's rows and a device
(:mod:`.torch_backend`: the kernel matrix and its solves in PyTorch). Out: a
:class:`~robustkernel.subquantile._result.FitResult` (Dask), or the device's kernel matrix and
subset fitter that the in-memory fit uses.
"""
