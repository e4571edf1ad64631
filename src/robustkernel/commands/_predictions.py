"""A model's predictions on a table as one frame: row numbers, predictions, a probability column
per class for classifiers and, with a coverage, the prediction interval's bounds (``fit``'s
``predictions.csv``, ``predict``'s output). Imports pandas when it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._common import DataError

if TYPE_CHECKING:
    import pandas as pd

    from ._tabular import Table


def prediction_frame(model: Any, table: Table, coverage: float | None = None) -> pd.DataFrame:
    """Row numbers, predictions and, for classifiers, one ``probability_<class>`` column each;
    with ``coverage``, the prediction interval's ``lower`` and ``upper`` bounds."""
    import pandas as pd

    frame = pd.DataFrame({"row": table.rows, "predicted": model.predict(table.X)})
    if hasattr(model, "predict_proba"):
        for label, column in zip(model.classes_, model.predict_proba(table.X).T, strict=True):
            frame[f"probability_{label}"] = column
    if coverage is not None:
        bounds = prediction_intervals(model, table.X, coverage)
        frame["lower"], frame["upper"] = bounds[:, 0], bounds[:, 1]
    return frame


def prediction_intervals(model: Any, X: Any, coverage: float) -> Any:
    """``predict_interval(X, coverage)`` of ``model`` or of a pipeline's last step (after the
    steps before it); :class:`DataError` where the model gives none (a classifier, a model
    fitted before intervals existed, one whose fit refused them)."""
    steps = getattr(model, "steps", None)
    final = steps[-1][1] if steps else model
    if not hasattr(final, "predict_interval"):
        raise DataError(
            f"--coverage: the model ({type(final).__name__}) gives no prediction intervals; "
            "they come with the regressors (fit --task regression)"
        )
    if steps:
        X = model[:-1].transform(X)
    try:
        return final.predict_interval(X, coverage)
    except ValueError as error:
        raise DataError(f"--coverage: {error}") from error
