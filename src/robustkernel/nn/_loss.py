"""The Subquantile objective on per-sample losses, for PyTorch training loops."""

from __future__ import annotations

from typing import Any

from .._fractions import n_kept


def subquantile_loss(losses: Any, epsilon: float, *, smoothing: float | None = None) -> Any:
    r"""The mean of the ``(1 - epsilon)`` fraction of smallest per-sample losses.

    This is the papers' :math:`g(t, f) = t - \frac{1}{k} \sum_{i=1}^n (t - \ell_i)_+` at its
    maximizing :math:`t`, the :math:`k`-th smallest loss
    (:math:`k = \lceil (1 - \varepsilon) n \rceil`): its gradient is the mean gradient of the
    :math:`k` best-explained samples, so a training step ignores the rows that look corrupted.
    With ``smoothing=s`` the hinge is replaced by the softplus
    :math:`\frac{1}{s} \log(1 + e^{s x})`, and every sample's gradient is weighted by
    :math:`\sigma(s (t - \ell_i)) / k`; :math:`s \to \infty` gives the hard version.

    Parameters
    ----------
    losses : torch.Tensor of shape (n_samples,)
        Per-sample losses (e.g. ``reduction="none"`` of a torch loss), on any device.
    epsilon : float in [0, 0.5)
        Fraction of the samples left out.
    smoothing : float > 0 or None, default=None
        Softplus sharpness s (in 1 / loss units); None for the hard subquantile.

    Returns
    -------
    loss : torch.Tensor
        A scalar to call ``backward()`` on.

    Raises
    ------
    TypeError
        ``losses`` is not a torch tensor.
    ValueError
        ``losses`` is not one-dimensional and non-empty, ``epsilon`` is outside [0, 0.5), or
        ``smoothing`` is not positive or outside the range of the losses' floating dtype
        (s and 1 / s must be representable: about [3e-39, 3e38] in float32).

    Notes
    -----
    With :math:`\ell_{(1)} \le \dots \le \ell_{(n)}` the sorted losses, the hard version
    (``smoothing=None``) returns

    .. math::

        \max_t \, g(t, f) = \frac{1}{k} \sum_{i=1}^k \ell_{(i)},

    and the smoothed one returns
    :math:`t - \frac{1}{k} \sum_{i=1}^n \frac{1}{s} \log\bigl(1 + e^{s (t - \ell_i)}\bigr)`
    at :math:`t = \ell_{(k)}`.

    Examples
    --------
    >>> import torch
    >>> from robustkernel.nn import subquantile_loss
    >>> model = torch.nn.Linear(3, 1)
    >>> X, y = torch.randn(100, 3), torch.randn(100)
    >>> y[:10] = 50.0  # corrupted targets
    >>> per_sample = torch.nn.functional.mse_loss(model(X).squeeze(1), y, reduction="none")
    >>> loss = subquantile_loss(per_sample, epsilon=0.1)
    >>> loss.backward()  # the 10 rows of largest loss get no gradient
    """
    import torch

    if not isinstance(losses, torch.Tensor):
        raise TypeError(f"losses must be a torch.Tensor, got {type(losses).__name__}.")
    if losses.ndim != 1 or losses.shape[0] == 0:
        raise ValueError(
            f"losses must be a non-empty 1-d tensor of per-sample losses, got shape "
            f"{tuple(losses.shape)}."
        )
    if not 0.0 <= epsilon < 0.5:
        raise ValueError(f"epsilon must be in [0, 0.5), got {epsilon}.")
    if smoothing is not None and not smoothing > 0:
        raise ValueError(f"smoothing must be positive or None, got {smoothing}.")
    if smoothing is not None and losses.is_floating_point():
        largest = float(torch.finfo(losses.dtype).max)
        if not 1.0 / largest <= smoothing <= largest:
            raise ValueError(
                f"smoothing={smoothing:g} is outside the range that {losses.dtype} losses can "
                f"use, [{1.0 / largest:.3g}, {largest:.3g}] (s and 1 / s must be "
                "representable); smoothing=None gives the hard subquantile, the limit of large "
                "smoothing."
            )
    k = n_kept(losses.shape[0], epsilon)
    smallest = torch.topk(losses, k, largest=False, sorted=True).values
    if smoothing is None:
        return smallest.mean()
    t = smallest[-1].detach()
    hinge = torch.nn.functional.softplus(t - losses, beta=smoothing)
    return t - hinge.sum() / k
