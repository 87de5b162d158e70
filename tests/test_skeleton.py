"""The project's skeleton: two commands, one CI script, dependency lists that agree, a light import."""
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"torch": "pytorch",         # where conda-forge spells a package differently
               "playwright": "playwright-python"}   # conda-forge's `playwright` is the Node tool


def _pyproject_requirements(extra="test"):
    """What `pip install .[extra]` asks for: the base list and the extra, self-references expanded."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    optional = project["optional-dependencies"]

    def expand(reqs):
        for req in reqs:
            self_ref = re.fullmatch(r"asyncps\[([\w,]+)\]", req.replace(" ", ""))
            if self_ref:
                for name in self_ref.group(1).split(","):
                    yield from expand(optional[name])
            else:
                yield req

    parsed = {}
    for req in expand(project["dependencies"] + optional[extra]):
        name, spec = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*(.*)", req).groups()
        parsed[CONDA_NAMES.get(name.lower(), name.lower())] = spec.split("#")[0].replace(" ", "")
    return parsed


def _conda_requirements():
    parsed, in_pip = {}, False
    text = (ROOT / "environment.yml").read_text()
    text = text[text.index("dependencies:"):]
    for line in text.splitlines():
        if re.match(r"\s*- pip:", line):
            in_pip = True
            continue
        m = re.fullmatch(r"  - ([A-Za-z0-9_.-]+)\s*([<>=!~].*)?", line)
        if m and not in_pip:
            parsed[m.group(1).lower()] = (m.group(2) or "").replace(" ", "")
    parsed.pop("python"), parsed.pop("pip")
    return parsed


def test_environment_yml_lists_the_same_dependencies_as_pyproject():
    assert _conda_requirements() == _pyproject_requirements()


def test_readme_opens_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    commands = re.findall(r"^make (\w+)", text, flags=re.M)
    assert commands[:2] == ["lab", "test"]
    first_block = text.split("```")[1].splitlines()[1:]             # drop the fence's language
    assert [line.split("#")[0].strip() for line in first_block] == ["make lab", "make test"]


def test_ci_runs_make_test_and_one_more_combination_of_the_matrix():
    lines = [line.strip() for line in (ROOT / ".ci/run").read_text().splitlines()
             if line.strip() and not line.strip().startswith("#")]
    assert lines[-2] == "make test" and "set -eu" in lines        # a failure of either fails CI
    extra = re.fullmatch(r"(?:exec )?make test-matrix ONLY=(\S+)", lines[-1])
    assert extra and extra.group(1) in _matrix()["ids"]
    assert all(line.startswith(("set ", "cd ", "export CI=true")) for line in lines[:-2])
    assert "|| true" not in (ROOT / ".ci/run").read_text()


def _matrix():
    """What noxfile.py tests (read, not imported: nox is not in the test venv)."""
    import ast

    values = {}
    for node in ast.parse((ROOT / "noxfile.py").read_text()).body:
        if isinstance(node, ast.Assign):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                continue
            for target in node.targets:
                names = [getattr(t, "id", None) for t in getattr(target, "elts", [target])]
                for name, v in zip(names, value if len(names) > 1 else [value]):
                    values[name] = v
    pythons, oldest, newest, gpu = values["PYTHONS"], values["OLDEST"], values["NEWEST"], values["GPU_STACK"]
    pairs = [(p, t) for p in pythons for t in (oldest, newest)] + [gpu]
    return {"pythons": pythons, "oldest": oldest, "newest": newest,
            "ids": [f"{p}-torch{t}" for p, t in pairs]}


def test_only_tested_versions_are_declared():
    """pyproject.toml's lower bounds are the oldest the matrix runs, and the README lists the matrix."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    matrix = _matrix()
    assert project["requires-python"] == f">={matrix['pythons'][0]}"
    assert _pyproject_requirements("torch")["pytorch"] in (f">={matrix['oldest']}",
                                                          f">={matrix['oldest'].removesuffix('.0')}")
    readme = (ROOT / "README.md").read_text()
    tested = re.search(r"^Tested versions: (.*?)\n\n", readme, flags=re.M | re.S)   # its paragraph
    assert tested, "README.md has no 'Tested versions:' line"
    for version in [*matrix["pythons"], matrix["oldest"], matrix["newest"]]:
        assert version in tested.group(1), f"README's tested versions do not name {version}"


