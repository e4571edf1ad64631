"""The model file that ``robustkernel fit`` and ``learn-metric`` write: ``model.skops`` (skops'
format, safe to load) where skops is installed, else ``model.joblib``, a pickle that
``robustkernel predict`` loads only with ``--trust-pickle``; and the line their output and
report give on it (imported by the runs of those commands, not by their parsers)."""

from __future__ import annotations

from ..persistence import skops_available

SKOPS_MODEL_FILE = "model.skops"
PICKLE_MODEL_FILE = "model.joblib"
PICKLE_NOTE = (
    "skops is not installed, so the model was saved as model.joblib, a pickle: 'robustkernel "
    "predict' loads it only with --trust-pickle (pip install 'robustkernel[skops]' and refit "
    "for the safe model.skops)"
)


def model_file() -> str:
    """The model file name: ``model.skops`` when skops is installed, else ``model.joblib``."""
    return SKOPS_MODEL_FILE if skops_available() else PICKLE_MODEL_FILE


def model_file_description(name: str) -> str:
    """The report's line on the model file ``name``: its format and whether it loads safely."""
    if name == SKOPS_MODEL_FILE:
        return f"{name} (skops format, safe to load)"
    return f"{name} ({PICKLE_NOTE})"
