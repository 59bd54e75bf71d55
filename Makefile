# Two commands do the whole set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: run test lint typecheck unit clean

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
	$(BIN)/ruff check gateway adapters tests
	$(BIN)/ruff format --check gateway adapters tests

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q -p no:cacheprovider

clean:
	rm -rf $(VENV) var .mypy_cache .ruff_cache

## make bench-store: suspend/decide throughput on SQLite and PostgreSQL (bench/store_bench.py).
.PHONY: bench-store
bench-store: $(STAMP)
	$(BIN)/python bench/store_bench.py
