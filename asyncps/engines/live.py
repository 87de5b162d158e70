"""A live run: the ordinary run in the background, and a handle to watch and change it.

    live = aps.train(problem, workers=4, steps=2000, live=True)    # returns at once
    live.state                   # {"version": 37, "pushes": 37, "running": True, "staleness": [...], ...}
    live.slow(3, 0.05)           # worker 3 sleeps 0.05 s more per gradient, from now on (0: not)
    live.set_lr(0.01)            # every later update uses this lr
    live.pause(); live.resume()  # every worker waits before handing in its next gradient
    live.kill(1)                 # worker 1 stops for good, as if its process died
    live.stop()                  # end the run now
    run = live.result()          # the ordinary Run (its error, if the run failed)

The run is the one `aps.train` would have made: the same engine, server and trace. Each change
is a Control event in that trace (what changed, when), so a replay shows it too. Killing a
worker records the Lost event a dead process gets: async carries on without it, sync and ssp
stop with their error. `with aps.train(..., live=True) as live:` stops the run when the block
ends, also on Ctrl-C; `live.stop()` is safe twice and after the end, and returns once no thread
of the run is left. Ctrl-C while waiting in `live.result()` stops the run too.

`state` never blocks a worker: it reads the server's version and lr and the events added to the
trace since the last call. The engine obeys the changes (engines/controls.py, and each engine's
Controls beside its workers); this module checks them and keeps the thread that runs the engine.
"""
import atexit
import math
import threading
import weakref

from ..core import checks
from ..core.config import MAX_SECONDS

STOPPED = "stopped by live.stop()"
_views = []           # at most one: make(live, fps=, window=) -> a widget (asyncps/__init__.py)
_running = weakref.WeakSet()     # every LiveRun not yet ended, stopped when the interpreter exits


@atexit.register
def _stop_every_run():
    """The interpreter is exiting (a kernel shutting down or restarting): stop every live run, so
    its worker processes are gone before Python is (the run's thread is a daemon: it does not
    hold the exit up by itself)."""
    for live in list(_running):
        live.stop()


def register_view(make):
    """Let `make(live, fps=, window=)` (-> a widget) draw live runs; the package registers the
    widgets layer's LiveView (an engine never imports a widget). None: nobody."""
    if make is not None and not callable(make):
        raise TypeError(f"make={make!r:.60} is not allowed: make must be a function "
                        f"make(live, fps=, window=) -> a widget, or None")
    _views[:] = [] if make is None else [make]


