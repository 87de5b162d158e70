# Two commands do all set-up on a fresh machine with Python 3.11+ and make:
#   make lab    create .venv, install asyncps and its dependencies, start JupyterLab on notebooks/
#   make test   create .venv if missing, run the whole test suite (browser tests included:
#               as root, where Chromium is missing, it installs Debian's chromium first)
#   make demo   serve the Playground with Voila on 127.0.0.1 (classroom mode)
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed
# The CPU build of torch, installed before the package so that its range
# (torch>=2.3) is already satisfied and pip never pulls a multi-GB CUDA build.
TORCH  ?= torch==2.13.0

CHROMIUM ?= /usr/bin/chromium

.PHONY: lab test test-fast demo venv browser bench bench-quick reliability notebooks slides solutions exercises grade check student-bundle clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install "$(TORCH)"
	$(PY) -m pip install -e ".[test]"
	touch $(STAMP)

# Debian's Chromium for the browser tests (Playwright drives it; never `playwright install`).
browser:
	@if [ -x "$(CHROMIUM)" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing Debian's chromium for the browser tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "make: no Chromium at $(CHROMIUM) and not root: the browser tests will skip (CI=true: fail)"; fi

lab: $(STAMP)
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks --ServerApp.ip=127.0.0.1 --no-browser \
		$$([ "$$(id -u)" = 0 ] && echo --allow-root)   # containers and CI run as root

demo: $(STAMP)
	$(VENV)/bin/voila notebooks/playground.ipynb --no-browser --Voila.ip=127.0.0.1 \
		--token=$$($(PY) -c "import secrets; print(secrets.token_hex(16))")

test: $(STAMP) browser
	$(PY) -m pytest

# the developers' loop: the unit tests only (no notebooks, no browser, nothing marked slow); CI runs make test
test-fast: $(STAMP)
	$(PY) -m pytest tests --ignore=tests/browser -m "not slow" -p no:nbval -o addopts="-ra --strict-markers"

notebooks: $(STAMP)
	$(PY) scripts/notebooks.py

# the assignments: solutions/src/*.py -> solutions/*.ipynb (executed) -> exercises/*.ipynb (stubs)
solutions: $(STAMP)
	$(PY) scripts/notebooks.py --solutions

exercises: $(STAMP)
	$(PY) -m asyncps.assignments solutions exercises

# instructors: grade a student's notebook with the solutions' tests, hidden ones included
grade: $(STAMP)
	$(PY) -m asyncps.grade $(NB) --solutions solutions

# students: check your own notebook against the visible tests (never reads solutions/)
check: $(STAMP)
	$(PY) -m asyncps.check $(NB)

# what a course hands to students: build/student-bundle/ (and .zip), no solutions, no hidden tests
student-bundle: $(STAMP)
	$(PY) scripts/student_bundle.py build/student-bundle

slides: $(STAMP)
	$(VENV)/bin/jupyter nbconvert --to slides notebooks/[0-9]*.ipynb --output-dir build/slides
	@echo "slides in build/slides/ (they load reveal.js from a CDN when opened)"

bench: $(STAMP)
	$(PY) -m asyncps.bench
	$(PY) scripts/bench_widgets.py

reliability: $(STAMP)
	$(PY) scripts/reliability.py

bench-quick: $(STAMP)
	$(PY) -m asyncps.bench --quick --out build/benchmarks

clean:
	rm -rf $(VENV) build *.egg-info
