# libra_opt: `make demo` solves the example scenario; `make test` checks the import layers and
# runs the test suite.
# Both create the virtual environment and install the project on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEMO ?= gpt3_175b_4d

.PHONY: install demo test fuzz lint bench examples clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip > $(VENV)/install.log 2>&1 || (cat $(VENV)/install.log; exit 1)
	$(BIN)/python -m pip install --quiet -e '.[dev]' >> $(VENV)/install.log 2>&1 || (cat $(VENV)/install.log; exit 1)
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/libra-opt solve $(DEMO) --plot-dir out/demo

test: $(STAMP)
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest -q

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
	$(BIN)/python benchmarks/bench_results.py   # the README quotes what the scripts wrote

examples: $(STAMP)
	$(BIN)/python workloads/derive_examples.py

clean:
	rm -rf out .pytest_cache
