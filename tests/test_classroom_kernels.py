"""The classroom (asyncps/classroom) with real Jupyter kernels as the students (issue 29).

Four kernels of this venv (jupyter_client's KernelManager, as tests/test_live_kernel.py starts
them) each build the lecturer's torch problem by executing code, then run
`aps.classroom.join(ADDRESS, token=TOKEN, name=..., problem=problem)` in a cell against a room
that this process serves on 127.0.0.1:

- the four train one torch model together under async: every student pushed, the loss fell, the
  invariants hold, and each kernel printed its contribution line;
- a kernel killed mid-run (SIGKILL to its process, as a crash) says nothing more, so after
  `silent_after` seconds it is lost (a Lost event naming it) and async makes its versions;
- under sync a kernel killed mid-run (jupyter_client's shutdown_kernel(now=True)) holds the barrier:
  room.result() raises naming the student, and the other kernels' cells end, told why.

The kernels are started once for the module, concurrently, and a killed one is started again
before the next test. Every kernel, and every process it started, is killed by its PID in a
`finally`, and the module checks they are all gone.
"""
import collections
import os
import queue
import re
import time

import psutil
import pytest
from jupyter_client import KernelManager

import asyncps as aps
from engines import no_thread_survives  # noqa: F401 (a fixture)

NAMES = [f"student-{i}" for i in range(4)]
MLP = dict(n=2048, dim=16, hidden=32, classes=4, seed=0)          # the problem, on both sides
PROBLEM = f"aps.problems.MLP(**{MLP!r})"
SETUP = f"""
import torch
torch.set_num_threads(1)
import asyncps as aps
problem = {PROBLEM}
problem.loss(problem.x0), problem.gradient(problem.x0)
print("ready")
"""
JOIN = """
c = aps.classroom.join({address!r}, token={token!r}, name={name!r}, problem=problem{extra})
print(c)
"""
SILENT_AFTER = 2
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300),
              pytest.mark.usefixtures("no_thread_survives")]


class Kernel:
    """One student's kernel and its client. `procs`: every process it ever ran (psutil's, which
    know their start time: stopped by PID, never a PID reused since); `pending`: the msg_id of
    the cell sent and not yet finished."""

    def __init__(self, name, runtime):
        self.name, self.runtime = name, runtime
        self.km = self.kc = self.pending = None
        self.generation, self.procs = 0, []

    # -- starting: launch() returns at once, ready() waits, so several start concurrently ----
    def launch(self):
        self.generation += 1
        self.km = KernelManager(kernel_name="python3")
        self.km.connection_file = str(self.runtime / f"{self.name}-{self.generation}.json")
        self.km.start_kernel(env=dict(os.environ, TQDM_DISABLE="1"), cwd=str(self.runtime))
        self.procs.append(psutil.Process(self.pid))
        self.kc = self.km.client()
        self.kc.start_channels()

    def ready(self, timeout=120):
        """Wait for the kernel, then start building the problem (finish() waits for that)."""
        self.kc.wait_for_ready(timeout=timeout)
        self.send(SETUP)

    @property
    def pid(self):
        return self.km.provisioner.pid

    @property
    def alive(self):
        return self.km is not None and self.km.is_alive()

    # -- running cells ------------------------------------------------------------------------
    def send(self, code):
        assert self.pending is None, f"{self.name} is still running a cell"
        self.pending = self.kc.execute(code)

    def wait(self, timeout=120):
        """Wait for the pending cell to end: (its stdout, the reply's status, the error)."""
        msg_id, out, error = self.pending, [], None
        deadline = time.monotonic() + timeout
        try:
            while True:
                msg = self.kc.get_iopub_msg(timeout=max(0.01, deadline - time.monotonic()))
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                kind, content = msg["msg_type"], msg["content"]
                if kind == "stream" and content["name"] == "stdout":
                    out.append(content["text"])
                elif kind == "error":
                    error = f"{content['ename']}: {content['evalue']}"
                elif kind == "status" and content["execution_state"] == "idle":
                    break
            while True:
                reply = self.kc.get_shell_msg(timeout=max(0.01, deadline - time.monotonic()))
                if reply["parent_header"].get("msg_id") == msg_id:
                    break
        except queue.Empty:
            raise AssertionError(f"{self.name}'s cell did not end within {timeout} s; "
                                 f"its output so far: {''.join(out)!r}") from None
        self.pending = None
        return "".join(out), reply["content"]["status"], error

    def finish(self, timeout=120):
        """The pending cell's stdout, once it ended without an error."""
        out, status, error = self.wait(timeout)
        assert status == "ok", (self.name, error, out)
        return out.strip()

    # -- ending ---------------------------------------------------------------------------------
    def note_children(self):
        self.procs.extend(psutil.Process(self.pid).children(recursive=True))

    def kill_by_pid(self):
        """SIGKILL to the kernel alone (a crash): nothing in it can tell the room."""
        self.note_children()
        proc = psutil.Process(self.pid)
        proc.kill()
        proc.wait(10)
        self.pending = None

    def shutdown_now(self):
        """jupyter_client's hard shutdown (Restart/Shutdown with now=True): SIGKILL to its group."""
        self.note_children()
        self.km.shutdown_kernel(now=True)
        self.pending = None

    def close(self):
        """Leave nothing: the client stopped, and every process ever noted killed by its PID."""
        try:
            if self.alive:
                self.note_children()
        except psutil.Error:
            pass
        try:
            if self.kc is not None:
                self.kc.stop_channels()
        finally:
            left = []
            for proc in self.procs:
                try:
                    proc.kill()                  # psutil: not if its PID is another process's now
                    left.append(proc)
                except psutil.Error:
                    pass
            psutil.wait_procs(left, timeout=10)
            try:
                if self.km is not None:
                    self.km.cleanup_resources()
            except Exception:                                        # noqa: BLE001
                pass
            self.km = self.kc = self.pending = None

    def restart(self):
        """A fresh kernel in place of this one (killed, or stuck in a cell of a failed test)."""
        self.close()
        self.launch()


