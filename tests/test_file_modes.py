"""Files a user can share (issue 24): every file the package writes (trace JSON, Chrome trace, run,
checkpoint) gets the mode open() would give it, 0o666 less the umask, not mkstemp's 0o600."""
import os
import stat

import pytest

import asyncps as aps

LSQ = aps.problems.LeastSquares(n=128, dim=5, seed=0)
pytestmark = pytest.mark.skipif(os.name == "nt", reason="Windows has no umask or mode bits")


@pytest.fixture(params=[0o022, 0o077, 0o002], ids=["022", "077", "002"])
def umask(request):
    before = os.umask(request.param)
    yield request.param
    os.umask(before)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_every_file_written_has_the_mode_the_umask_allows(umask, tmp_path):
    run = aps.train(LSQ, workers=2, lr=0.05, steps=20, engine="threads",
                    checkpoint=tmp_path / "checkpoint.npz", checkpoint_every=10)
    run.trace.to_json(tmp_path / "trace.json")
    run.trace.to_chrome_trace(tmp_path / "chrome.json")
    run.save(tmp_path / "run.npz")
    written = [tmp_path / name for name in ("trace.json", "chrome.json", "run.npz", "checkpoint.npz")]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in written)  # no *.tmp
    assert {p.name: oct(mode(p)) for p in written} == {p.name: oct(0o666 & ~umask) for p in written}


def test_a_file_written_again_gets_the_mode_of_the_umask_now(tmp_path):
    path = tmp_path / "trace.json"
    trace = aps.simulate(LSQ, workers=2, steps=5).trace
    before = os.umask(0o077)
    try:
        trace.to_json(path)
        assert mode(path) == 0o600
        os.umask(0o022)
        trace.to_json(path)
        assert mode(path) == 0o644
    finally:
        os.umask(before)
