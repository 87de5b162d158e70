"""The classroom (asyncps/classroom) with real Jupyter kernels as the students (issues 29 and 37).

Four kernels of this venv (jupyter_client's KernelManager, as tests/test_live_kernel.py starts
them) each build the lecturer's torch problem by executing code, then run
`c = aps.classroom.join(ADDRESS, token=TOKEN, name=..., problem=problem); print(c)` in a cell
against a room that this process serves on 127.0.0.1:

- the room waits: three kernels join and wait (their cells running, a progress line saying they
  wait) while no version is made, until the lecturer's room.start(); then a fourth, late kernel
  joins the running run (async) and pushes; each cell ends printing its Contribution's sentence,
  on a line of its own;
- a kernel whose connection is cut (through tests/tcp_proxy.py, a Wi-Fi drop: its request in
  flight lost, then the connection closed) comes back on its own (ZeroMQ reconnects) and keeps
  its seat: no Lost event, its pushes go on, its cell says the room made its versions, and it was
  "away" well under room.AWAY_AFTER (not saved by a hair);
- a student's stop button (an interrupted cell) tells the room the student left;
- a kernel killed mid-run (SIGKILL to its process, a crash) is lost within 5 s, by name (the Lost
  event, room.state), and async makes its versions;
- under sync a kernel killed mid-run (jupyter_client's shutdown_kernel(now=True)) is named in the
  run's error, and the other kernels' cells end, told why.

The kernels are started once for the module, concurrently; the tests run in an order in which
no killed kernel must be started again (a test takes the kernels that are alive and idle, and
starts again only those it lacks). Every kernel, and every process it started, is killed by its
PID in a `finally`, and the module checks they are all gone; every proxy is closed, its threads
joined.
"""
import collections
import os
import queue
import re
import time

import psutil
import pytest

import asyncps as aps
from asyncps import grade
from engines import no_thread_survives  # noqa: F401 (a fixture)
from tcp_proxy import TcpProxy

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
c = aps.classroom.join({address!r}, token={token!r}, name={name!r}, problem=problem,
                       slowdown={slowdown!r})
print(c)
"""
SLOWDOWN = 0.02            # s per gradient: at most 50 versions a second per student
LOST_WITHIN = 5.0          # s from a kill to its Lost event
# a run that outlasts LOST_WITHIN s after its 30th version, whatever the speed: 3 students make
# at most 3 / SLOWDOWN = 150 versions a second
STEPS = 30 + int(3 / SLOWDOWN * (LOST_WITHIN + 1.5))
THE_END = "the room made its versions"
LOSE = 0.3                 # s before a cut in which what the proxy carries is lost
AWAY_AFTER = aps.classroom.room.AWAY_AFTER
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300),
              pytest.mark.usefixtures("no_thread_survives")]


class Kernel:
    """One student's kernel and its client. `procs`: every process it ever ran (psutil's, which
    know their start time: stopped by PID, never a PID reused since); `pending`: the msg_id of
    the cell sent and not yet finished, `out` its stdout so far."""

    def __init__(self, name, runtime):
        self.name, self.runtime = name, runtime
        self.km = self.kc = self.pending = None
        self.generation, self.procs = 0, []
        self._reset()

    def _reset(self):
        self.pending, self.out, self.error, self.idle = None, [], None, False

    # -- starting: launch() returns at once, ready() waits, so several start concurrently ----
    def launch(self):
        self.generation += 1
        # on Unix sockets ("Address already in use" over TCP: seen with three test processes)
        self.km = grade.kernel_manager(str(self.runtime), f"{self.name}-{self.generation}")
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
        self._reset()
        self.pending = self.kc.execute(code)

    def poll(self, timeout=0.0):
        """Read the pending cell's output for at most `timeout` s: True once the cell has ended."""
        deadline = time.monotonic() + timeout
        while not self.idle:
            try:
                msg = self.kc.get_iopub_msg(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return False
            if msg["parent_header"].get("msg_id") != self.pending:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream" and content["name"] == "stdout":
                self.out.append(content["text"])
            elif kind == "error":
                self.error = f"{content['ename']}: {content['evalue']}"
            elif kind == "status" and content["execution_state"] == "idle":
                self.idle = True
        return True

    @property
    def running(self):
        """The pending cell has not ended yet."""
        return self.pending is not None and not self.poll()

    @property
    def output(self):
        return "".join(self.out)

    def wait(self, timeout=120):
        """Wait for the pending cell to end: (its stdout, the reply's status, the error)."""
        msg_id, deadline = self.pending, time.monotonic() + timeout
        try:
            if not self.poll(timeout):
                raise queue.Empty
            while True:
                reply = self.kc.get_shell_msg(timeout=max(0.01, deadline - time.monotonic()))
                if reply["parent_header"].get("msg_id") == msg_id:
                    break
        except queue.Empty:
            raise AssertionError(f"{self.name}'s cell did not end within {timeout} s; "
                                 f"its output so far: {self.output!r}") from None
        out, error = self.output, self.error
        self._reset()
        return out, reply["content"]["status"], error

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
        self._reset()

    def shutdown_now(self):
        """jupyter_client's hard shutdown (Restart/Shutdown with now=True): SIGKILL to its group."""
        self.note_children()
        self.km.shutdown_kernel(now=True)
        self._reset()

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
            self.km = self.kc = None
            self._reset()

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
    """students(n): n kernels, each alive, idle and with `problem` built, in name order: those
    that are, then as many of the others (killed, or stuck in a failed test's cell) started again
    as are needed."""
    def take(n=4):
        usable = [k for k in class_of_four if k.alive and k.pending is None]
        again = [k for k in class_of_four if k not in usable][:max(0, n - len(usable))]
        for k in again:
            k.restart()
        for k in again:
            k.ready()
        for k in again:
            assert k.finish() == "ready"
        return [k for k in class_of_four if k in usable[:n] or k in again]

    return take


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


@pytest.fixture
def proxies():
    """proxies(room): a TcpProxy to the room's port; every one closed (its threads joined) after."""
    opened = []

    def to(room):
        opened.append(TcpProxy("127.0.0.1", int(room.address.rsplit(":", 1)[1])))
        return opened[-1]

    try:
        yield to
    finally:
        for proxy in opened:
            proxy.close()


def wait_until(condition, what, seconds=60.0):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.02)


