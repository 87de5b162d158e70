import os
import shutil
import subprocess

import pytest

import asyncps as aps


@pytest.fixture
def lsq():
    return aps.problems.LeastSquares(n=512, dim=10, seed=0)


def namespaces_refused():
    """Why a private network namespace (`unshare -n`, its loopback up) cannot be made here, or None."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "no `unshare` or `ip` command (util-linux, iproute2)"
    done = subprocess.run(["unshare", "-n", "ip", "link", "set", "lo", "up"], capture_output=True,
                          text=True, timeout=30)
    if done.returncode != 0:
        return f"`unshare -n` is not permitted here ({done.stderr.strip()[:120]}): run as root"
    return None


@pytest.fixture(scope="module")
def private_network():
    """Tests that run a tool in a private network namespace: skipped where none can be made, saying
    why, and failed under CI=true (CI runs as root, where one can)."""
    why = namespaces_refused()
    if why is not None and os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI=true: {why}")
    if why is not None:
        pytest.skip(why)
