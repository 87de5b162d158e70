"""A live run in a real Jupyter kernel leaves nothing running, however the kernel goes.

Each test starts a kernel from this venv (jupyter_client's KernelManager, its own runtime dir),
starts `aps.train(..., engine="processes", live=True)` in it and notes every process the kernel
has started: the fork server, the resource tracker and the workers. Then the kernel goes:

- restarted gracefully (Restart in JupyterLab: a shutdown request): ipykernel terminates the
  children in its process group (SIGTERM), so the workers and the fork server go at once; the
  resource tracker ignores SIGTERM, so jupyter_client ends the kernel's whole group after half its
  `shutdown_wait_time` (2.5 s by default). Every process is gone.
- killed hard: by jupyter_client (Restart with now=True signals the kernel's process group), or
  by SIGKILL to the kernel alone (the OOM killer, a crash): nothing in the kernel can clean up
  then, so each worker is killed by the kernel's death itself (procs.die_with_parent);
- interrupted (the ■ button, SIGINT to the kernel's process group) while a cell waits in
  `live.result()`: the cell raises KeyboardInterrupt and the run is stopped, its workers gone.
  An interrupt when no cell is waiting does nothing to the run: the kernel is idle and ignores
  SIGINT, the workers ignore it too, and the run goes on in the background. Stop it with
  `live.stop()` or the live view's stop button.

The runs are paused before the kernel goes (the hard case: a paused worker sleeps in a loop and
would wait forever). Every kernel and every process noted is killed by PID in a `finally`.
"""
import os
import queue
import signal
import time

import psutil
import pytest

from asyncps import grade

GONE_WITHIN = 10.0          # seconds for every process of a run to be gone (a bound, not a timing)
START = """
import asyncps as aps
live = aps.train(aps.problems.LeastSquares(n=256, dim=8, seed=0), engine="processes", workers=3,
                 policy="async", lr=0.01, steps=10**6, slowdown=[0.002] * 3, live=True)
"""
PUSHED = """
import time
deadline = time.monotonic() + 60
while live.state["pushes"] < 30 and time.monotonic() < deadline:
    time.sleep(0.05)
print(live.state["pushes"] >= 30, live.running)
"""


class Kernel:
    """A kernel of this venv and its client; `pids` every process it ever ran (to stop by PID)."""

    def __init__(self, runtime):
        self.km = grade.kernel_manager(str(runtime))     # shutdown_wait_time: 5 s, as in Lab
        self.km.connection_file = str(runtime / "kernel.json")
        self.cwd = runtime
        self.pids = set()
        self.start()

    def start(self):
        self.km.start_kernel(env=dict(os.environ, TQDM_DISABLE="1"), cwd=str(self.cwd))
        self.pids.add(self.km.provisioner.pid)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    @property
    def pid(self):
        return self.km.provisioner.pid

    def wait_for_iopub(self, seconds=60):
        """Until the client hears the (restarted) kernel on IOPub: its subscription reconnects
        after a restart, and what the kernel prints before that is lost (loaded, a test's
        `print(1 + 1)` once came back empty). Asks for kernel_info until its idle status arrives."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            asked = self.kc.kernel_info()
            self.kc.get_shell_msg(timeout=max(1.0, deadline - time.monotonic()))
            try:
                while True:
                    msg = self.kc.get_iopub_msg(timeout=1)
                    if msg["parent_header"].get("msg_id") == asked and msg["msg_type"] == "status" \
                            and msg["content"]["execution_state"] == "idle":
                        return
            except queue.Empty:
                continue
        raise AssertionError(f"the kernel's IOPub said nothing in {seconds} s")

    def run(self, code, timeout=120):
        """Execute `code`; (its stdout, the reply's status, the error's name or None)."""
        out = []

        def hook(msg):
            if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
                out.append(msg["content"]["text"])

        reply = self.kc.execute_interactive(code, timeout=timeout, output_hook=hook)
        content = reply["content"]
        return "".join(out), content["status"], content.get("ename")

    def ok(self, code, timeout=120):
        out, status, error = self.run(code, timeout)
        assert status == "ok", (code, error, out)
        return out.strip()

    def start_a_paused_run(self):
        """A live run on 3 worker processes, its workers started and then paused; the workers' and
        every other descendant's Process."""
        self.ok(START)
        assert self.ok(PUSHED) == "True True", "the live run never got going"
        self.ok("live.pause()")
        assert self.ok("print(live.state['paused'], live.running)") == "True True"
        descendants = psutil.Process(self.pid).children(recursive=True)
        self.pids.update(p.pid for p in descendants)
        workers = [p for p in descendants if p.ppid() != self.pid]   # the fork server's children
        assert len(workers) == 3, [(p.pid, p.ppid(), p.name()) for p in descendants]
        return workers, descendants

    def close(self):
        """Leave nothing: the client stopped, and every process ever noted killed by its PID."""
        try:
            self.kc.stop_channels()
        finally:
            left = []
            for pid in sorted(self.pids):
                try:
                    proc = psutil.Process(pid)
                    proc.kill()
                    left.append(proc)
                except psutil.Error:
                    pass
            psutil.wait_procs(left, timeout=10)
            try:
                self.km.cleanup_resources()
            except Exception:                                        # noqa: BLE001
                pass


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    (tmp_path / "runtime").mkdir()
    k = Kernel(tmp_path / "runtime")
    try:
        yield k
    finally:
        k.close()


