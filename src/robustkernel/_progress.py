"""Progress of long fits: each step announced as it starts, to whoever listens.

A fit with no arguments runs for seconds to minutes through steps whose number and cost depend
on the data (the kernel families tried, the second stage's folds and rounds, the misfit
passes). The code of each step calls :func:`step` with what it is about to do; nothing happens
unless a listener was installed around the fit: :func:`step_bar`, the estimators' progress bar
under ``verbose`` (scikit-learn's convention: 0 says nothing), or the command line's bar, which
shows the running step beside its own (``robustkernel fit``). The listener is a context
variable, so the steps need no parameter through the layers between the estimator and them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_listener: ContextVar[Callable[[str], None] | None] = ContextVar(
    "robustkernel_progress", default=None
)


def step(description: str) -> None:
    """Announce that the step ``description`` starts (a no-op without a listener)."""
    listener = _listener.get()
    if listener is not None:
        listener(description)


@contextmanager
def listening(listener: Callable[[str], None]) -> Iterator[None]:
    """Send the steps announced inside the block to ``listener(description)``."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


@contextmanager
def step_bar(description: str, enabled: bool) -> Iterator[None]:
    """A progress bar (tqdm, on stderr) that counts the steps announced inside the block and
    shows the running one with the time elapsed; steps go on to an outer listener too. Where
    not ``enabled`` nothing is drawn and the steps reach the outer listener alone."""
    if not enabled:
        yield
        return
    from tqdm.auto import tqdm

    outer = _listener.get()
    with tqdm(desc=description, unit="step", file=sys.stderr) as bar:

        def show(text: str) -> None:
            bar.update(1)
            bar.set_postfix_str(text)
            if outer is not None:
                outer(text)

        with listening(show):
            yield