def joins(room, k, address=None, slowdown=SLOWDOWN):
    """Kernel k runs its join cell (on `address`, the room's by default), named as the kernel."""
    k.send(JOIN.format(address=address or room.address, token=room.token, name=k.name,
                       slowdown=slowdown))


def everyone_joins_and_starts(room, kernels, slowdown=SLOWDOWN, via=None):
    """Each kernel runs its join cell (those in `via`, {kernel: address}, on that address); once
    every seat is taken, the lecturer starts the run."""
    for k in kernels:
        joins(room, k, (via or {}).get(k), slowdown)
    wait_until(lambda: len(room.seats) == len(kernels), "every kernel joined")
    room.start()


def contribution(name, seat, pushes=r"\d+", staleness=r"\d+\.\d\d", stopped=re.escape(THE_END)):
    """The last line a kernel prints: `print(c)` of its Contribution."""
    return (rf"{re.escape(name)} \(seat {seat}\): {pushes} gradients pushed, "
            rf"mean staleness {staleness}; {stopped}")


def said(out):
    """The last line of a cell's output (the progress line redraws itself with \\r before it),
    stripped (a line's own indentation is checked in the first test)."""
    return out.splitlines()[-1].strip()


def pushed(room, seat):
    """How many pushes of `seat` the room applied so far."""
    with room._lock:
        return sum(p.worker == seat for p in room.server.trace.pushes)


def seats_of(trace):
    return {name: int(k) for k, name in trace.meta["students"].items()}


