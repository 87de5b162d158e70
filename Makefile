# Two commands do all set-up on a fresh machine with Python 3.11+ and make:
#   make lab    create .venv, install asyncps for the lecture, open JupyterLab at the repository
#               root on notebooks/00-start-here.ipynb (the lectures link ../exercises/) in a
#               browser where one can show it (OPEN_BROWSER below); its last lines are the URL
#               to open, with its token; its kernels' `!` commands and its terminals use .venv
#   make test   create .venv if missing, run the whole test suite (browser tests included: as
#               root, where Chromium is missing, it tries Debian's chromium; if that cannot be
#               installed the browser tests skip saying why, and fail with CI=true)
#   make demo   serve the Playground with Voila on 127.0.0.1 (classroom mode); its last lines are
#               the URL to open, with its token; make demo PAGE=live serves the live page (a real
#               run with a straggler) instead, DEMO_PORT=8867 another port than 8866
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
LAB     = $(VENV)/.installed-lab
TEST    = $(VENV)/.installed-test

# Python caches each module it compiles (__pycache__/, ignored by git). A machine that turns that
# off (PYTHONDONTWRITEBYTECODE) makes every process the tests start (workers, kernels, graders)
# compile the package and the tests again (collecting the unit tests alone: 17.6 s against 12.2 s,
# in every worker).
unexport PYTHONDONTWRITEBYTECODE

# torch. On Linux, PyPI's torch is the CUDA build (~15 nvidia-* packages, several GB); the CPU
# build is "+cpu" on PyTorch's own index. It is installed first, alone, so that nothing later can
# swap it for the CUDA build; a local wheel cache (PIP_FIND_LINKS) serves it with no network.
# pip does not retry PyTorch's index (--retries 0): offline, a retry only costs time and prints a
# "WARNING: Retrying ..." that -qq cannot hide (pip logs its network library's warnings apart);
# where torch cannot be installed, make says which index it tried.
# GPU users: make lab TORCH=cuda (PyPI's default build; after `make clean` if .venv exists).
TORCH         ?= cpu
TORCH_VERSION ?= 2.13.0
ifeq ($(TORCH),cpu)
  ifeq ($(shell uname -s),Linux)
    TORCH_REQ   = torch==$(TORCH_VERSION)+cpu
    TORCH_INDEX = --index-url https://download.pytorch.org/whl/cpu --retries 0
  else
    TORCH_REQ   = torch==$(TORCH_VERSION)
  endif
else ifeq ($(TORCH),cuda)
  TORCH_REQ = torch==$(TORCH_VERSION)
else
  $(error TORCH=$(TORCH): use TORCH=cpu (the default) or TORCH=cuda)
endif
PIP_FLAGS ?=
# pip prints its errors only (-qq: not even its warnings, of which a machine's pip config can add
# a hundred, "Location ... is ignored"); make lab VERBOSE=1 shows pip's whole log. (Not named
# PIP_*: pip reads every PIP_* variable in its environment as one of its options.)
QUIET_PIP = $(if $(VERBOSE),,-qq) --disable-pip-version-check
# pip compiles no bytecode at install (uv's default too): Python compiles each module the first
# time it is imported and caches it in .venv (writable), so only what runs is compiled. Compiling
# all 12,310 modules up front cost a fresh .venv 25 of its 81 s on 2 cores (torch alone 10 s);
# importing torch, asyncps and JupyterLab compiles 1,894 of them, once: the first `import torch`
# takes 1.9 s longer, the first JupyterLab start 1 s.
NO_COMPILE = --no-compile

CHROMIUM ?= /usr/bin/chromium
# where make lab opens: the root is the repository, so the lectures' ../exercises/ links work
START    ?= /lab/tree/notebooks/00-start-here.ipynb

# make lab opens a browser where one can show it: on macOS, or on Linux with a DISPLAY or a
# WAYLAND_DISPLAY, and never as root (containers, CI) nor in an SSH session. Where it opens none it
# says why, and the last lines JupyterLab prints are the URL to open, with its token.
# make lab OPEN_BROWSER=yes (or =no) decides instead. (Not BROWSER: Python's webbrowser, which
# JupyterLab opens the browser with, reads BROWSER as the browser's command.)
OPEN_BROWSER ?= auto
ifeq ($(OPEN_BROWSER),auto)
  NO_BROWSER := $(strip \
    $(if $(filter 0,$(shell id -u)),running as root, \
    $(if $(SSH_CONNECTION)$(SSH_TTY),an SSH session, \
    $(if $(filter Darwin,$(shell uname -s))$(DISPLAY)$(WAYLAND_DISPLAY),,no DISPLAY or WAYLAND_DISPLAY))))
