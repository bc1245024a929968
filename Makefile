# handoff-files: `make demo` and `make test` do all set-up on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_DEMO := $(VENV)/.installed-demo
STAMP_TEST := $(VENV)/.installed-test
# the benchmarks' own venv: SqliteSaver (the baseline they compare against) never enters .venv
VENV_BENCH := .venv-bench
BIN_BENCH := $(VENV_BENCH)/bin
STAMP_BENCH := $(VENV_BENCH)/.installed-bench

.PHONY: demo demo-bucket test lint typecheck pytest slow installed bench torture schemas clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP_DEMO): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(STAMP_TEST): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(STAMP_DEMO)

$(BIN_BENCH)/python:
	$(PYTHON) -m venv $(VENV_BENCH)
	$(BIN_BENCH)/python -m pip install --quiet --upgrade pip

# not editable: an editable install puts a path finder in every process of the venv (~16 ms at each
# start, paid by our side and the baseline alike), which no user's install has. The bench runs this
# checkout's code all the same: from the repository root, and its child processes by PYTHONPATH.
$(STAMP_BENCH): pyproject.toml | $(BIN_BENCH)/python
	$(BIN_BENCH)/python -m pip install --quiet '.[bench]'
	touch $@

demo: $(STAMP_DEMO)
	$(BIN)/python samples/demo.py

# an agent killed on one "host" continues on another from an S3 bucket (a local SeaweedFS: the test extras)
demo-bucket: $(STAMP_TEST)
	$(BIN)/python samples/bucket_demo.py

lint: $(STAMP_TEST)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP_TEST)
	$(BIN)/mypy

# every core (-n auto); worksteal keeps both busy when one file's tests are slow; the 10 slowest are named at the end
PYTEST_ARGS := -q -p no:cacheprovider -n auto --dist worksteal --durations=10

pytest: $(STAMP_TEST)
	$(BIN)/python -m pytest $(PYTEST_ARGS) -m "not slow"

test: lint typecheck pytest

# what make test leaves out for time (see the README's "Tests" section): exit 5 (no test) fails too
slow: $(STAMP_TEST)
	$(BIN)/python -m pytest $(PYTEST_ARGS) -m slow

# the product as a user installs it: build the wheel, install it into a fresh venv outside the checkout
# (bare, then with its extras) and run .ci/smoke_installed.py from there (about 1-2 minutes)
installed:
	bash .ci/installed $(PYTHON)

bench: $(STAMP_BENCH)
	$(BIN_BENCH)/python -m bench.bench_io
	$(BIN_BENCH)/python -m bench.bench_io --breakdown
	$(BIN_BENCH)/python -m bench.bench_restore
	$(BIN_BENCH)/python -m bench.bench_watch
	$(BIN_BENCH)/python -m bench.bench_vs_sqlite
	$(BIN_BENCH)/python -m bench.bench_import
	$(BIN_BENCH)/python -m bench.bench_goals
	$(BIN_BENCH)/python -m bench.bench_langgraph
	$(BIN_BENCH)/python -m bench.bench_langgraph_cold
	$(BIN_BENCH)/python -m bench.bench_writes
	$(BIN_BENCH)/python -m bench.bench_hostile
	$(BIN_BENCH)/python -m bench.bench_floors
	$(BIN_BENCH)/python -m bench.bench_signing

# the full torture run (every part at its full count: 10,000 kills, 1,000 crash states, 8 x 1,000 saves …),
# in both durabilities; exit 1 on any loss. TORTURE_ARGS adds options, e.g. TORTURE_ARGS="--kills 500".
# The machines parts (writers sharing only a folder or a SeaweedFS bucket: the test extras) run once, in the
# first table: a bucket thread has one durability, and machines-folder saves as a folder's default does.
TORTURE_FOLDER_PARTS := kills syscalls faults powerloss concurrency
torture: $(STAMP_TEST)
	$(BIN)/python -m bench.torture $(TORTURE_ARGS) --out bench/results-torture.md
	$(BIN)/python -m bench.torture $(TORTURE_FOLDER_PARTS) $(TORTURE_ARGS) --durability journal \
		--out bench/results-torture-journal.md

# regenerate schemas/ for the current format and descriptor versions (tests fail on drift)
schemas: $(STAMP_DEMO)
	$(BIN)/python -m handoff_files.format.schema
	$(BIN)/python -m handoff_files.transfers.descriptor

clean:
	rm -rf $(VENV) $(VENV_BENCH) build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache .hypothesis
