"""Write one output file atomically, with errors that name the user's path.

Reports and exports are single files. Each is written to a short hidden temp name in the
destination's folder and renamed over the destination only when complete, so an interrupted
write (Ctrl-C, a full disk) leaves the previous file or nothing, never half a file. The temp
name is short on purpose: a destination name near the file-system limit must fail because of
its own length, and the message must say so about the user's path, not about a temp name.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from vmtwin._interrupt import check_interrupt
from vmtwin.exceptions import OutputError

__all__ = ["atomic_output", "output_error"]


def output_error(what: str, path: Path, exc: OSError) -> OutputError:
    """``cannot write <what> <path>: <reason>`` for an OS error on an output path."""
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ENAMETOOLONG:
        reason += f" ({len(path.name)} characters; most file systems allow 255)"
    return OutputError(f"cannot write {what} {path}: {reason}")


@contextmanager
def atomic_output(path: str | os.PathLike[str], what: str) -> Iterator[Path]:
    """Yield a temp path to write; on success rename it to ``path``.

    Parameters
    ----------
    path : path-like
        The file to create or replace.
    what : str
        What the file is, for messages (``"report"``, ``"esxtop CSV"``).

    Yields
    ------
    pathlib.Path
        A fresh file in ``path``'s folder to write the whole output to.

    Raises
    ------
    OutputError
        ``path`` is a folder, its folder cannot be created or written, or the name is too long;
        the message names ``path``. The temp file is removed on any failure or interrupt.
    """
    out = Path(path)
    try:
        if out.is_dir():
            raise OutputError(f"cannot write {what} {out}: it is a folder; give a file name, "
                              f"e.g. {out / ('report.html' if what == 'report' else 'out.csv')}")
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=out.parent, prefix=".vmtwin-", suffix=".tmp")
    except OSError as exc:
        raise output_error(what, out, exc) from None
    os.close(fd)
    tmp = Path(tmp_name)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; the result gets a plain file's mode
    try:
        yield tmp
        check_interrupt()  # never renamed into place after Ctrl-C, even one library code swallowed
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise output_error(what, out, exc) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
