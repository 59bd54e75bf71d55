# Two commands do the whole set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: run test lint typecheck unit clean bench chaos fuzz

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,postgres]'
	touch $(STAMP)

## make run: the gateway on ./var/hitl-gateway.db, web inbox on, no chat tokens needed.
run: $(STAMP)
	$(BIN)/hitl-gateway serve --dev

## make test: lint, type-check and the whole suite.
test: $(STAMP) lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check gateway adapters tests bench
	$(BIN)/ruff format --check gateway adapters tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q -p no:cacheprovider

# Benchmarks, chaos and fuzzing: their own venv (LangGraph, schemathesis, py-spy never reach .venv).
BENCH_VENV ?= .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed-stamp

$(BENCH_STAMP): pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/pip install --quiet -e '.[bench]'
	touch $(BENCH_STAMP)

## make bench: every measurement, median of 3 runs, one table and bench/results.json (see docs/performance.md).
bench: $(BENCH_STAMP)
	PATH="$(CURDIR)/$(BENCH_VENV)/bin:$$PATH" $(BENCH_VENV)/bin/python -m bench $(BENCH_ARGS)

## make chaos: <= 5 min soak with >= 10 SIGKILLs of a real gateway, then the invariants.
chaos: $(BENCH_STAMP)
	$(BENCH_VENV)/bin/python -m bench.chaos --seconds 60 --kills 12 $(CHAOS_ARGS)

## make fuzz: schemathesis against /openapi.json for a minute: no 5xx, JSON error body on 4xx.
fuzz: $(BENCH_STAMP)
	PATH="$(CURDIR)/$(BENCH_VENV)/bin:$$PATH" $(BENCH_VENV)/bin/python -m bench.fuzz --seconds 60 $(FUZZ_ARGS)

clean:
	rm -rf $(VENV) $(BENCH_VENV) var .mypy_cache .ruff_cache
