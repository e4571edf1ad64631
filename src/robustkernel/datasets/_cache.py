"""Where data sets are cached, and how a missing file is downloaded and checked.

The cache directory is, in this order of precedence:

1. the ``data_home`` argument of a loader,
2. the environment variable ``ROBUSTKERNEL_DATA``,
3. ``$XDG_CACHE_HOME/robustkernel`` (``~/.cache/robustkernel`` when ``XDG_CACHE_HOME`` is unset).

A download reads the whole remote file into memory (the files are small), checks its sha256,
optionally converts it to the cached format and checks that too, and only then writes the cache
file atomically (a temporary file in the same directory, then :func:`os.replace`), so an
interrupted or corrupted download never leaves a partial file behind.
"""

from __future__ import annotations

import hashlib
import os
import urllib.request
from collections.abc import Callable
from pathlib import Path

from .._atomic import atomic_write

DATA_ENV_VAR = "ROBUSTKERNEL_DATA"
_TIMEOUT_S = 60.0


class ChecksumError(OSError):
    """A downloaded or converted file does not have the expected sha256."""


def get_data_home(data_home: str | os.PathLike | None = None) -> Path:
    """Return the directory that holds the cached data set files.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Explicit directory. When None, the environment variable ``ROBUSTKERNEL_DATA`` is used if
        set and non-empty, else ``$XDG_CACHE_HOME/robustkernel`` (``~/.cache/robustkernel``).

    Returns
    -------
    path : pathlib.Path
        The directory, with ``~`` expanded. It is not created here (a read-only shared folder
        must work); ``fetch_file`` creates it when it downloads.

    Examples
    --------
    >>> from pathlib import Path
    >>> from robustkernel.datasets import get_data_home, load_dataset
    >>> get_data_home("~/robustkernel_data") == Path.home() / "robustkernel_data"
    True

    The loaders read and fill that folder:

    >>> X, y = load_dataset("concrete", data_home="~/robustkernel_data")  # doctest: +SKIP
    """
    if data_home is None:
        data_home = os.environ.get(DATA_ENV_VAR) or None
    if data_home is None:
        cache_root = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
        data_home = Path(cache_root) / "robustkernel"
    return Path(data_home).expanduser()


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 digest of ``data``.

    Parameters
    ----------
    data : bytes
        The content.

    Returns
    -------
    digest : str
        64 lowercase hex characters.
    """
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 digest of the file at ``path``, read in chunks.

    Parameters
    ----------
    path : str or path-like
        The file.

    Returns
    -------
    digest : str
        64 lowercase hex characters.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _check_digest(data: bytes, expected: str, what: str) -> None:
    actual = sha256_bytes(data)
    if actual != expected.lower():
        raise ChecksumError(
            f"sha256 mismatch for {what}: expected {expected}, got {actual}. The source may have "
            "changed or the transfer was corrupted; nothing was written to the cache."
        )


def fetch_file(
    url: str,
    sha256: str,
    path: str | os.PathLike,
    *,
    convert: Callable[[bytes], bytes] | None = None,
    converted_sha256: str | None = None,
) -> Path:
    """Download ``url``, verify it, optionally convert it, and write it atomically to ``path``.

    Parameters
    ----------
    url : str
        Any URL :func:`urllib.request.urlopen` understands (``https://``, ``file://``).
    sha256 : str
        Expected sha256 of the downloaded bytes.
    path : str or path-like
        Destination file; its directory is created if needed.
    convert : callable, default=None
        Maps the downloaded bytes to the bytes to store (e.g. add a header, drop an id column).
    converted_sha256 : str, default=None
        Expected sha256 of the converted bytes (end-to-end check of the conversion).

    Returns
    -------
    path : pathlib.Path
        The written file.

    Raises
    ------
    ChecksumError
        If the download or the converted content has an unexpected sha256. Nothing is written.
    OSError
        If the URL cannot be read (``urllib.error.URLError`` is an ``OSError``).
    """
    path = Path(path)
    with urllib.request.urlopen(url, timeout=_TIMEOUT_S) as response:
        data = response.read()
    _check_digest(data, sha256, f"download {url}")
    if convert is not None:
        data = convert(data)
        if converted_sha256 is not None:
            _check_digest(data, converted_sha256, f"{path.name} converted from {url}")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data)
    return path
