"""LiveView: a live run (`aps.train(..., live=True)`) watched and changed in a notebook.

    live = aps.train(problem, workers=4, steps=100_000, live=True)
    live                          # in Jupyter: shows live.view(), this widget
    view = aps.widgets.LiveView(live, fps=10, window=40)

The picture is render_live.live_svg: the Timeline of the newest `window` events, the server's
version, the loss (and accuracy, where scored) and the staleness histogram. A thread of its own
redraws it at most `fps` times a second, and only when something changed; it reads the trace with
one slice per list and the state through `live.state`, never under the server's lock, so no worker
waits for it. When the run ends it draws once more (how it ended, a failed run's error too) and
stops, and the controls are disabled.

The controls call the LiveRun's own methods: each worker's slowdown (`live.slow`), the lr
(`live.set_lr`), pause/resume, stop and kill worker k. They show and name the workers as the lanes
do: in a classroom, only the seats students took, each by its student (followed as they join).
What a control cannot do (too late: the run has ended) is said in the message line, not raised
into the notebook. They also follow the run: `live.pause()` or `live.set_lr(0.01)` called from
code moves the toggle or the slider at the next tick, and that move calls nothing (the change is
already made, and recorded once).
"""
import math
import threading
import time
from html import escape

import ipywidgets as widgets

from ..core import checks
from ..engines.live import LiveRun
from . import render_live as rl
from .picture import img_html
from .summary import text_style
from .svg import INKS, TEXT
from .playground import LR_STEP, moved      # a browser's rounding of lr is no change
from .render_timeline import lane_name, lanes

MAX_FPS = 10
BUSY = 0.1            # drawing takes at most this share of the time: a costly picture is drawn
                      # less often, and the workers keep >= 90 % of their time (issue 17)
COLUMN, GAP = 356, 8  # the controls: two columns, each at least this wide (px)
SLOW_FORMAT = ".3f"   # seconds per gradient, to the millisecond (the slider's step)
SLOW_TITLE = "slowdown: extra seconds per gradient"


def slow_top(seconds):
    """The slowdown slider's end: 0.25 s, or twice the slowest worker's slowdown."""
    return max(0.25, 2 * seconds)


def lr_range(lr):
    """The lr slider's range, as powers of ten: from lr / 100 to lr * 10."""
    at = math.log10(lr)
    return at - 2, at + 1


def lr_format(low):
    """The lr readout for a slider from 10**low up: fixed decimals, enough for the smallest lr's
    first digit (".4f" from 0.0005: 0.003 reads 0.0030, 0.25 reads 0.2500). "f" reads the same in
    Python and in the browser (d3-format's "f" is JavaScript's toFixed): what Python formats is
    what the learner reads."""
    return f".{max(0, -math.floor(low))}f"


def following(state):
    """What of a LiveRun's state the controls show."""
    return {"paused": state["paused"], "lr": state["lr"], "slowdown": list(state["slowdown"])}