def running(procs):
    """Those of `procs` still running (not gone, not a zombie)."""
    alive = []
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append((proc.pid, proc.name()))
        except psutil.Error:
            pass
    return alive


@pytest.fixture(scope="module")
def class_of_four(tmp_path_factory):
    """Four kernels, started concurrently, each with `problem` built; all killed at the end."""
    runtime = tmp_path_factory.mktemp("runtime")
    kernels = [Kernel(name, runtime) for name in NAMES]
    try:
        for k in kernels:
            k.launch()
        for k in kernels:
            k.ready()
        for k in kernels:
            assert k.finish() == "ready"
        yield kernels
    finally:
        for k in kernels:
            k.close()
        procs = [p for k in kernels for p in k.procs]
        psutil.wait_procs(procs, timeout=10)
        assert running(procs) == [], "a kernel (or a process it started) outlived the tests"


@pytest.fixture
def students(class_of_four):
    """The four kernels, each alive, idle and with `problem` built (a killed one started again)."""
    again = [k for k in class_of_four if not k.alive or k.pending is not None]
    for k in again:
        k.restart()
    for k in again:
        k.ready()
    for k in again:
        assert k.finish() == "ready"
    return class_of_four


@pytest.fixture
def lecturer():
    """Open rooms on the lecturer's problem (torch on one thread here too); closed at the end."""
    import torch

    threads, rooms = torch.get_num_threads(), []
    torch.set_num_threads(1)
    problem = aps.problems.MLP(**MLP)

    def serve(**arguments):
        rooms.append(aps.classroom.serve(problem, **arguments))
        return rooms[-1]

    try:
        yield serve
    finally:
        for room in rooms:
            room.stop()
        torch.set_num_threads(threads)


def wait_until(condition, what, seconds=60.0):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.02)


def everyone_joins(room, kernels, slowdown=None):
    """Each kernel runs its join cell; the room is paused until every seat is taken, so that no
    student finds the run over before the last one is in."""
    room.pause()
    extra = "" if slowdown is None else f", slowdown={slowdown!r}"
    for name, k in zip(NAMES, kernels):
        k.send(JOIN.format(address=room.address, token=room.token, name=name, extra=extra))
    wait_until(lambda: len(room.seats) == len(kernels), "every kernel joined")
    room.resume()


def contribution(name, seat, pushes=r"\d+", staleness=r"\d+\.\d\d", stopped="the room made its versions"):
    """The line a kernel prints: `print(c)` of its Contribution."""
    return (rf"{re.escape(name)} \(seat {seat}\): {pushes} gradients pushed, "
            rf"mean staleness {staleness}; {stopped}")


