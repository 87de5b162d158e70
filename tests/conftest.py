import pytest

import asyncps as aps


@pytest.fixture
def lsq():
    return aps.problems.LeastSquares(n=512, dim=10, seed=0)
