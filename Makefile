# Two commands do all set-up on a fresh machine with Python 3.11+ and make:
#   make lab    create .venv, install asyncps and its dependencies, start JupyterLab on notebooks/
#   make test   create .venv if missing, run the whole test suite
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed
# The CPU build of torch, installed before the package so that its range
# (torch>=2.3) is already satisfied and pip never pulls a multi-GB CUDA build.
TORCH  ?= torch==2.13.0

.PHONY: lab test venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install "$(TORCH)"
	$(PY) -m pip install -e ".[test]"
	touch $(STAMP)

lab: $(STAMP)
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks --ServerApp.ip=127.0.0.1 --no-browser

test: $(STAMP)
	$(PY) -m pytest

clean:
	rm -rf $(VENV) build *.egg-info
