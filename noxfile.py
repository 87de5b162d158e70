"""The test matrix: the unit and engine tests on every Python and torch that pyproject.toml declares.

    make test-matrix                          every combination below (nox, with uv making the venvs)
    make test-matrix ONLY=3.12-torch2.11.0    one of them (`make test-matrix LIST=1` lists them)
    make test-matrix ONLY=floors              every dependency at its declared lower bound

Each combination gets a venv of its own under .nox/ with that Python, that torch from PyPI and
asyncps[torch]; it runs TESTS (the engines, the problems, the torch models and the faults: no
notebooks, no browser). The declared range is what is tested here: `torch>=OLDEST` and
`requires-python` in pyproject.toml, NEWEST the latest torch when this file was last changed,
and `floors` installs the lowest version every declared dependency allows (numpy, matplotlib,
ipywidgets, scikit-learn, the test tools...) on the oldest Python with the oldest torch.

What it downloads: PyPI's torch for Linux is the CUDA build, so each torch version brings its
nvidia-* packages (about 3 GB, once per torch version: uv's cache keeps them, and each venv links
to the cache) and one torch wheel per Python (about 0.9 GB each). Nothing here uses
PIP_FIND_LINKS or a pip config (uv reads neither), so this machine's wheel cache hides nothing.
`make lab` and `make test` are unaffected: their .venv keeps the CPU build.
"""
import nox

PYTHONS = ["3.11", "3.12", "3.13"]     # pyproject.toml: requires-python = ">=3.11"
OLDEST, NEWEST = "2.6.0", "2.15.0"     # pyproject.toml: torch>=OLDEST (tests/test_skeleton.py checks)
GPU_STACK = ("3.12", "2.11.0")         # the GPU machine's (issue 26: rpc crashed there, not on 2.13)
MATRIX = [(python, torch) for python in PYTHONS for torch in (OLDEST, NEWEST)] + [GPU_STACK]
FLOORS = (PYTHONS[0], OLDEST)          # with every other dependency at its declared lower bound too
TESTS = ["tests/test_torch_models.py", "tests/test_engines.py", "tests/test_problems.py",
         "tests/test_server.py", "tests/test_simulate.py", "tests/test_trace.py", "tests/test_hooks.py",
         "tests/test_hooks_on_engines.py", "tests/test_faults.py", "tests/test_live.py",
         "tests/test_controls.py", "tests/test_ssp_property.py", "tests/test_checkpoint.py",
         "tests/test_torchrun.py", "tests/test_launch.py", "tests/test_main_guard.py"]
IN_A_KERNEL = ["tests/test_self_check.py", "tests/test_from_a_notebook.py", "tests/test_live_kernel.py",
               "tests/test_assignments.py", "tests/test_wrong_answers.py"]   # nbformat, nbclient, a kernel
TEST_TOOLS = ["pytest>=8.0", "hypothesis>=6.100", "pytest-timeout>=2.2", "psutil>=6.0"]

nox.options.default_venv_backend = "uv"
nox.options.reuse_venv = "yes"          # a second run reinstalls nothing that is already there


@nox.session(name="tests")
@nox.parametrize(("python", "torch"), MATRIX, ids=[f"{p}-torch{t}" for p, t in MATRIX])
def tests(session, torch):
    """The unit and engine tests on one Python and one torch."""
    session.install(f"torch=={torch}", "-e", ".[torch]", *TEST_TOOLS)
    run_tests(session)


@nox.session(name="floors", python=FLOORS[0], reuse_venv=False)   # lowest-direct keeps what is there
def floors(session):
    """The same tests, and those that run notebooks in a kernel, with every dependency of the
    base, torch and lab lists at its declared lower bound (uv's lowest-direct resolution)."""
    session.install("--resolution", "lowest-direct", f"torch=={FLOORS[1]}", "-e", ".[torch,lab]",
                    *TEST_TOOLS)
    run_tests(session, *IN_A_KERNEL)


def run_tests(session, *more):
    session.run("python", "-c", "import sys, numpy, torch; print('versions: Python', "
                "sys.version.split()[0], '| torch', torch.__version__, '| numpy', numpy.__version__)")
    session.run("python", "-m", "pytest", *TESTS, *more, "-m", "not slow", "-p", "no:cacheprovider",
                "-o", "addopts=-ra --strict-markers", *session.posargs)
