"""What the entry points (`simulate`, `train`) share: their signature is RunConfig's fields, and
a progress bar on long runs.

`help(aps.simulate)` and Jupyter's Shift-Tab then show every argument and its default, and the
list is written once, in asyncps/core/config.py. `progress=` is a display option, not part of the
run: it is an argument of the entry points (like train's `resume`), never a RunConfig field, and
never in `trace.meta`. So is train's `live=` (how the caller watches the run, engines/live.py).
"""
import inspect
import os
import time
from dataclasses import fields

from ..core.config import RunConfig, argument_names


def signature(entry, before=(), after=()):
    """`inspect.Signature` for an entry point: what help() and Jupyter's Shift-Tab show."""
    defaults = {f.name: f.default for f in fields(RunConfig)}
    defaults["engine"] = "threads"
    params = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in before]
    params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=defaults[name])
               for name in argument_names(entry)]
    params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
               for name, default in after]
    return inspect.Signature(params)


class Progress:
    """The bar of a run: tqdm's notebook-aware bar (`tqdm.auto`), counting the server's versions.

    progress=None: a bar only once the run has lasted 2 s, removed at the end (the environment
    variable TQDM_DISABLE=1 turns it off). It is made then, not before: a notebook loop of many
    short runs creates no widget at all. True: a bar at once, kept, whatever the environment says;
    False: never. An engine calls `progress(version)` as often as it likes (it reads the version,
    it never waits for it); the bar is redrawn at most every `every` seconds.
    Used as `with Progress(progress, server, "threads") as bar: ... bar(server.version)`.
    """

    DELAY = 2.0

    def __init__(self, progress, server, description, every=0.2):
        if progress not in (None, True, False):
            raise TypeError(f"progress={progress!r:.60} is not allowed: progress must be None (a bar "
                            f"when the run takes over 2 s), True (always a bar) or False (none)")
        self.server, self.description, self.every, self.bar = server, description, every, None
        self.wanted = progress is not False and server.steps is not None   # local steps: no versions
        if progress is None and os.environ.get("TQDM_DISABLE", "").lower() in ("1", "true", "yes"):
            self.wanted = False        # read here: tqdm's notebook bar ignores TQDM_DISABLE itself
        self.always = progress is True
        self.next = time.monotonic() + (0.0 if self.always else self.DELAY)
        if self.always:
            self._make()

    def _make(self):
        try:
            from tqdm.auto import tqdm
        except ImportError:
            if self.always:
                raise ImportError("progress=True needs tqdm: pip install tqdm") from None
            self.wanted = False
            return
        shown = {"disable": False, "leave": True} if self.always else {"leave": False}
        self.bar = tqdm(total=self.server.steps, initial=min(self.server.version, self.server.steps),
                        desc=self.description, unit="version", **shown)

    def __call__(self, version):
        """The server is at `version` (an engine's poll): redraw if `every` seconds have passed."""
        if not self.wanted:
            return
        now = time.monotonic()
        if now < self.next:
            return
        self.next = now + self.every
        if self.bar is None:
            self._make()
        if self.bar is not None:
            self.bar.update(min(version, self.bar.total) - self.bar.n)

    def __enter__(self):
        return self

    def __exit__(self, *error):
        if self.bar is not None:
            self.bar.update(min(self.server.version, self.bar.total) - self.bar.n)
            self.bar.close()
        return False
