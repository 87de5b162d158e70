"""The package's structure, checked: no import cycle, layers that only import upwards, one run
configuration passed whole, engines and widgets that ask a policy instead of testing its name,
and an installed package that never reads the repository's tests/."""
import ast
from dataclasses import fields
from pathlib import Path

import pytest

import asyncps as aps

PACKAGE = Path(aps.__file__).parent
LAYERS = ["problems", "core", "engines", "widgets"]     # each may import only those before it...
GROUND = {"problems", "core"}                           # ...except that these two share base types


def modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def imports(name, path):
    """Every asyncps module `name` imports, at the top or inside a function."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("asyncps")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("asyncps"):
                continue
            found.add(target)
            for alias in node.names:                     # `from . import x` imports module x
                if f"{target}.{alias.name}" in dict(modules()):
                    found.add(f"{target}.{alias.name}")
    return found - {name}


GRAPH = {name: imports(name, path) for name, path in modules()}


def _without_packages(graph):
    """Edges to a package's __init__ only re-export: follow module-to-module edges."""
    names = set(graph)
    packages = {n for n in names if any(m.startswith(n + ".") for m in names)}
    return {n: {m for m in deps if m not in packages} for n, deps in graph.items() if n not in packages}


def test_no_import_cycle_anywhere_in_the_package():
    graph = _without_packages(GRAPH)
    state, cycles = {}, []

    def visit(node, path):
        state[node] = "open"
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                cycles.append(path[path.index(dep):] + [dep] if dep in path else [node, dep])
            elif dep not in state:
                visit(dep, path + [dep])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, f"import cycles: {cycles}"


def _layer(name):
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


@pytest.mark.parametrize("name", sorted(n for n in GRAPH if _layer(n)))
def test_each_layer_imports_only_the_layers_below_it(name):
    mine = LAYERS.index(_layer(name))
    for dep in GRAPH[name]:
        theirs = _layer(dep)
        if theirs is None or theirs == _layer(name) or {theirs, _layer(name)} <= GROUND:
            continue
        assert LAYERS.index(theirs) < mine, f"{name} imports {dep}: a lower layer imports a higher one"


def test_the_core_imports_numpy_only():
    for name, path in modules():
        if _layer(name) != "core":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0):
                top = (node.names[0].name if isinstance(node, ast.Import) else node.module).split(".")[0]
                assert top in {"numpy", "math", "json", "numbers", "os", "tempfile", "zipfile",
                               "dataclasses", "typing", "pathlib", "collections", "difflib", "inspect", "heapq"}, \
                    f"{name} imports {top}"


# -- one configuration, passed whole ---------------------------------------------------------
RUN_ARGUMENTS = {f.name for f in fields(aps.RunConfig)} - {"apply", "average", "gate"}
# What may name run arguments: the configuration itself, the entry points, and the learner-hook
# signatures (apply(..., lr), rate(lr, staleness)), which are the lecture's vocabulary.
ENTRY_POINTS = {"asyncps/core/config.py", "asyncps/engines/compare.py", "asyncps/launch.py"}
HOOK_SIGNATURES = {"apply", "push", "average", "round_", "gate", "gate_", "__call__", "constant",
                   "divide_by_staleness", "rate_", "make_policy", "check"}


def _below_entry_points():
    for name, path in modules():
        relative = str(path.relative_to(PACKAGE.parent))
        if _layer(name) in ("core", "engines") and relative not in ENTRY_POINTS:
            yield relative, path


@pytest.mark.parametrize("relative,path", list(_below_entry_points()))
def test_no_function_below_the_entry_points_takes_the_run_s_arguments_one_by_one(relative, path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in HOOK_SIGNATURES:
            named = {a.arg for a in node.args.args + node.args.kwonlyargs} & RUN_ARGUMENTS
            assert len(named) < 2, (f"{relative}: {node.name}() takes {sorted(named)} one by one; "
                                    f"pass the RunConfig")


# -- engines and widgets ask the policy -------------------------------------------------------
def _asks_by_name_or_infinity(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                if isinstance(side, ast.Constant) and side.value in aps.POLICIES:
                    yield f"compares with {side.value!r} (line {node.lineno})"
                if ast.unparse(side) in ("float('inf')", "math.inf", "np.inf", "numpy.inf"):
                    yield f"compares with infinity (line {node.lineno})"


@pytest.mark.parametrize("name", sorted(n for n in GRAPH if _layer(n) in ("engines", "widgets")))
def test_no_engine_or_widget_tests_a_policy_by_name_or_a_bound_against_infinity(name):
    path = dict(modules())[name]
    found = list(_asks_by_name_or_infinity(ast.parse(path.read_text())))
    assert not found, f"{name}: {found}; ask the Policy (policy.waits, policy.averages) instead"


def test_the_installed_package_never_reads_the_repository_s_tests():
    for name, path in modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert node.value != "tests" and not node.value.startswith("tests/"), \
                    f"{name} names the repository's tests/ folder"


def test_staleness_is_only_a_push_s_lag_in_the_public_api():
    import inspect

    for entry in (aps.simulate, aps.train, aps.compare, aps.widgets.Playground):
        assert "staleness" not in inspect.signature(entry).parameters, entry
    assert "staleness" not in {f.name for f in fields(aps.RunConfig)}
    assert "staleness" in {f.name for f in fields(aps.Push)}
    assert "staleness" not in aps.LR_SCHEDULES
