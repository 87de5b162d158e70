"""Grade many one-cell variants of a notebook in one Python, running what comes before each
variant once.

    python tests/forked_grading.py REQUEST.json RESULT.json

REQUEST holds the notebook's code cells ({"source", "graded"}), the variants ({"index": the cell a
variant replaces, "source"}), the folder the notebook runs in and a timeout per variant. The
notebook runs once, cell by cell, in IPython's InteractiveShell (the shell a Jupyter kernel wraps).
Just before a cell that variants replace, the process forks once per variant: the child runs the
rest of the notebook with the variant in that cell and reports which graded cells raised, while
the parent goes on with the original cell. RESULT: {"variants": for each variant,
[index, error] of each graded cell that lost its points (it raised, or never ran because the
variant's run timed out), "original": the same for the notebook as given}.

Why it grades as a fresh kernel per variant does (asyncps.grade's rule, as nbgrader's: a graded
cell earns its points when it runs without an error): the cells before a variant are the same in
both, and a run is a function of its cells (asyncps's determinism contract: no global random
state, seeds passed). tests/test_wrong_answers.py checks that the solution itself, run here,
loses nothing, and the real kernels of asyncps.grade (tests/test_assignments.py) and nbgrader
(tests/test_nbgrader.py) grade the solution, a blank and a mixed submission.

Two variants at a time beside the notebook's own run ("parallel" in REQUEST): they share the
folder the notebook runs in, as two kernels grading at once would (no assignment writes a file).
Torch and BLAS use one thread here (GNU OpenMP's threads do not survive a fork); a thread count
changes no bits of these runs (measured: conftest.py).
"""
import json
import os
import select
import signal
import sys
import time


def run_cell(shell, source):
    """None, or the error the cell raised as 'Name: message'."""
    result = shell.run_cell(source, store_history=False)
    error = result.error_before_exec or result.error_in_exec
    return None if result.success else f"{type(error).__name__}: {str(error)[:300]}"


def run_cells(shell, cells, start):
    """Run cells[start:]; return [index, error] for each graded cell that raised."""
    lost = []
    for i in range(start, len(cells)):
        error = run_cell(shell, cells[i]["source"])
        if error is not None and cells[i]["graded"]:
            lost.append([i, error])
    return lost


def start_child(shell, cells, index, source, timeout):
    """Fork; the child runs the notebook from `index` with `source` there and writes its lost
    cells to a pipe. Returns (pid, the pipe's end to read, index, deadline)."""
    read, write = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:                                              # the child
        os.setpgid(0, 0)                                      # its worker processes: one group
        os.close(read)
        status = 1
        try:
            cells = list(cells)
            cells[index] = dict(cells[index], source=source)
            lost = run_cells(shell, cells, index)
            os.write(write, json.dumps(lost).encode())
            status = 0
        finally:
            os._exit(status)                                  # no atexit, no parent's finalizers
    os.close(write)
    return pid, read, index, time.monotonic() + timeout


def finish(child, cells):
    """What a child reported, once it ended (a timeout or a crash loses every graded cell from its
    variant on, as a kernel that stops does)."""
    pid, read, index, deadline = child
    chunks = []
    while True:
        ready, _, _ = select.select([read], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:                                         # timed out: stop it and its children
            os.killpg(pid, signal.SIGKILL)
            break
        chunk = os.read(read, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    try:
        return json.loads(b"".join(chunks))
    except ValueError:
        return [[i, "did not run: the variant's run timed out or crashed"]
                for i in range(index, len(cells)) if cells[i]["graded"]]


def main(request_path, result_path):
    with open(request_path) as f:
        request = json.load(f)
    cells, variants = request["cells"], request["variants"]
    os.chdir(request["folder"])
    import matplotlib
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    matplotlib.use("Agg")
    config = Config()
    config.HistoryManager.enabled = False                     # no history database, no thread
    shell = InteractiveShell.instance(config=config)
    results = [None] * len(variants)
    by_cell = {}
    for k, variant in enumerate(variants):
        by_cell.setdefault(variant["index"], []).append(k)
    baseline, running = [], []                                # running: (variant, child)
    for i, cell in enumerate(cells):
        for k in by_cell.get(i, []):
            while len(running) >= request.get("parallel", 2):
                done, child = running.pop(0)
                results[done] = finish(child, cells)
            running.append((k, start_child(shell, cells, i, variants[k]["source"], request["timeout"])))
        error = run_cell(shell, cell["source"])
        if error is not None and cell["graded"]:
            baseline.append([i, error])
    for done, child in running:
        results[done] = finish(child, cells)
    with open(result_path, "w") as f:
        json.dump({"variants": results, "original": baseline}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
