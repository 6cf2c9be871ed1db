"""``export -o FILE``: nothing is overwritten by surprise.

The summary is refused a path that is the transcript it is made from (by any name: the same
device and inode, so a hard link or another spelling of the path is caught too), a symbolic link
(never followed: it may point anywhere), and an existing file unless ``--force``. The checks are
made before the summary is built and again on the open file itself, so a file that appears or
is swapped meanwhile is not overwritten either.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path


def refuse(path: Path, source: Path, force: bool) -> None:
    """Raise a one-line UsageError when ``path`` may not be written (see the module)."""
    from wizard.errors import UsageError

    try:
        found = path.lstat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError.os_said("error.cannot_write", exc, path=path) from None
    if stat.S_ISLNK(found.st_mode):
        raise UsageError.said("export.symlink", path=path)
    _refuse_source(found, path, source)
    if not force:
        raise UsageError.said("export.exists", path=path)


def write(path: Path, text: str, source: Path, force: bool) -> None:
    """Write ``text`` to ``path``: a new file, or with ``force`` an existing regular one that is
    not ``source``; a symbolic link is never followed (O_NOFOLLOW)."""
    from wizard.errors import UsageError

    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (0 if force else os.O_EXCL)
    try:
        fd = os.open(path, flags, 0o666)
    except FileExistsError:
        raise UsageError.said("export.exists", path=path) from None
    except OSError:
        refuse(path, source, force)  # a symbolic link put there meanwhile (ELOOP): said as such
        raise
    try:
        found = os.fstat(fd)
        _refuse_source(found, path, source)
        if stat.S_ISREG(found.st_mode):  # only now: the file is known not to be the transcript
            os.ftruncate(fd, 0)
        data = text.encode("utf-8")
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)


def _refuse_source(found: os.stat_result, path: Path, source: Path) -> None:
    from wizard.errors import UsageError

    with contextlib.suppress(OSError):
        mine = source.stat()
        if (found.st_dev, found.st_ino) == (mine.st_dev, mine.st_ino):
            raise UsageError.said("export.same_file", path=path)