else ifeq ($(OPEN_BROWSER),no)
  NO_BROWSER := OPEN_BROWSER=no
else ifneq ($(OPEN_BROWSER),yes)
  $(error OPEN_BROWSER=$(OPEN_BROWSER): use OPEN_BROWSER=auto (the default), yes or no)
endif

# JupyterLab's news pop-up ("receive official Jupyter news?") and its update check are off in this
# venv's JupyterLab: a settings override (the learner's own settings still win over it); make lab
# also turns off the server's side of both. tests/browser sets the same in its own settings.
LAB_SETTINGS = $(VENV)/share/jupyter/lab/settings/overrides.json

.PHONY: lab test test-fast test-matrix demo venv torch packages browser netns bench bench-quick reliability notebooks slides solutions exercises grade check student-bundle site clean

venv: $(LAB) $(LAB_SETTINGS)

# The two install steps, each a target of its own (tests/test_install.py runs them with the
# package index unreachable): torch alone, then the package and its extras.
# (the install's commands are not echoed: what make lab prints is what the learner acts on)
$(PY):
	@$(PYTHON) -m venv $(VENV)

torch: $(PY)
	@$(PY) -m pip install $(QUIET_PIP) $(NO_COMPILE) --no-deps $(TORCH_INDEX) "$(TORCH_REQ)" \
		|| { echo "make: pip could not install $(TORCH_REQ)$(if $(TORCH_INDEX), from $(word 2,$(TORCH_INDEX)): can this machine reach it? (offline: a folder with its wheel in PIP_FIND_LINKS)); VERBOSE=1 shows pip's whole log"; exit 1; }

packages: $(PY)
	@$(PY) -m pip install $(QUIET_PIP) $(NO_COMPILE) $(PIP_FLAGS) "$(TORCH_REQ)" -e ".[$(EXTRAS)]"

$(LAB): pyproject.toml
	@echo "installing $(TORCH_REQ), then asyncps and JupyterLab, into $(VENV): a few minutes;" \
		"pip prints nothing unless it fails (VERBOSE=1: its whole log)"
	@$(MAKE) --no-print-directory torch
	@$(MAKE) --no-print-directory packages EXTRAS=torch,lab
	@touch $@

$(TEST): pyproject.toml $(LAB)
	$(MAKE) --no-print-directory packages EXTRAS=test
	touch $@

# Debian's Chromium for the browser tests (Playwright drives it; never `playwright install`).
# Nothing here stops `make test`: where it cannot be installed, the browser tests say so.
browser:
	@if [ -x "$(CHROMIUM)" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing Debian's chromium for the browser tests"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
		|| echo "make: could not install chromium with apt-get: the browser tests will skip (CI=true: fail)"; \
	else echo "make: no Chromium at $(CHROMIUM) and not root: the browser tests will skip (CI=true: fail)"; fi

# the torchrun tests run in a private network namespace: `unshare` (util-linux) and `ip` (iproute2)
netns:
	@if command -v unshare >/dev/null 2>&1 && command -v ip >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing util-linux and iproute2 for the torchrun tests"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq util-linux iproute2 >/dev/null; } \
		|| echo "make: could not install iproute2 with apt-get: the torchrun tests will skip (CI=true: fail)"; \
	else echo "make: no unshare or ip command and not root: the torchrun tests will skip (CI=true: fail)"; fi

$(LAB_SETTINGS): $(LAB) Makefile
	@mkdir -p $(@D)
	@echo '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}}' > $@

# the server logs warnings and errors only, so that its last lines before a browser connects are
# its own "To access the server ... copy and paste one of these URLs" block; etc/jupyter/lab/
# (jupyter_server_config.py) drops the log lines nobody can act on (a notebook "is not trusted", on
# every open) and encrypts the kernels' messages (else each kernel warns that they are not).
# The venv is activated for the server, so the kernels' `!` commands find its python and pip, and
# JupyterLab's terminals activate it after the learner's ~/.bashrc (etc/jupyter/lab/terminal.bashrc).
VENV_DIR = $(abspath $(VENV))
lab: $(LAB) $(LAB_SETTINGS)
	@$(if $(NO_BROWSER),echo "make lab: no browser opened ($(NO_BROWSER)): open the URL JupyterLab prints last",:)
	@PATH="$(VENV_DIR)/bin:$$PATH" VIRTUAL_ENV="$(VENV_DIR)" \
	JUPYTER_CONFIG_PATH=$(CURDIR)/etc/jupyter/lab$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH} \
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=. --LabApp.default_url=$(START) \
		--ServerApp.ip=127.0.0.1 --ServerApp.open_browser=$(if $(NO_BROWSER),False,True) \
		--ServerApp.log_level=WARN --LabApp.log_level=WARN --LabApp.news_url=None \
		--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate \
		$$([ "$$(id -u)" = 0 ] && echo --allow-root)   # containers and CI run as root

