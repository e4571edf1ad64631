"""Atomic writes: a file or folder appears complete at its destination, or not at all.

Everything the library writes for the user (model files, cached downloads, run caches, the
command line's outputs) goes through these helpers: the content is written next to the
destination under a hidden temporary name and moved onto it with :func:`os.replace` (a rename on
the same file system) only when writing succeeded; on any error, Ctrl-C included, the temporary
is removed and the destination is left as it was.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(destination: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary file path next to ``destination``, moved onto it if the block succeeds.

    The parent folder must exist. The temporary file exists (empty) when the block starts.
    """
    destination = Path(destination)
    handle, name = tempfile.mkstemp(
        dir=destination.parent, prefix=f".{destination.name}.", suffix=".tmp"
    )
    os.close(handle)
    temporary = Path(name)
    try:
        yield temporary
        os.replace(temporary, destination)
    finally:
        temporary.unlink(missing_ok=True)


def atomic_write(destination: str | os.PathLike[str], data: bytes | str) -> Path:
    """Write ``data`` (bytes, or text as UTF-8) to ``destination`` atomically; return its path."""
    destination = Path(destination)
    with atomic_path(destination) as temporary:
        if isinstance(data, str):
            temporary.write_text(data, encoding="utf-8")
        else:
            temporary.write_bytes(data)
    return destination


@contextmanager
def atomic_folder(destination: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary folder next to ``destination``, renamed to it if the block succeeds.

    ``destination`` must not exist or be an empty folder (it is replaced); its parent must exist.
    """
    destination = Path(destination)
    temporary = Path(tempfile.mkdtemp(dir=destination.parent, prefix=f".{destination.name}."))
    try:
        yield temporary
        if destination.exists():
            destination.rmdir()
        temporary.rename(destination)
    finally:
        if temporary.exists():
            shutil.rmtree(temporary)
