"""Write a file atomically: to a temporary file beside it, flushed to disk, then renamed.

A crash (or a SIGKILL) during a save leaves the previous file intact, never a half-written one.
"""
import os
import tempfile
from pathlib import Path


def write_atomically(path, write):
    """`write(f)` fills a binary file object; it then replaces `path` in one rename."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