def still_running(procs, seconds=GONE_WITHIN):
    """The processes among `procs` still running after waiting up to `seconds` for them to end."""
    _, alive = psutil.wait_procs(procs, timeout=seconds)
    return [(p.pid, p.name()) for p in alive if _running(p)]


def _running(proc):
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_graceful_restart_leaves_nothing_running(kernel):
    _, everything = kernel.start_a_paused_run()
    kernel.km.restart_kernel(now=False)                   # as JupyterLab's Restart does
    assert still_running(everything) == []
    kernel.pids.add(kernel.pid)                           # the new kernel works as before
    kernel.wait_for_iopub()
    assert kernel.ok("print(1 + 1)") == "2"


@pytest.mark.timeout(180)
@pytest.mark.parametrize("how", ["restart now", "SIGKILL to the kernel alone"])
def test_a_killed_kernel_leaves_nothing_running(kernel, how):
    _, everything = kernel.start_a_paused_run()
    if how == "restart now":
        kernel.km.restart_kernel(now=True)                 # SIGKILL to the kernel's process group
        kernel.pids.add(kernel.pid)
    else:
        psutil.Process(kernel.pid).send_signal(signal.SIGKILL)    # nobody else is told
    assert still_running(everything) == [], "a worker (or helper) outlived its kernel"


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_an_interrupt_stops_a_run_only_while_a_cell_waits_for_it(kernel):
    workers, _ = kernel.start_a_paused_run()
    kernel.ok("live.resume()")
    before = int(kernel.ok("print(live.state['pushes'])"))
    kernel.km.interrupt_kernel()                          # nobody waits: the run goes on
    time.sleep(1.0)
    state = kernel.ok("time.sleep(0.5); print(live.running, live.state['pushes'])").split()
    assert state[0] == "True" and int(state[1]) > before, "an idle interrupt disturbed the run"
    assert sorted(still_running(workers, seconds=0)) == sorted((w.pid, w.name()) for w in workers)

    # stop_on_error=False: after a cell's error ipykernel aborts the requests that reach it until a
    # message it posts itself comes back round (stop_on_error_timeout); under load the next cell
    # below arrived before it and came back "aborted" (a learner's next cell comes seconds later).
    kernel.kc.execute("print('waiting', flush=True)\nrun = live.result()", stop_on_error=False)
    deadline, waiting = time.monotonic() + 30, False
    while not waiting and time.monotonic() < deadline:    # the cell is in live.result() now
        msg = kernel.kc.get_iopub_msg(timeout=30)
        waiting = msg["msg_type"] == "stream" and "waiting" in msg["content"]["text"]
    assert waiting, "the cell never started waiting"
    time.sleep(0.5)
    kernel.km.interrupt_kernel()
    reply = kernel.kc.get_shell_msg(timeout=60)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    assert kernel.ok("print(live.state['running'])") == "False"
    assert still_running(workers) == [], "the interrupted run left workers running"
    out = kernel.ok("print(live.result().trace.controls[-1].what)")
    assert out == "stop", out
