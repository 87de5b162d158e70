"""The real engines work from a Jupyter kernel, with a problem defined in a notebook cell."""
import nbformat
import pytest
from engines import leftover_processes

from asyncps import grade

CELLS = [
    "import numpy as np\nimport asyncps as aps",
    "target = np.array([2.0, -1.0])\n"
    "prob = aps.problems.from_functions(lambda x: float(np.sum((x - target) ** 2)),\n"
    "                                   lambda x: 2 * (x - target), x0=[0.0, 0.0])",
    "for engine in ['threads', 'processes', 'rpc']:\n"
    "    run = aps.train(prob, workers=2, lr=0.1, steps=200, engine=engine)\n"
    "    assert np.allclose(run.params, target, atol=1e-6), (engine, run.params)\n"
    "    assert aps.violations(run.trace) == []\n"
    "print('ok')",
]


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_every_engine_runs_a_cell_defined_problem_in_a_kernel():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    grade.execute(nb, timeout=180)              # a kernel on Unix sockets, stopped at the end
    assert [o.get("text") for o in nb.cells[-1].outputs] == ["ok\n"]   # no stray warnings
    assert leftover_processes() == []