# the classroom pages: notebooks/playground.ipynb (the default) or notebooks/live.ipynb (PAGE=live).
# Voila 0.5 does not shut a page's kernel down when the page is closed (its request is refused
# for want of an _xsrf cookie, voila-dashboards/voila#1458): a kernel with no page left is culled
# after 2 minutes (a live page's run and workers end with it). Open pages are never culled.
# Voila's settings are etc/jupyter/voila.json, which the tests' Voila reads too: the template
# share/jupyter/voila/templates/asyncps (Voila's lab template with Font Awesome, the widgets' icons,
# served by Voila from a pinned copy, not from a CDN: no network needed), and nbgrader's and
# Notebook 7's JupyterLab extensions kept out of the page: in Voila they only fail (errors in the
# browser's console, for want of JupyterLab's file browser and document registry); etc/jupyter/voila.py
# drops the "is not trusted" line each page logs and encrypts the kernels' messages.
# make demo prints the URL to open, with its token (random, new each run: JUPYTER_TOKEN, so that
# `ps` does not show it), once Voila listens; Voila logs warnings and errors only. DEMO_PORT=8867
# serves on another port (make demo refuses a port that is taken: a second make demo, say).
PAGE ?= playground
DEMO_PORT ?= 8866
PORT_FREE = import socket, sys; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1])))
PORT_OPEN = import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)
VOILA_ICONS = share/jupyter/voila/templates/asyncps/static/fontawesome
$(VOILA_ICONS)/css/all.min.css: scripts/vendor.py
	@$(PYTHON) scripts/vendor.py fontawesome $(VOILA_ICONS)
demo: $(LAB) $(VOILA_ICONS)/css/all.min.css
	@case "$(PAGE)" in playground|live) ;; *) echo "make demo: PAGE=$(PAGE) is not allowed: use PAGE=playground (the default) or PAGE=live"; exit 2;; esac
	@case "$(DEMO_PORT)" in ""|*[!0-9]*) false;; *) [ "$(DEMO_PORT)" -ge 1024 ] && [ "$(DEMO_PORT)" -le 65535 ];; esac \
		|| { echo "make demo: DEMO_PORT=$(DEMO_PORT) is not allowed: use a port from 1024 to 65535 (8866 is the default)"; exit 2; }
	@$(PY) -c '$(PORT_FREE)' $(DEMO_PORT) 2>/dev/null || { echo "make demo: port $(DEMO_PORT) on 127.0.0.1 is taken" \
		"(another make demo?): stop what serves it (Ctrl+C where it runs), or serve on another port: make demo DEMO_PORT=$$(($(DEMO_PORT) + 1))"; exit 2; }
	@export JUPYTER_TOKEN=$$($(PY) -c "import secrets; print(secrets.token_hex(16))") \
		JUPYTER_PATH=$(CURDIR)/share/jupyter$${JUPYTER_PATH:+:$$JUPYTER_PATH} \
		JUPYTER_CONFIG_PATH=$(CURDIR)/etc/jupyter$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}; \
	{ until $(PY) -c '$(PORT_OPEN)' $(DEMO_PORT) 2>/dev/null; do kill -0 $$$$ 2>/dev/null || exit 0; sleep 0.5; done; \
	  echo "make demo: Voila serves notebooks/$(PAGE).ipynb until Ctrl+C; open this URL (its token in it):"; \
	  echo "    http://127.0.0.1:$(DEMO_PORT)/?token=$$JUPYTER_TOKEN"; } & \
	exec $(VENV)/bin/voila notebooks/$(PAGE).ipynb --no-browser --Voila.ip=127.0.0.1 --Voila.port=$(DEMO_PORT) \
		--Voila.port_retries=0 --Voila.auto_token=True --Voila.log_level=WARN \
		--MappingKernelManager.cull_idle_timeout=120 --MappingKernelManager.cull_interval=30

