"""Ctrl+C (a notebook's interrupt) during a real run, raised where the run's loop can stop it.

Python raises KeyboardInterrupt wherever the main thread happens to be when SIGINT arrives. If that
is inside a weakref callback or a `__del__` (the engines' loops make garbage), Python prints
"Exception ignored ... KeyboardInterrupt" and drops it: the run goes on as if Ctrl+C had not been
pressed (seen in the test suite: a processes run went on for 60 s). So while an engine's loop
watches its workers from the main thread, SIGINT only sets a flag, and the loop raises
KeyboardInterrupt at its next turn (each turn waits 0.5 s at most). Elsewhere (a run in a
background thread, or a program with a SIGINT handler of its own) nothing changes."""
import contextlib
import signal
import threading


class Pressed:
    """Whether Ctrl+C was pressed since the loop last looked; `check()` raises it there."""

    def __init__(self):
        self.pressed = False

    def check(self):
        if self.pressed:
            self.pressed = False
            raise KeyboardInterrupt


@contextlib.contextmanager
def raised_between_turns():
    """While the block runs, SIGINT sets `pressed` (the loop calls `pressed.check()` each turn);
    pressed after the loop's last turn, it is raised when the block ends."""
    pressed = Pressed()
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield pressed
        return

    def handler(signum, frame):
        pressed.pressed = True

    signal.signal(signal.SIGINT, handler)
    try:
        yield pressed
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    pressed.check()
