"""The loops of a trimmed fit, written once for every engine.

* :func:`alternate`: fit on the kept rows, keep the rows the fit explains best, refit, until the
  kept rows repeat (the alternating minimization of a trimmed objective: each step lowers it,
  so a deterministic refit ends at a fixed point or a cycle at constant objective).
* :func:`flag_rounds`: flag the rows a rule calls implausible under the fit, refit without
  them, until the flags repeat (the reweighting step of least trimmed squares, confident
  learning's rounds).
* :func:`drop_implausible`: drop the kept rows a rule calls implausible under the fit, refit,
  until none is left.

A loop knows nothing of the fit: a ``State`` is whatever the engine carries from one refit to
the next (coefficients and their evaluation in memory, the same from passes over chunks on
Dask, a fitted estimator and its row weights in the meta-estimators), and the engine passes the
functions that refit a state and read its kept rows.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

import numpy as np

from .._fractions import n_kept
from .rules import MAX_EPSILON, MAX_ROUNDS

State = TypeVar("State")


@dataclass(frozen=True)
class Alternation(Generic[State]):
    """Where :func:`alternate` ended.

    Attributes
    ----------
    state : State
        The last refit.
    n_rounds : int
        Refits done.
    ended : {"repeat", "cycle", "stop", "max_rounds"}
        The rows (kept or flagged) equal the previous round's (a fixed point) or an earlier
        round's (a cycle), the caller's rule said so, or ``max_rounds`` rounds ran.
    """

    state: State
    n_rounds: int
    ended: Literal["repeat", "cycle", "stop", "max_rounds"]

    @property
    def converged(self) -> bool:
        """Whether the loop ended before ``max_rounds`` refits."""
        return self.ended != "max_rounds"


def alternate(
    refit: Callable[[State], State],
    kept: Callable[[State], Hashable],
    state: State,
    max_rounds: int,
    *,
    repeat: Literal["any", "last"] = "any",
    stop: Callable[[State], bool] | None = None,
) -> Alternation[State]:
    """Refit on the kept rows until they repeat.

    Parameters
    ----------
    refit : callable
        ``refit(state)``: the fit on the rows ``state`` keeps, with the rows it keeps in turn.
    kept : callable
        ``kept(state)``: a key of the rows ``state`` keeps (equal sets, equal keys), e.g. the
        bytes of the mask.
    state : State
        The start: the rows to fit first (and whatever the refits start from).
    max_rounds : int
        The most refits.
    repeat : {"any", "last"}, default="any"
        "any": stop when the kept rows equal those of any earlier state (a fixed point,
        ``"repeat"``, or a cycle at constant objective, ``"cycle"``: refits that minimize
        exactly cannot lower it further). "last": only when they equal the previous state's
        (a fixed point; for refits that depend on their start, where a set seen before can
        lead elsewhere).
    stop : callable, optional
        ``stop(state)`` after each refit that did not repeat: True ends the loop.

    Returns
    -------
    Alternation
    """
    previous = kept(state)
    seen = {previous}
    for rounds in range(1, max_rounds + 1):
        state = refit(state)
        key = kept(state)
        if key == previous:
            return Alternation(state, rounds, "repeat")
        if repeat == "any" and key in seen:
            return Alternation(state, rounds, "cycle")
        if stop is not None and stop(state):
            return Alternation(state, rounds, "stop")
        previous = key
        seen.add(key)
    return Alternation(state, max_rounds, "max_rounds")


def flag_rounds(
    flags: Callable[[State], np.ndarray],
    refit: Callable[[np.ndarray, State], State],
    state: State,
    max_rounds: int,
    *,
    first: np.ndarray | None = None,
    settled: Callable[[np.ndarray, np.ndarray], bool] | None = None,
) -> Alternation[State]:
    """Flag rows under the fit, refit without them, until the flags repeat.

    Parameters
    ----------
    flags : callable
        ``flags(state)``: a boolean mask of the rows the rule flags under the fit ``state``.
    refit : callable
        ``refit(flagged, state)``: the fit without the rows of ``flagged``.
    state : State
        The fit the first round flags under.
    max_rounds : int
        The most refits.
    first : ndarray of bool, optional
        The flags ``state`` was fitted without, where it was (then first round's flags equal to
        them end the rounds as a repeat).
    settled : callable, optional
        ``settled(previous, flagged)``, from the second round on (``previous``: the previous
        round's flags): True ends the rounds (``"stop"``) before the refit, e.g. where the
        flags moved by only a few rows.

    Returns
    -------
    Alternation
        ``state`` is the fit without the last flags that were refitted (the previous round's
        where the rounds ended on a repeat, a cycle or ``settled``); ``n_rounds`` counts the
        refits.
    """
    previous, seen = None, set()
    for rounds in range(max_rounds):
        flagged = flags(state)
        key = flagged.tobytes()
        before = first if previous is None else previous
        if before is not None and np.array_equal(flagged, before):
            return Alternation(state, rounds, "repeat")
        if key in seen:
            return Alternation(state, rounds, "cycle")
        if previous is not None and settled is not None and settled(previous, flagged):
            return Alternation(state, rounds, "stop")
        previous = flagged
        seen.add(key)
        state = refit(flagged, state)
    return Alternation(state, max_rounds, "max_rounds")


def drop_implausible(
    mask: np.ndarray,
    state: State,
    implausible: Callable[[np.ndarray, State], np.ndarray],
    refit: Callable[[np.ndarray, State], State],
) -> State:
    """Drop the kept rows ``implausible(mask, state)`` names, refit, repeat (the Subquantile
    estimators' refine="reject").

    Stops when no kept row is implausible, when dropping them would keep fewer rows than a
    trim of ``MAX_EPSILON`` keeps, or after ``MAX_ROUNDS`` rounds. ``state`` is the backend's
    fit (in memory: coefficients and evaluation; on Dask: the same from passes over the
    chunks); ``refit(mask, state)`` fits the rows of ``mask`` from it.
    """
    minimum_kept = n_kept(mask.shape[0], MAX_EPSILON)
    for _ in range(MAX_ROUNDS):
        dropped = mask & implausible(mask, state)
        if not dropped.any() or mask.sum() - dropped.sum() < minimum_kept:
            break
        mask = mask & ~dropped
        state = refit(mask, state)
    return state