def test_the_room_waits_for_the_lecturer_and_a_late_kernel_joins_the_running_run(students, lecturer):
    kernels = students(4)
    first, late = kernels[:3], kernels[3]
    room = lecturer(workers=4, policy="async", lr=0.1, steps=STEPS)
    for k in first:
        joins(room, k)
    wait_until(lambda: len(room.seats) == 3, "three kernels seated")
    # the room waits: no version, the three cells still running, each showing why
    says = "waiting for the lecturer to start the run (3 seated)"
    wait_until(lambda: all(not k.poll() and says in k.output for k in first),
               "each kernel says it waits", 10)
    waited = time.monotonic()
    while time.monotonic() - waited < 1.0:
        assert room.server.version == 0 and not room.started, room
        time.sleep(0.05)
    assert all(k.running for k in first), [(k.name, k.output, k.error) for k in first]
    assert "waiting for room.start()" in repr(room) and room.state["started"] is False
    room.start()
    wait_until(lambda: room.server.version >= 30, "30 versions")
    joined_at = room.server.version                     # the late one joins at this version or later
    joins(room, late)
    wait_until(lambda: len(room.seats) == 4, "the late kernel joined")
    printed = {k.name: k.finish() for k in kernels}
    run = room.result(30)
    trace = run.trace
    assert aps.violations(trace) == [] and len(run.losses) == STEPS + 1
    assert trace.meta["engine"] == "classroom" and sorted(trace.meta["students"].values()) == NAMES
    assert trace.lost == [] and room.refused == {}
    seats, pushed = seats_of(trace), collections.Counter(p.worker for p in trace.pushes)
    for k in kernels:
        seat = seats[k.name]
        assert pushed[seat] > 0, (k.name, pushed)
        assert re.fullmatch(contribution(k.name, seat, pushed[seat]), said(printed[k.name])), printed
        progress, sentence = printed[k.name].splitlines()[-2:]
        assert progress.endswith(f"{k.name} (seat {seat}) · {pushed[seat]} gradients pushed; {THE_END}")
        # the progress line's padding stays on its line: print(c) starts its own, unindented
        assert sentence == sentence.lstrip(), repr(printed[k.name][-200:])
    late_pushes = [p for p in trace.pushes if p.worker == seats[late.name]]
    assert min(p.computed_on for p in late_pushes) >= joined_at, late_pushes[:3]
    assert run.losses[-1] < run.losses[0], run.losses


def test_a_cut_connection_that_comes_back_keeps_its_seat(students, lecturer, proxies):
    kernels = students(4)
    room = lecturer(workers=4, policy="async", lr=0.1, steps=STEPS)
    proxy = proxies(room)
    wifi, name = kernels[3], kernels[3].name            # this student's Wi-Fi drops
    everyone_joins_and_starts(room, kernels, via={wifi: proxy.address})
    seat = room.seat(name)
    wait_until(lambda: room.server.version >= 30 and pushed(room, seat) >= 3, "30 versions, 3 its")
    accepted = proxy.accepted
    # the link dies: for LOSE s what is sent is lost (its request in flight: a gradient computes
    # in ~2 ms and it sleeps SLOWDOWN s), then the connection closes both ways
    assert proxy.cut(lose=LOSE) >= 1                     # its connection was open, and is closed
    cut_at, away = room._clock(), []                     # when its row said "away"
    while not room.server.done:
        row = {r["name"]: r for r in room.state["students"]}[name]
        if row["status"] == "away":
            away.append(room._clock())
        time.sleep(0.02)
    run = room.result(60)
    trace = run.trace
    assert trace.lost == [], trace.lost                  # back within AWAY_AFTER: still seated
    assert proxy.accepted > accepted                     # it came back through the proxy
    after = [p for p in trace.pushes if p.worker == seat and p.time > cut_at]
    assert after, f"no push of {name} after the cut at {cut_at:.2f} s"
    assert aps.violations(trace) == [] and len(run.losses) == STEPS + 1
    seats = seats_of(trace)
    assert seats[name] == seat
    for k in kernels:
        assert re.fullmatch(contribution(k.name, seats[k.name]), said(k.finish())), k.name
    # ... and it kept its seat with time to spare: it was heard again soon after ZeroMQ
    # reconnected (~0.1 s), not just before the room would have lost it (AWAY_AFTER)
    print(f"\n{name} away for {max(away, default=cut_at) - cut_at:.2f} s after the cut")
    assert away, "the room never saw the connection close"
    assert max(away) - cut_at < AWAY_AFTER / 2, (
        f"{name} was away {max(away) - cut_at:.2f} s of the {AWAY_AFTER} s that lose a seat")