# pytest-xdist runs the suite in 3 processes per 2 cores (JOBS=1: one process), each test file on
# one worker from its first test to its last (--dist loadfile): a notebook's cells run in order in
# one kernel, and a file's module-scoped servers serve its tests only; the few files of independent
# long tests (conftest.SPREAD) spread test by test. Why more processes than cores: a quarter of the
# suite's time waits (servers and kernels starting, browsers loading); on 2 cores, a fresh clone's
# pytest took 33 min with 2 processes, 21.8 with 3 and 23.4 with 4
CORES := $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
JOBS ?= $(shell echo $$(( ($(CORES) * 3 + 1) / 2 )))
test: $(TEST) browser netns
	$(PY) -m pytest -n $(JOBS) --dist loadfile

# The test matrix (noxfile.py): the unit and engine tests on Python 3.11, 3.12 and 3.13 with the
# oldest and newest torch declared, and once with every dependency at its declared lower bound
# (floors), each in its own venv under .nox/ made by uv from PyPI (torch's CUDA build there: about
# 3 GB per torch version, cached by uv). ONLY=3.12-torch2.11.0 (or ONLY=floors) runs one session,
# LIST=1 lists them. Pythons: whatever is on PATH, and pyenv's versions where pyenv keeps them
# (its shims answer only for the global version).
MATRIX_TOOLS   = $(VENV)/.installed-matrix
PYENV_PYTHONS := $(wildcard $(HOME)/.pyenv/versions/3.1[123].*/bin)
empty :=
space := $(empty) $(empty)
test-matrix: $(MATRIX_TOOLS)
	PATH="$(subst $(space),:,$(strip $(PYENV_PYTHONS) $$PATH))" $(PY) -m nox $(if $(LIST),--list) \
		$(if $(ONLY),--session "$(if $(filter floors,$(ONLY)),floors,tests($(ONLY)))")

$(MATRIX_TOOLS): $(PY)
	$(PY) -m pip install $(QUIET_PIP) "nox[uv]==2026.10.20" "uv==0.13.9"
	touch $@

# the developers' loop: the unit tests only (no notebooks, no browser, nothing marked slow); CI runs make test
# and one combination of the matrix
test-fast: $(TEST)
	$(PY) -m pytest tests --ignore=tests/browser -m "not slow" -p no:nbval -o addopts="-ra --strict-markers" \
		-n $(JOBS) --dist loadfile

notebooks: $(LAB)
	$(PY) scripts/notebooks.py

# the assignments: solutions/src/*.py -> solutions/*.ipynb (executed) -> exercises/*.ipynb (stubs)
solutions: $(LAB)
	$(PY) scripts/notebooks.py --solutions

exercises: $(LAB)
	$(PY) -m asyncps.assignments solutions exercises

# instructors: grade a student's notebook with the solutions' tests, hidden ones included
grade: $(LAB)
	$(PY) -m asyncps.grade $(NB) --solutions solutions

# students: check your own notebook against the visible tests (never reads solutions/)
check: $(LAB)
	$(PY) -m asyncps.check $(NB)

# what a course hands to students: build/student-bundle/ (and .zip), no solutions, no hidden tests
student-bundle: $(LAB)
	$(PY) scripts/student_bundle.py build/student-bundle

# the lecture site: site/index.html, the executed lecture, the Playground and the student copies
# as static HTML with navigation; it opens from disk (no server, no network)
site: $(LAB)
	$(PY) scripts/site.py site

# the lecture as reveal.js decks in build/slides/, with a pinned reveal.js from the npm registry
# beside them (scripts/vendor.py; downloaded once into build/vendor/): they present from disk,
# with no network (open a deck in a browser; `s`: the speaker view)
slides: $(LAB)
	$(PY) scripts/slides.py build/slides

bench: $(TEST)
	$(PY) -m asyncps.bench
	$(PY) scripts/bench_widgets.py

reliability: $(TEST)
	$(PY) scripts/reliability.py

bench-quick: $(TEST)
	$(PY) -m asyncps.bench --quick --out build/benchmarks

clean:
	rm -rf $(VENV) build site *.egg-info
