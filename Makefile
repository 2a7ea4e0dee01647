# libra_opt: `make demo` solves the example scenario; `make test` checks the import layers and
# runs the test suite.
# Both create the virtual environment on first use and install the project into it from the
# lock (requirements/lock.txt: exact versions with their hashes). `make lock` refreshes the lock
# from pyproject.toml's ranges and runs the suite on it; `make test-latest` runs the suite on
# the newest versions the ranges allow, in a separate environment (.venv-latest).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
LOCK := requirements/lock.txt
DEMO ?= gpt3_175b_4d
# The lock's resolver (uv), itself pinned, in its own environment.
UV_VERSION := 0.13.9
TOOLS := .venv-tools
LATEST := .venv-latest

.PHONY: install demo test test-latest lock fuzz lint bench examples clean

# A changed lock or pyproject.toml rebuilds the environment from scratch: nothing a previous
# install left behind survives. The project itself goes in without dependencies or a build
# environment of its own, so everything in .venv is a version the lock names.
$(STAMP): pyproject.toml $(LOCK)
	@rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --require-hashes -r $(LOCK) > $(VENV)/install.log 2>&1 || (cat $(VENV)/install.log; exit 1)
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e . >> $(VENV)/install.log 2>&1 || (cat $(VENV)/install.log; exit 1)
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/libra-opt solve $(DEMO) --plot-dir out/demo

test: $(STAMP)
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest -q

# The newest versions pyproject.toml's ranges allow today, in their own environment: drift
# seen here before a user installs it.
test-latest:
	rm -rf $(LATEST)
	$(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/python -m pip install --quiet --upgrade pip
	$(LATEST)/bin/python -m pip install --quiet --upgrade --upgrade-strategy eager -e '.[dev]'
	$(LATEST)/bin/python -m pip freeze --exclude-editable > $(LATEST)/versions.txt
	$(LATEST)/bin/lint-imports --no-cache
	$(LATEST)/bin/python -m pytest -q -p no:cacheprovider

# Re-resolve the lock to the newest versions the ranges allow (one set for every supported
# Python), then rebuild .venv from it and run the suite on it.
lock:
	@test -x $(TOOLS)/bin/uv || ($(PYTHON) -m venv $(TOOLS) && $(TOOLS)/bin/python -m pip install --quiet uv==$(UV_VERSION))
	$(TOOLS)/bin/uv pip compile --quiet --upgrade --universal --fork-strategy fewest \
	    --python-version 3.11 --generate-hashes pyproject.toml --extra dev requirements/build.in \
	    -o $(LOCK)
	$(MAKE) test

fuzz: $(STAMP)
	LIBRA_FUZZ_EXAMPLES=500 $(BIN)/python -m pytest -q tests/test_fuzz_cli.py

lint: $(STAMP)
	$(BIN)/ruff check libra_opt tests benchmarks workloads notebooks
	$(BIN)/mypy libra_opt
	$(BIN)/lint-imports --no-cache

# `make bench` rewrites benchmarks/RESULTS.md (the README quotes it); LIBRA_DIR=<a checkout of
# github.com/astra-sim/libra> also runs LIBRA's case studies on LIBRA's own input files.
bench: $(STAMP)
	$(BIN)/python benchmarks/solver_speed.py --out out/bench
	$(BIN)/python benchmarks/rail_only.py --out out/bench
	$(BIN)/python benchmarks/libra_case_studies.py --out out/bench $(if $(LIBRA_DIR),--libra-dir $(LIBRA_DIR))
	$(BIN)/python benchmarks/sweeps.py --out out/bench
	$(BIN)/python benchmarks/diloco.py --out out/bench
	$(BIN)/python benchmarks/in_network.py --out out/bench
	$(BIN)/python benchmarks/luwu.py --out out/bench
	$(BIN)/python benchmarks/comm_overlap.py --out out/bench
	$(BIN)/python benchmarks/small_messages.py --out out/bench
	$(BIN)/python benchmarks/failures.py --out out/bench
	$(BIN)/python benchmarks/astra_sim_parity.py --out out/bench
	$(BIN)/python benchmarks/calibration_runs.py --out out/bench
	$(BIN)/python benchmarks/validation_figures.py --out out/bench
	$(BIN)/python benchmarks/sweep_speed.py   # beside a git worktree of --ref (see its --help)
	$(BIN)/python benchmarks/bench_results.py   # the README quotes what the scripts wrote

examples: $(STAMP)
	$(BIN)/python workloads/derive_examples.py

clean:
	rm -rf out .pytest_cache $(LATEST) $(TOOLS)
