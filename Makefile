# handoff-files: `make demo` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_DEMO := $(VENV)/.installed-demo
STAMP_TEST := $(VENV)/.installed-test

.PHONY: demo test lint typecheck pytest slow bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP_DEMO): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(STAMP_TEST): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(STAMP_DEMO)

demo: $(STAMP_DEMO)
	$(BIN)/python samples/demo.py

lint: $(STAMP_TEST)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP_TEST)
	$(BIN)/mypy

pytest: $(STAMP_TEST)
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not slow"

test: lint typecheck pytest

slow: $(STAMP_TEST)
	$(BIN)/python -m pytest -q -m slow

bench: $(STAMP_DEMO)
	$(BIN)/python -m bench.bench_io

clean:
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache .hypothesis
