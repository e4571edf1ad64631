"""Atomic writes: a file or folder appears complete at its destination, or not at all.

Everything the library writes for the user (model files, cached downloads, run caches, the
command line's outputs) goes through these helpers: the content is written next to the
destination under a hidden temporary name and moved onto it with :func:`os.replace` (a rename on
the same file system) only when writing succeeded; on any error, Ctrl-C included, the temporary
is removed and the destination is left as it was.

:func:`tempfile.mkstemp` and :func:`tempfile.mkdtemp` create private temporaries (0600 / 0700);
before the rename they get the permissions a plain :func:`open` or :func:`os.mkdir` would have
given (0666 / 0777 less the process umask), so the outputs follow the user's umask.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

FILE_MODE = 0o666
FOLDER_MODE = 0o777
# What renaming a folder onto a destination that appeared meanwhile raises.
_TAKEN = {errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR}


class DestinationExistsError(FileExistsError):
    """The destination folder was created (non-empty) by someone else while we were writing."""


def current_umask() -> int:
    """The process umask, read without changing it where the system allows (Linux).

    Elsewhere it is read with :func:`os.umask` and set back at once (briefly changed, so not
    safe against other threads creating files at that instant).
    """
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _apply_umask(path: Path, mode: int) -> None:
    os.chmod(path, mode & ~current_umask())


@contextmanager
def atomic_path(destination: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary file path next to ``destination``, moved onto it if the block succeeds.

    The parent folder must exist. The temporary file exists (empty) when the block starts. The
    file written gets mode 0666 less the umask (as :func:`open` would give it).
    """
    destination = Path(destination)
    handle, name = tempfile.mkstemp(
        dir=destination.parent, prefix=f".{destination.name}.", suffix=".tmp"
    )
    os.close(handle)
    temporary = Path(name)
    try:
        yield temporary
        _apply_umask(temporary, FILE_MODE)
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
    The folder gets mode 0777 less the umask (as :func:`os.mkdir` would give it).

    Raises
    ------
    DestinationExistsError
        ``destination`` became a file or a non-empty folder while the block ran (another process
        wrote it); the temporary folder is removed and ``destination`` is left alone.
    """
    destination = Path(destination)
    temporary = Path(tempfile.mkdtemp(dir=destination.parent, prefix=f".{destination.name}."))
    try:
        yield temporary
        _apply_umask(temporary, FOLDER_MODE)
        try:
            if destination.is_dir():
                destination.rmdir()
            temporary.rename(destination)
        except OSError as error:
            if error.errno not in _TAKEN:
                raise
            raise DestinationExistsError(
                errno.EEXIST, "already exists", os.fspath(destination)
            ) from error
    finally:
        if temporary.exists():
            shutil.rmtree(temporary, ignore_errors=True)