def test_four_kernels_train_one_torch_model(students, lecturer):
    room = lecturer(workers=4, policy="async", lr=0.1, steps=300)
    everyone_joins(room, students)
    printed = {name: k.finish() for name, k in zip(NAMES, students)}
    run = room.result(30)
    trace = run.trace
    assert aps.violations(trace) == [] and len(run.losses) == 301
    assert trace.meta["engine"] == "classroom" and sorted(trace.meta["students"].values()) == NAMES
    seats = {name: int(k) for k, name in trace.meta["students"].items()}
    pushed = collections.Counter(p.worker for p in trace.pushes)
    for name in NAMES:
        assert pushed[seats[name]] > 0, (name, pushed)
        assert re.fullmatch(contribution(name, seats[name], pushed[seats[name]]), printed[name]), printed
    assert run.losses[-1] < 0.5 * run.losses[0], run.losses
    assert trace.lost == [] and room.refused == {}


def test_a_killed_kernel_is_lost_after_its_silence_and_async_finishes(students, lecturer):
    # slowdown: at most 50 gradients a second per student, so the run is still going when the
    # killed kernel has been silent for SILENT_AFTER seconds (~30 + 3 * 50 * 2.x < 600 versions)
    room = lecturer(workers=4, policy="async", lr=0.1, steps=600, silent_after=SILENT_AFTER)
    everyone_joins(room, students, slowdown=0.02)
    wait_until(lambda: room.server.version >= 30, "30 versions")
    victim, name = students[2], NAMES[2]
    seat = room.seat(name)
    victim.kill_by_pid()
    run = room.result(120)
    trace = run.trace
    assert [(e.worker, e.reason) for e in trace.lost] == [(seat, f"{name} was silent for {SILENT_AFTER} s")]
    assert aps.violations(trace) == [] and len(run.losses) == 601
    lost_at = trace.lost[0].time
    assert max(p.time for p in trace.pushes if p.worker == seat) < lost_at - SILENT_AFTER
    seats = {name: int(k) for k, name in trace.meta["students"].items()}
    for name, k in zip(NAMES, students):
        if k is victim:
            continue
        assert re.fullmatch(contribution(name, seats[name]), k.finish()), name
        assert any(p.time > lost_at for p in trace.pushes if p.worker == seats[name]), name
    assert not victim.alive


def test_under_sync_a_killed_kernel_is_named_and_the_others_are_told(students, lecturer):
    room = lecturer(workers=4, policy="sync", lr=0.1, steps=10**6, silent_after=SILENT_AFTER)
    everyone_joins(room, students)
    wait_until(lambda: room.server.version >= 10, "10 versions")
    victim, name = students[1], NAMES[1]
    seat = room.seat(name)
    victim.shutdown_now()
    # a kernel shut down may get to tell the room it left (jupyter_client may interrupt it
    # first); killed outright, it goes silent: either way the student is named
    gone = rf"{name} (was silent for {SILENT_AFTER} s|left the room)"
    why = rf"worker {seat} was lost \({gone}\) at v\d+: policy='sync' waits for every worker"
    with pytest.raises(RuntimeError, match=why):
        room.result(60)
    (lost,) = room.server.trace.lost
    assert lost.worker == seat and re.fullmatch(gone, lost.reason), lost
    seats = {name: int(k) for k, name in room.server.trace.meta["students"].items()}
    for name, k in zip(NAMES, students):
        if k is victim:
            continue
        told = k.finish(60)                              # the cell ended: not left waiting
        assert re.fullmatch(contribution(name, seats[name], staleness="0.00",
                                         stopped=f"the room ended this seat's run: {why}.*"), told), told
    assert not victim.alive


def test_an_interrupted_cell_tells_the_room_its_student_left(students, lecturer):
    room = lecturer(workers=4, policy="async", lr=0.1, steps=100_000, silent_after=SILENT_AFTER)
    everyone_joins(room, students, slowdown=0.01)
    wait_until(lambda: room.server.version >= 20, "20 versions")
    leaver, name = students[3], NAMES[3]
    seat = room.seat(name)
    leaver.km.interrupt_kernel()                         # the student's stop button
    said = leaver.finish(60)                              # join() returns: the cell ends, no error
    assert re.fullmatch(contribution(name, seat, stopped=r"left the room \(interrupted\)"), said), said
    wait_until(lambda: room.server.trace.lost, "the room heard")
    assert [(e.worker, e.reason) for e in room.server.trace.lost] == [(seat, f"{name} left the room")]
    room.stop()
    run = room.result(60)
    for k in students[:3]:
        k.finish(60)
    assert aps.violations(run.trace) == [] and run.message == "stopped by live.stop()"