class LiveView(widgets.VBox):
    """The live picture of `live` and its controls; `redraws` counts the pictures drawn."""

    def __init__(self, live, fps=10, window=40, width=720):
        self._quit, self._thread = threading.Event(), None     # close() may come from __del__
        if not isinstance(live, LiveRun):
            raise checks.bad("live", live, "a LiveRun: aps.train(..., live=True)", TypeError)
        self.live = live
        self.fps = checks.real("fps", fps, positive=True)
        if self.fps > MAX_FPS:
            raise checks.bad("fps", fps, f"a number > 0 and <= {MAX_FPS} (redraws per second)")
        self.window = checks.integer("window", window, minimum=2, maximum=5000)
        self.width = checks.integer("width", width, minimum=360, maximum=4000)
        self.redraws, self.ended = 0, None
        self._tally, self._drawn = rl.StalenessTally(), None
        state = live.state
        self._known = following(state)                  # what the controls follow (_follow)
        self._lanes, self._names = self._seats(len(state["slowdown"]))  # as the lanes show them
        self.picture, self.message = widgets.HTML(), widgets.HTML()
        self.controls = self._make_controls(state)
        super().__init__([self._layout(), self.picture, self.message])
        self.add_class("asyncps-live-view")
        self._draw(state)
        self._thread = threading.Thread(target=self._loop, name="asyncps-live-view", daemon=True)
        self._thread.start()

    # -- the controls ------------------------------------------------------------------------
    def _make_controls(self, state):
        column = max(COLUMN, (self.width - GAP) // 2)
        style, wide = {"description_width": "130px"}, lambda: widgets.Layout(width=f"{column}px")
        slow = [widgets.FloatSlider(value=s, min=0.0, max=slow_top(s), step=0.001,
                                    readout_format=SLOW_FORMAT, description=self._names[k],
                                    continuous_update=False, tooltip="extra seconds per gradient",
                                    style=style, layout=wide())
                for k, s in enumerate(state["slowdown"])]
        for k, slider in enumerate(slow):
            slider.observe(lambda change, k=k: self._by_hand() and
                           self._do(self.live.slow, k, change["new"]), "value")
        low, high = lr_range(state["lr"])
        lr = widgets.FloatLogSlider(value=state["lr"], base=10, min=low, max=high, step=LR_STEP,
                                    readout_format=lr_format(low), description="lr",
                                    continuous_update=False, style=style, layout=wide())
        lr.observe(lambda change: self._by_hand() and moved(change) and
                   self._do(self.live.set_lr, change["new"]), "value")
        button = lambda: widgets.Layout(width="76px")                       # noqa: E731
        pause = widgets.ToggleButton(value=state["paused"], description="pause", icon="pause",
                                     tooltip="every worker waits before its next push; "
                                             "click again to resume", layout=button())
        pause.observe(lambda change: self._by_hand() and
                      self._do(self.live.pause if change["new"] else self.live.resume), "value")
        stop = widgets.Button(description="stop", icon="stop", layout=button(),  # "warning": 2.7:1
                              tooltip="end the run: every worker stops at its next step")
        stop.on_click(lambda _: self._do(self.live.stop))
        victim = widgets.Dropdown(options=self._victims(), value=(self._lanes or [None])[0],
                                  tooltip="the worker that kill stops",
                                  layout=widgets.Layout(width="104px"))
        kill = widgets.Button(description="kill", icon="times", button_style="danger",
                              tooltip="the chosen worker stops for good, as if its process died",
                              layout=button())
        kill.on_click(lambda _: self._say("no student has taken a seat yet: nobody to kill", error=True)
                      if victim.value is None else self._do(self.live.kill, victim.value))
        return {"slowdown": slow, "lr": lr, "pause": pause, "stop": stop, "worker": victim,
                "kill": kill}

    def _layout(self):
        """Two columns of a fixed width (half the picture's): they never squeeze a slider's
        readout; a narrow notebook puts the second under the first instead."""
        c = self.controls
        column = lambda: widgets.Layout(flex="0 0 auto")                    # noqa: E731
        buttons = widgets.HBox([c["pause"], c["stop"], c["worker"], c["kill"]],
                               layout=widgets.Layout(flex_flow="row wrap"))
        title = widgets.HTML(SLOW_TITLE)                 # the sliders are named as the lanes
        self._sliders = widgets.VBox([title, *(c["slowdown"][k] for k in self._lanes)],
                                     layout=column())    # only the lanes drawn (_seats)
        return widgets.HBox([self._sliders,
                             widgets.VBox([c["lr"], buttons], layout=column())],
                            layout=widgets.Layout(flex_flow="row wrap"))

    def _seats(self, workers):
        """The workers the picture draws a lane for (every one; in a classroom the seats taken, in
        seat order) and each worker's name as its lane shows it: "worker k", or its student's."""
        trace = self.live.trace
        return ([k for k in lanes(trace) if k < workers],
                [lane_name(trace, k) for k in range(workers)])

    def _victims(self):
        """The kill dropdown's options: (name, worker) of each lane drawn."""
        return [(self._names[k], k) for k in self._lanes]

    def _by_hand(self):
        """Whether a control was moved by someone (not by the view following the run's state)."""
        return threading.current_thread() is not self._thread

    def _follow(self, state):
        """Move the controls where the run's state changed since the last tick (live.pause(),
        live.slow, live.set_lr from code). Only a change of the state moves a control, never a
        control that differs from it: a toggle just clicked, whose call is still on its way, is
        left alone. The view's own moves call nothing (_by_hand): no Control twice, no loop."""
        c, known = self.controls, self._known
        self._known = following(state)
        if state["paused"] != known["paused"] and c["pause"].value != state["paused"]:
            c["pause"].value = state["paused"]
        for slider, seconds, was in zip(c["slowdown"], state["slowdown"], known["slowdown"]):
            if seconds != was and slider.value != seconds:
                slider.max = max(slider.max, slow_top(seconds))
                slider.value = seconds
        lr = c["lr"]
        if state["lr"] != known["lr"] and not math.isclose(lr.value, state["lr"], rel_tol=1e-9):
            at = math.log10(state["lr"])
            if not lr.min <= at <= lr.max:
                low, high = lr_range(state["lr"])
                low, high = min(low, lr.min), max(high, lr.max)
                lr.min, lr.max, lr.readout_format = low, high, lr_format(low)
            lr.value = state["lr"]
        shown, names = self._seats(len(c["slowdown"]))
        if (shown, names) != (self._lanes, self._names):  # a student took a seat (a classroom)
            self._lanes, self._names = shown, names
            for slider, name in zip(c["slowdown"], names):
                slider.description = name
            self._sliders.children = [self._sliders.children[0], *(c["slowdown"][k] for k in shown)]
            victim = c["worker"].value
            c["worker"].options = self._victims()
            c["worker"].value = victim if victim in shown else (shown or [None])[0]

    def _do(self, change, *args):
        """Call a LiveRun method; what it refuses goes to the message line."""
        try:
            change(*args)
        except (RuntimeError, ValueError, TypeError) as err:
            self._say(str(err), error=True)
        else:
            self._say("")
        self._drawn = None                               # the next tick redraws

    def _say(self, words, error=False):
        color = INKS["stale"] if error else TEXT                 # themed: read on light and dark
        self.message.value = (f'<div class="asyncps-live-message" style="{text_style(color)}">'
                              f'{escape(words)}</div>' if words else "")

    # -- drawing -----------------------------------------------------------------------------
    def _loop(self):
        """Redraw when something changed, at most fps times a second, until the run has ended;
        then draw its end once and disable the controls."""
        pause = 1.0 / self.fps                           # __init__ has just drawn
        while not self._rest(pause):
            running = self.live.running                  # before the state: then it is the last
            state = self.live.state
            if not running:
                break
            self._follow(state)
            start = time.perf_counter()
            self._draw(state)
            pause = max(1.0 / self.fps, (time.perf_counter() - start) / BUSY)
        else:
            return                                       # closed: nothing more to draw
        try:
            self.ended = rl.outcome(self.live.result(timeout=0))
        except Exception as err:                         # noqa: BLE001 - the run's error, shown
            self.ended = rl.outcome(err)
        self._follow(state)
        self._draw(state, force=True)
        self._say(self.ended, error=not self.ended.startswith(("finished", "stopped")))
        for control in self.every_control():
            control.disabled = True

    def _rest(self, seconds):
        """Wait `seconds` between two pictures, less if the run ends meanwhile (its end is drawn
        at once); True once the view is closed."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0 and self.live.running:
            if self._quit.wait(min(left, 0.05)):
                return True
        return self._quit.is_set()

    def _draw(self, state, force=False):
        seen = (state["version"], state["paused"], state["lr"], tuple(state["lost"]),
                tuple(state["slowdown"]))
        if seen == self._drawn and not force:
            return
        self._drawn = seen
        trace = self.live.trace
        self.picture.value = rl.live_svg(trace, state, self.window, self.width,
                                         counts=self._tally.update(trace), ended=self.ended)
        self.redraws += 1

    def every_control(self):
        """The controls one by one: the slowdown sliders, lr, pause, stop, which worker, kill."""
        c = self.controls
        return [*c["slowdown"], c["lr"], c["pause"], c["stop"], c["worker"], c["kill"]]

    # -- the end -----------------------------------------------------------------------------
    def join(self, timeout=None):
        """Wait until the view has drawn the run's end (the run must end: live.result())."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def close(self):
        """Stop redrawing (the run goes on) and close the widget."""
        self._quit.set()
        if self._thread not in (None, threading.current_thread()):
            self._thread.join()
        super().close()

    def __repr__(self):
        status = self.ended or ("running" if self.live.running else "ending")
        return f"LiveView({status}, {self.redraws} redraws, fps<={self.fps:g})"

    def _repr_mimebundle_(self, **kwargs):
        """The widget, and where it cannot run (a notebook opened without a kernel) the picture it
        showed when the cell ran, as an <img> (picture.py) with a line saying so."""
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["text/html"] = (f'<div class="asyncps-static asyncps-live-static">'
                               f'{img_html(self.picture.value)}<p>a live run, as it was when the '
                               f'cell ran; run the cell to watch it and change it</p></div>')
        bundle["image/svg+xml"] = self.picture.value
        return bundle
