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
REPRODUCIBLE = {"TQDM_DISABLE": "1", "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
                "MKL_CBWR": "AVX2"}
for _name, _value in REPRODUCIBLE.items():
    os.environ.setdefault(_name, _value)


# pytest-xdist (make test: --dist loadfile): a test file runs on one worker from its first test to
# its last — a notebook's cells in order in one kernel, a module's servers and fixtures built once —
# except the files named here, whose tests are independent and long (one assignment's catalogue of
# wrong answers each): those spread over the workers test by test, so that no single file is the
# run's longest chain. (xdist's own --dist loadgroup would say this with marks, but with pytest 9.2
# it ignores them: it renames item._nodeid, which pytest no longer reads; pytest-xdist#1386.)
SPREAD = {"tests/test_wrong_answers.py", "tests/test_assignments.py"}

try:
    import pytest
except ImportError:        # scripts/notebooks.py imports this file for REPRODUCIBLE, with no pytest
    pytest = None

if pytest is not None:
    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(config, log):
        if config.getvalue("dist") != "loadfile":
            return None                                   # xdist's own scheduler for that mode
        from xdist.scheduler import LoadScopeScheduling

        class ByFileExceptSpread(LoadScopeScheduling):
            def _split_scope(self, nodeid):
                path = nodeid.split("::", 1)[0]
                return nodeid if path in SPREAD else path

        return ByFileExceptSpread(config, log)