def test_an_interrupted_cell_tells_the_room_its_student_left(students, lecturer):
    kernels = students(4)
    room = lecturer(workers=4, policy="async", lr=0.1, steps=100_000)
    everyone_joins_and_starts(room, kernels, slowdown=0.01)
    leaver, name = kernels[3], kernels[3].name
    seat = room.seat(name)
    wait_until(lambda: room.server.version >= 20 and pushed(room, seat) >= 3, "20 versions, 3 its")
    leaver.km.interrupt_kernel()                         # the student's stop button
    out = leaver.finish(60)                              # join() returns: the cell ends, no error
    left = contribution(name, seat, stopped=r"left the room \(interrupted\)")
    assert re.fullmatch(left, said(out)), out
    wait_until(lambda: room.server.trace.lost, "the room heard")
    assert [(e.worker, e.reason) for e in room.server.trace.lost] == [(seat, f"{name} left the room")]
    room.stop()
    run = room.result(60)
    for k in kernels[:3]:                                # on a loaded machine a kernel may not
        seat_k = seats_of(run.trace)[k.name]             # have pushed yet when the run is stopped
        done = said(k.finish(60))
        assert (re.fullmatch(contribution(k.name, seat_k, stopped="the lecturer stopped the run"), done)
                or done == f"{k.name} (seat {seat_k}): 0 gradients pushed; the lecturer stopped the run"), done
    assert aps.violations(run.trace) == [] and run.message == "stopped by live.stop()"


def test_a_killed_kernel_is_lost_by_name_within_seconds_and_async_makes_its_versions(students,
                                                                                  lecturer):
    kernels = students(4)
    room = lecturer(workers=4, policy="async", lr=0.1, steps=STEPS)
    everyone_joins_and_starts(room, kernels)
    victim, name = kernels[2], kernels[2].name
    seat = room.seat(name)
    wait_until(lambda: room.server.version >= 30 and pushed(room, seat) >= 3, "30 versions, 3 its")
    killed_at = room._clock()                            # the room's clock, as its events'
    victim.kill_by_pid()
    wait_until(lambda: room.server.trace.lost, f"{name} lost", LOST_WITHIN + 5)
    (lost,) = room.server.trace.lost
    latency = lost.time - killed_at
    print(f"\nkill -> Lost: {latency:.2f} s ({lost.reason})")
    assert (lost.worker, lost.reason) == (seat, f"{name} closed the connection")
    assert latency <= LOST_WITHIN, latency
    (row,) = [r for r in room.state["students"] if r["name"] == name]
    assert row["status"] == "lost" and name in row["why"], row
    assert room.server.version < STEPS                  # the run goes on without it ...
    run = room.result(60)
    trace = run.trace
    assert aps.violations(trace) == [] and len(run.losses) == STEPS + 1   # ... and makes them all
    assert max(p.time for p in trace.pushes if p.worker == seat) < killed_at + 0.5
    seats = seats_of(trace)
    for k in kernels:
        if k is victim:
            continue
        assert re.fullmatch(contribution(k.name, seats[k.name]), said(k.finish())), k.name
        assert any(p.time > lost.time for p in trace.pushes if p.worker == seats[k.name]), k.name
    assert not victim.alive


def test_under_sync_a_killed_kernel_is_named_and_the_others_are_told(students, lecturer):
    kernels = students(3)                                 # three: none started again for it
    room = lecturer(workers=3, policy="sync", lr=0.1, steps=10**6)
    everyone_joins_and_starts(room, kernels, slowdown=0.0)
    wait_until(lambda: room.server.version >= 10, "10 versions")
    victim, name = kernels[1], kernels[1].name
    seat = room.seat(name)
    victim.shutdown_now()
    # a kernel shut down may get to tell the room it left (jupyter_client may interrupt it
    # first); killed outright, its connection closes: either way the student is named
    gone = rf"{re.escape(name)} (closed the connection|left the room)"
    why = rf"worker {seat} was lost \({gone}\) at v\d+: policy='sync' waits for every worker"
    with pytest.raises(RuntimeError, match=why):
        room.result(60)
    (lost,) = room.server.trace.lost
    assert lost.worker == seat and re.fullmatch(gone, lost.reason), lost
    seats = seats_of(room.server.trace)
    for k in kernels:
        if k is victim:
            continue
        told = said(k.finish(60))                        # the cell ended: not left waiting
        assert re.fullmatch(contribution(k.name, seats[k.name], staleness="0.00",
                                         stopped=f"{why}.*"), told), told
    assert not victim.alive
