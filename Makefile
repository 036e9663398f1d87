# The two set-up commands of the README, and a few helpers.
#   make demo   install into .venv (runtime dependencies only), build ./demo-store from
#               sample_repo/, serve it on :8000
#   make test   install the system tools the tests need (tools/system-deps.sh: apt-get as root
#               or through sudo -n, else one line saying what to install), then into .venv
#               (with the test extra), then run the test suite
# Variables: PYTHON (>= 3.11), VENV, DEMO_STORE, HOST, PORT, WORKERS, PYTEST_ARGS.

# The interpreter the virtualenv is built from: the system's /usr/bin/python3 when it is 3.11 or
# later and can make a virtualenv, else the first python3 on PATH. Debian builds its executable
# with profile-guided optimisation and libpython linked in: the server answered 1.1-1.4x the cold
# lookups per second on it than on a pyenv build with its defaults (docs/operations.md).
SYSTEM_PYTHON := /usr/bin/python3
PYTHON ?= $(shell $(SYSTEM_PYTHON) -c 'import sys, venv, ensurepip; \
	sys.exit(sys.version_info < (3, 11))' 2>/dev/null && echo $(SYSTEM_PYTHON) || echo python3)
VENV ?= .venv
BIN := $(VENV)/bin
# Two stamps: the demo needs the runtime dependencies only, tests and lint the test extra too.
RUNTIME_STAMP := $(VENV)/.installed-runtime
TEST_STAMP := $(VENV)/.installed-test
DEMO_STORE ?= ./demo-store
HOST ?= 127.0.0.1
PORT ?= 8000
WORKERS ?= 2
PYTEST_ARGS ?=

.PHONY: install install-runtime demo demo-port demo-store system-deps test lint clean-demo

install: $(TEST_STAMP)

install-runtime: $(RUNTIME_STAMP)

# Re-installs when pyproject.toml changes; the package is editable, so code changes need nothing.
$(RUNTIME_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q -e .
	touch $@

# The test extra includes the runtime dependencies: a test install also serves the demo.
$(TEST_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q -e '.[test]'
	touch $@ $(RUNTIME_STAMP)

# Before installing anything: a busy port fails the demo at once, saying how to pick another.
demo-port:
	@$(PYTHON) -c 'import socket, sys; busy = socket.socket().connect_ex(("$(HOST)", $(PORT))) == 0; \
	sys.exit(busy and "make demo: port $(PORT) on $(HOST) is already in use; choose another " \
	f"with PORT=, e.g. make demo PORT={$(PORT) + 1}")'

# Safe to re-run: init keeps an existing store and only adds what is missing.
demo-store: $(RUNTIME_STAMP)
	$(BIN)/gitstore init --root $(DEMO_STORE) --sample

demo: demo-port demo-store
	$(BIN)/gitstore serve --root $(DEMO_STORE) --host $(HOST) --port $(PORT) --workers $(WORKERS)

# Before installing anything: a machine without the tests' system tools (puppet, chromium,
# ...) gets them, or stops here in seconds with one line naming them, not minutes later in the
# first test that needs one. Shared with .ci/run.
system-deps:
	@tools/system-deps.sh

# pytest exits non-zero on any failure, and with 5 when it collects no tests: both fail make.
# The system tools come first (make builds prerequisites left to right).
test: system-deps $(TEST_STAMP)
	$(BIN)/pytest $(PYTEST_ARGS)

# mypy checks the packages `[tool.mypy]` in pyproject.toml names (strictly: backend/, merge/ and
# the foundation modules); its cache in .mypy_cache makes a second run take a second or two.
lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean-demo:
	rm -rf $(DEMO_STORE)
