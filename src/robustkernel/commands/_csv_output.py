"""Every CSV the command line writes, with spreadsheet formula injection defused.

A spreadsheet opening a CSV runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a
formula (tab and carriage return can start one too), so a class label or a column name such as
``=HYPERLINK(...)`` taken from the input would become a live formula in ``predictions.csv``. As
OWASP recommends, :func:`write_csv` prefixes such text cells and column names with a single quote
``'``, which spreadsheets show as text. Numbers are never touched: numeric columns are written as
they are, and a text cell that is a plain decimal number (``-1.5``, ``+2e3``) cannot be a formula
and stays as it is.
"""

from __future__ import annotations

import os
import re
from typing import Any

import pandas as pd
from pandas.api.types import is_numeric_dtype

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def escape_formula(value: Any) -> Any:
    """``value`` with a leading ``'`` if it is text a spreadsheet would run as a formula.

    Parameters
    ----------
    value : object
        A cell or a column name.

    Returns
    -------
    value : object
        ``"'" + value`` for a string starting with ``=``, ``+``, ``-``, ``@``, tab or carriage
        return that is not a plain decimal number; ``value`` itself otherwise (numbers and other
        non-strings included).

    Examples
    --------
    >>> escape_formula("=1+1"), escape_formula("-1.5"), escape_formula(-1.5), escape_formula("a")
    ("'=1+1", '-1.5', -1.5, 'a')
    """
    if (
        isinstance(value, str)
        and value.startswith(FORMULA_PREFIXES)
        and _PLAIN_NUMBER.fullmatch(value) is None
    ):
        return "'" + value
    return value


def escape_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` with :func:`escape_formula` applied to its text cells and names.

    Parameters
    ----------
    frame : DataFrame
        The table to write.

    Returns
    -------
    escaped : DataFrame
        Same shape and order; numeric and boolean columns unchanged.
    """
    columns = [
        column if is_numeric_dtype(column.dtype) else column.astype(object).map(escape_formula)
        for _, column in frame.items()
    ]
    escaped = pd.concat(columns, axis=1, ignore_index=True) if columns else frame.copy()
    escaped.columns = [escape_formula(name) for name in frame.columns]
    return escaped


def write_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write ``frame`` (without its index) to ``path``, formula prefixes escaped.

    Parameters
    ----------
    frame : DataFrame
        The table to write.
    path : str or path-like
        Destination file.
    """
    escape_formulas(frame).to_csv(path, index=False)
