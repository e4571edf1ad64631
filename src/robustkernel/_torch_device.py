"""The torch device a ``device`` string names, checked: the one rule of the PyTorch paths (the
Subquantile estimators' GPU backend and the networks). PyTorch is imported only when called."""

from __future__ import annotations

from typing import Any


def torch_device(device: str) -> Any:
    """The torch device named by ``device``; a clear ValueError if it is not usable."""
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise ValueError(
            f"device={device!r} is not a torch device string; use e.g. 'cuda', 'cuda:0' or "
            "'cpu' (or device=None for the NumPy path)."
        ) from error
    if parsed.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ValueError(
                f"device={device!r} needs a CUDA GPU and a CUDA build of PyTorch; "
                "torch.cuda.is_available() is False here. Use device=None (NumPy) or 'cpu'."
            )
        if parsed.index is not None and parsed.index >= count:
            raise ValueError(f"device={device!r}: only {count} CUDA device(s) are available.")
    return parsed
