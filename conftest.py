"""Loaded by every pytest run in this repository (tests/, notebooks/, solutions/ or one notebook),
and by scripts/notebooks.py, which executes the notebooks whose outputs nbval compares."""
import os

# No progress bars here or in nbval's kernels (they inherit this): a bar appears only when a run
# lasts over 2 s, so with bars the committed notebook outputs would depend on the machine's speed.
# torch's CPU kernels at one instruction set on every x86-64 machine with AVX2: unpinned, torch
# (ATen), oneDNN (the CNN's convolutions) and MKL (matrix products) pick the widest the CPU has,
# and an AVX-512 machine sums in another order; a digits run then ends a digit apart, and a lr
# that reached 90 % on one machine misses on the other (08a's best sync lr was 0.8 on one, 0.4 on
# another). Each of the three moves a digits run when set otherwise; AVX2 costs nothing here.
# And one thread for torch's (OpenMP's) and MKL's pools: a sum split over the cores adds in an order
# that depends on how many there are, and the suite runs three processes on 2 cores, where every
# kernel's two spinning threads fought the others' (08b under nbval beside the suite: 137 CPU-s with
# two threads, 75 with one, the same outputs).
REPRODUCIBLE = {"TQDM_DISABLE": "1", "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
                "MKL_CBWR": "AVX2", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
for _name, _value in REPRODUCIBLE.items():
    os.environ.setdefault(_name, _value)


# nbval's kernels on Unix sockets, as asyncps.grade's (grade.kernel_manager): over TCP a kernel binds
# ports its manager found free a moment before, and with the suite's other kernels and servers
# starting beside it one was taken in between: solutions/03c's kernel "didn't respond in 60
# seconds" and its 18 cells failed, on a quiet fresh clone.
def _nbval_on_unix_sockets():
    try:
        import nbval.kernel
    except ImportError:
        return
    import atexit
    import itertools
    import shutil
    import tempfile

    folder, count = None, itertools.count()
    base = nbval.kernel.KernelManager

    class UnixSocketKernelManager(base):
        def __init__(self, **kwargs):
            nonlocal folder
            if folder is None:
                folder = tempfile.mkdtemp(prefix="nbval-kernels-")
                atexit.register(shutil.rmtree, folder, ignore_errors=True)
            super().__init__(transport="ipc", ip=os.path.join(folder, f"kernel{next(count)}"), **kwargs)

    if os.name == "posix" and base.__name__ == "KernelManager":         # not patched already
        nbval.kernel.KernelManager = UnixSocketKernelManager


# pytest-xdist (make test: --dist loadfile): a test file runs on one worker from its first test to
# its last — a notebook's cells in order in one kernel, a module's servers and fixtures built once —
# except the files named here, whose tests are independent and long (one assignment's catalogue of
# wrong answers each, one frontend and trust each): those spread over the workers test by test, so
# that no single file is the run's longest chain. (xdist's own --dist loadgroup would say this with
# marks, but with pytest 9.2 it ignores them: it renames item._nodeid, which pytest no longer
# reads; pytest-xdist#1386.)
# The units go out longest first (tests/durations.json: seconds per unit, measured; a unit it does
# not know counts 1 s a test): xdist's own order puts the files with most tests first, and so the
# single long tests last, where one worker ran a 261 s test alone while the other had nothing.
# `python scripts/durations.py LOG` writes the file from a `--durations=0` run's output.
SPREAD = {"tests/test_wrong_answers.py", "tests/test_assignments.py", "tests/browser/test_first_sight.py"}
DURATIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests", "durations.json")


def unit_of(nodeid):
    """The unit of work a worker takes whole: the test file, or the test in a SPREAD file."""
    path = nodeid.split("::", 1)[0]
    return nodeid if path in SPREAD else path


try:
    import pytest
except ImportError:        # scripts/notebooks.py imports this file for REPRODUCIBLE, with no pytest
    pytest = None

if pytest is not None:
    _nbval_on_unix_sockets()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(config, log):
        if config.getvalue("dist") != "loadfile":
            return None                                   # xdist's own scheduler for that mode
        import json

        from xdist.scheduler import LoadScopeScheduling

        try:
            with open(DURATIONS) as f:
                measured = json.load(f)
        except FileNotFoundError:
            measured = {}

        class LongestFirst(LoadScopeScheduling):
            def _split_scope(self, nodeid):
                return unit_of(nodeid)

            def _assign_work_unit(self, node):
                # the queue is built (in collection order, or by test count) when this is first
                # called: order it once, longest first (the workers' collections keep their order:
                # xdist sends each worker indices into its own)
                if not getattr(self, "_longest_first", False):
                    queue = self.workqueue
                    for unit in sorted(queue, key=lambda u: -measured.get(u, float(len(queue[u])))):
                        queue.move_to_end(unit)
                    self._longest_first = True
                super()._assign_work_unit(node)

        return LongestFirst(config, log)