class LiveRun:
    """A run going on in the background (`aps.train(..., live=True)`), and its controls."""

    def __init__(self, server, controls, run):
        """`run()` runs the engine to the end and returns the Run; it starts here, in a thread."""
        self._server, self._controls = server, controls
        self._run, self._error = None, None
        self._seen, self._last, self._pushes, self._lost = 0, None, 0, []
        self._staleness = [None] * server.workers       # of each worker's latest push
        self._reading = threading.Lock()                 # two callers of `state` at once
        self._ended = threading.Event()                  # set when run() has returned or raised
        self._thread = threading.Thread(target=self._main, args=(run,), name="asyncps-live",
                                        daemon=True)
        _running.add(self)
        self._thread.start()

    def _main(self, run):
        try:
            self._run = run()
        except BaseException as err:                    # noqa: BLE001 - result() raises it
            self._error = err
        finally:
            _running.discard(self)
            self._ended.set()

    # -- watching --------------------------------------------------------------------------
    @property
    def running(self):
        # not Thread.is_alive(): on Python 3.11 a join() interrupted by Ctrl-C marks the thread
        # stopped while it still runs (cpython's bpo-45274 fix), and stop() would then do nothing
        return not self._ended.is_set()

    @property
    def trace(self):
        """The run's trace, growing while it runs (read it; the workers append to it)."""
        return self._server.trace

    def view(self, fps=10, window=40):
        """A widget that shows the run as it goes and changes it (asyncps.widgets.LiveView): at
        most `fps` redraws a second, the Timeline of the newest `window` events."""
        if not _views:
            raise RuntimeError("no live view is registered (asyncps registers its LiveView when "
                               "imported: `import asyncps`)")
        return _views[0](self, fps=fps, window=window)

    def _repr_mimebundle_(self, **kwargs):
        """Jupyter shows the live view; where it cannot be made, the plain repr."""
        try:
            view = self.view()
        except ImportError:                             # no ipywidgets: the repr
            return None
        bundle = view._repr_mimebundle_(**kwargs) or {}
        bundle["text/plain"] = repr(self)
        return bundle

    @property
    def state(self):
        """Where the run is now: version, steps, pushes, running, paused, lr, the loss of the latest
        scored version, and per worker the staleness of its latest push (None before its first),
        its slowdown (seconds per gradient) and which workers were lost; time on the run's clock;
        `waiting`: what the run waits for before it starts (a classroom's room.start()), or None."""
        server, trace = self._server, self._server.trace
        with self._reading:
            for e in self._new_events(trace):
                if e.kind == "push":
                    self._pushes += 1
                    self._staleness[e.worker] = e.staleness
                elif e.kind == "lost":
                    self._lost.append(e.worker)
            staleness, lost = list(self._staleness), list(self._lost)
        beyond = sum(trace.beyond.get("pushes", {}).values())          # past trace_limit
        return {"version": server.version, "steps": server.steps, "pushes": self._pushes + beyond,
                "running": self.running, "paused": self._controls.paused, "lr": server.lr,
                "loss": _latest_loss(trace.losses), "staleness": staleness,
                "slowdown": list(self._controls.slowdown), "lost": lost,
                "time": self._controls.clock(), "waiting": getattr(self._controls, "waiting", None)}

    def _new_events(self, trace):
        """The events added since the last call, each once. Engines append them, except the
        processes engine, which inserts a worker's own pulls where their time puts them: that only
        moves the last event seen to the right, so it is looked for from where it was (by value:
        at the end of an rpc run the trace rank 0 sent as news is replaced by its own copy)."""
        start = max(self._seen - 1, 0)
        new = trace.events[start:]                       # one slice: atomic while the run appends
        if self._last is not None:
            at = next(i for i, e in enumerate(new) if e == self._last)
            start, new = start + at + 1, new[at + 1:]
        if new:
            self._seen, self._last = start + len(new), new[-1]
        return new

    # -- changing ----------------------------------------------------------------------------
    def slow(self, worker, seconds):
        """Worker `worker` sleeps `seconds` more per gradient from now on (0: no more)."""
        worker = self._worker(worker)
        seconds = checks.real("seconds", seconds, minimum=0.0, below=MAX_SECONDS)
        self._apply(self._controls.slow(worker, seconds), f"slow({worker}, {seconds:g})")

    def set_lr(self, lr):
        """Every update from now on uses this lr (trace.meta["lr"] keeps the starting one)."""
        lr = checks.real("lr", lr, positive=True)
        self._apply(self._controls.set_lr(lr), f"set_lr({lr:g})")

    def pause(self):
        """Every worker waits before handing in its next gradient (its Compute spans the pause);
        the wait never counts against the run's `timeout`."""
        self._apply(self._controls.pause(), "pause()")

    def resume(self):
        self._apply(self._controls.resume(), "resume()")

    def kill(self, worker):
        """Worker `worker` stops for good at its next step, as if its process died (a Lost event):
        async goes on without it; sync and ssp stop with their error (live.result() raises it)."""
        worker = self._worker(worker)
        if worker not in self._controls.killed:
            self._apply(self._controls.kill(worker), f"kill({worker})")

    def stop(self):
        """End the run now, with the message "stopped by live.stop()" (not as diverged), and wait
        until its threads are gone. Safe to call twice, and after the run ended by itself."""
        if self._ended.is_set():
            return                                      # ended (or failed) already: nothing to stop
        self._controls.stop(STOPPED)
        if self._thread is not threading.current_thread():
            self._ended.wait()
            self._thread.join()

    def _worker(self, worker):
        return checks.integer("worker", worker, minimum=0, maximum=self._server.workers - 1)

    def _apply(self, changed, call):
        if not changed:
            raise RuntimeError(f"live.{call} came too late: the run has ended (at v"
                               f"{self._server.version}); nothing was changed. live.result() is the Run")

    # -- the end -----------------------------------------------------------------------------
    def result(self, timeout=None):
        """Wait for the run to end (at most `timeout` seconds) and return its Run; the run's error
        if it failed. Ctrl-C while waiting stops the run."""
        if timeout is not None:
            timeout = checks.real("timeout", timeout, minimum=0.0)
        try:
            self._ended.wait(timeout)
        except BaseException:                           # Ctrl-C / kernel interrupt
            self.stop()
            raise
        if not self._ended.is_set():
            raise TimeoutError(f"the run is still going after timeout={timeout:g} s (at v"
                               f"{self._server.version} of {self._server.steps}); call live.result() "
                               f"again, or live.stop() to end it")
        if self._error is not None:
            raise self._error
        return self._run

    def __enter__(self):
        return self

    def __exit__(self, *error):
        self.stop()
        return False

    def __repr__(self):
        s = self.state
        status = ("paused" if s["paused"] else "running") if s["running"] else "ended"
        return (f"LiveRun({status}, v{s['version']} of {s['steps']}, pushes={s['pushes']}, "
                f"lr={s['lr']:g})")


def _latest_loss(losses):
    """The loss of the latest scored version (loss_every leaves NaN between), or None."""
    for value in reversed(losses):
        if not math.isnan(value):
            return value
    return None