def test_makefile_installs_cpu_torch_alone_before_the_package():
    text = (ROOT / "Makefile").read_text()
    assert "TORCH_REQ   = torch==$(TORCH_VERSION)+cpu" in text
    assert "--index-url https://download.pytorch.org/whl/cpu" in text
    recipe = text[text.index("$(LAB): pyproject.toml"):]
    assert recipe.index("torch") < recipe.index("packages EXTRAS=torch,lab")
    assert '-e ".[$(EXTRAS)]"' in text and '"$(TORCH_REQ)" -e' in text     # the pin stays in force


def test_make_lab_opens_the_first_lecture_at_the_repository_root():
    text = (ROOT / "Makefile").read_text()
    start = re.search(r"^START\s*\?= /lab/tree/(\S+)", text, flags=re.M).group(1)
    assert (ROOT / start).is_file() and start == "notebooks/00-start-here.ipynb"
    assert "--ServerApp.root_dir=. --LabApp.default_url=$(START)" in text


def test_the_notebooks_readme_names_every_notebook():
    text = (ROOT / "notebooks" / "README.md").read_text()
    missing = [nb.stem for nb in (ROOT / "notebooks").glob("*.ipynb") if f"`{nb.stem}`" not in text]
    assert not missing and "not written" not in text


def test_one_version_source_a_license_and_a_changelog():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" in project["project"]["dynamic"] and "version" not in project["project"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "asyncps.__version__"}
    import asyncps
    from importlib.metadata import version
    assert version("asyncps") == asyncps.__version__
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert "## Unreleased" in (ROOT / "CHANGELOG.md").read_text()


def test_importing_asyncps_imports_numpy_only():
    code = ("import sys, asyncps; heavy = [m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'ipywidgets', 'IPython', 'jupyter_core', 'matplotlib')]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_core_imports_nothing_but_numpy_and_itself():
    for path in (ROOT / "asyncps" / "core").glob("*.py"):
        imports = re.findall(r"^\s*(?:from|import)\s+([\w.]+)", path.read_text(), flags=re.M)
        outside = {m for m in imports if not m.startswith(".") and m.split(".")[0] not in
                   {"numpy", "math", "numbers", "json", "dataclasses", "pathlib", "typing", "os", "tempfile", "zipfile", "collections", "difflib", "inspect", "heapq"}}
        assert not outside, f"{path.name} imports {outside}"


def test_course_folders_exist():
    for folder in ("asyncps", "notebooks", "exercises", "solutions", "tests"):
        assert (ROOT / folder).is_dir()


def test_servers_bind_loopback_with_a_token():
    text = (ROOT / "Makefile").read_text()
    lab = text[text.index("\nlab:"):].split("\n\n")[0]
    demo = text[text.index("\ndemo:"):].split("\n\n")[0]
    assert "--ServerApp.ip=127.0.0.1" in lab and "--ServerApp.token=''" not in lab   # Lab makes a token
    assert "--Voila.ip=127.0.0.1" in demo and "JUPYTER_TOKEN=" in demo and "--Voila.auto_token=True" in demo


def test_no_test_or_notebook_opens_a_port_beyond_loopback():
    wide = ("0.0.0.0", "ip='*'", 'ip="*"', "--ip=*", "allow_remote=True")
    for path in list((ROOT / "tests").rglob("*.py")) + list((ROOT / "notebooks" / "src").glob("*.py")):
        if path.name == "test_skeleton.py":
            continue
        code = [line for line in path.read_text().splitlines() if not line.lstrip().startswith("#")]
        text = "\n".join(code)                          # code only: prose may explain the options
        for needle in wide:
            assert needle not in text, f"{path.relative_to(ROOT)} contains {needle}"


def test_the_rpc_engine_says_where_it_listens(caplog):
    import logging

    import asyncps as aps
    caplog.set_level(logging.INFO, logger="asyncps.rpc")
    aps.train(aps.problems.Quadratic(curvature=[1.0], x0=[1.0]), workers=2, steps=5, engine="rpc")
    assert any("listening on 127.0.0.1" in r.getMessage() for r in caplog.records)
