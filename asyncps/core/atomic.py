"""Write a file atomically: to a temporary file beside it, flushed to disk, then renamed.

A crash (or a SIGKILL) during a save leaves the previous file intact, never a half-written one.
The file gets the mode `open(path, "w")` would give it, 0o666 less the umask (-rw-r--r-- under
the usual umask 022), so that it can be shared; tempfile.mkstemp would make it -rw------- .
"""
import os
from pathlib import Path

ATTEMPTS = 100          # random names tried for the temporary file before giving up


def write_atomically(path, write):
    """`write(f)` fills a binary file object; it then replaces `path` in one rename."""
    path = Path(path)
    fd, tmp = _create_beside(path)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _create_beside(path):
    """A new, empty file in `path`'s folder under an unused random name, open for writing. The
    mode 0o666 asks for what the umask allows: the system applies the umask itself, so it is
    never read (reading it means setting it, for every thread of the process)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(ATTEMPTS):
        tmp = path.with_name(f"{path.name}.{os.urandom(4).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no unused temporary name for {path} after {ATTEMPTS} tries")
