# The two set-up commands of the README, and a few helpers.
#   make demo   install into .venv, build ./demo-store from sample_repo/, serve it on :8000
#   make test   install into .venv (with the test extra), run the test suite
# Variables: PYTHON (>= 3.11), VENV, DEMO_STORE, HOST, PORT, WORKERS, PYTEST_ARGS.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_STORE ?= ./demo-store
HOST ?= 127.0.0.1
PORT ?= 8000
WORKERS ?= 2
PYTEST_ARGS ?=

.PHONY: install demo demo-store test lint clean-demo

install: $(STAMP)

# Re-installs when pyproject.toml changes; the package is editable, so code changes need nothing.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q -e '.[test]'
	touch $@

# Safe to re-run: init keeps an existing store and only adds what is missing.
demo-store: $(STAMP)
	$(BIN)/gitstore init --root $(DEMO_STORE) --sample

demo: demo-store
	$(BIN)/gitstore serve --root $(DEMO_STORE) --host $(HOST) --port $(PORT) --workers $(WORKERS)

# pytest exits non-zero on any failure, and with 5 when it collects no tests: both fail make.
test: $(STAMP)
	$(BIN)/pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean-demo:
	rm -rf $(DEMO_STORE)
