# Two commands do the whole set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Two stamps in one venv: `make run` installs what serving needs (RUN_STAMP); `make check`,
# `make test` and the rest add the frameworks, the test and type-check tools on top (STAMP).
RUN_STAMP := $(VENV)/.run-stamp
STAMP := $(VENV)/.installed-stamp
PREFIX ?= $(HOME)/.local
# The OpenID provider the sign-in tests start (npm's oidc-provider), installed by `make test`.
OIDC_DIR := tests/web/oidc
OIDC_STAMP := $(OIDC_DIR)/node_modules/.installed-stamp

.PHONY: run demo check test lint typecheck unit fast clean browser bench chaos chaos-pg fuzz install uninstall

# What serving needs: the server, the agent SDK (sdk/, a dependency: pip takes the local one
# because both are named in the same command) and every extra a config may turn on, so that no
# setting needs a reinstall: PostgreSQL, `hitl-gateway mcp` / `mcp-gate`, the e-mail channel,
# [[rule]] conditions in CEL, the Cedar engine and Web Push (python -m bench.first_hour: the size and time).
RUN_EXTRAS := postgres,mcp,email,rules,cedar,webpush,teams,oidc,events
# On top, for the tests: the SDK's framework extras the integration tests run, and dev
# (pytest, mypy, ruff, Playwright, the Claude Code CLI, both rule engines).
SDK_EXTRAS := langgraph,openai-agents,pydantic-ai,claude-agent-sdk
# The tests also run the extras a serve does not need: `traces` (OpenTelemetry's SDK, whose in-memory
# exporter the traces' tests read, and the OTLP exporter).
TEST_EXTRAS := traces

$(RUN_STAMP): pyproject.toml sdk/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -e ./sdk -e '.[$(RUN_EXTRAS)]'
	touch $(RUN_STAMP)

$(STAMP): $(RUN_STAMP) pyproject.toml sdk/pyproject.toml
	$(BIN)/pip install --quiet -e './sdk[$(SDK_EXTRAS)]' -e '.[dev,$(TEST_EXTRAS),$(RUN_EXTRAS)]'
	touch $(STAMP)

## make run: the gateway on ./var/hitl-gateway.db, web inbox on, no chat tokens needed.
run: $(RUN_STAMP)
	$(BIN)/hitl-gateway --dev serve

## make install: `hitl-gateway` on the PATH: its own venv in $(PREFIX)/lib/hitl-gateway, linked from $(PREFIX)/bin.
install:
	$(PYTHON) -m venv --clear $(PREFIX)/lib/hitl-gateway
	$(PREFIX)/lib/hitl-gateway/bin/pip install --quiet ./sdk '.[$(RUN_EXTRAS)]'
	mkdir -p $(PREFIX)/bin
	ln -sfn $(PREFIX)/lib/hitl-gateway/bin/hitl-gateway $(PREFIX)/bin/hitl-gateway
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) echo "installed: $(PREFIX)/bin/hitl-gateway";; \
		*) echo "installed: $(PREFIX)/bin/hitl-gateway; $(PREFIX)/bin is not on your PATH: add it (export PATH=\"$(PREFIX)/bin:\$$PATH\")";; esac

uninstall:
	rm -rf $(PREFIX)/lib/hitl-gateway $(PREFIX)/bin/hitl-gateway

## make demo: the gateway, the fake payment API and the invoice agent, each stage shown as it happens; then press in the inbox.
## Where `make run` listens (HITL_SERVER_HOST, HITL_SERVER_PORT; DEMO_ARGS="--port N" wins); the payment API at HITL_PAYMENTS_URL.
demo: $(RUN_STAMP)
	$(BIN)/python -m examples.demo $(DEMO_ARGS)

## make check: lint, type-check and the tests that start no process (about a minute): the loop while you work.
check: $(STAMP) lint typecheck fast

## make test: lint, type-check and the whole suite.
test: $(STAMP) browser $(OIDC_STAMP) lint typecheck unit

# The OpenID provider of the sign-in tests (npm's oidc-provider, pinned by its lockfile). Without
# npm the tests install it themselves or skip (they fail under CI=true).
$(OIDC_STAMP): $(OIDC_DIR)/package.json $(OIDC_DIR)/package-lock.json
	@if command -v npm >/dev/null; then cd $(OIDC_DIR) && npm ci --no-audit --no-fund --silent && touch node_modules/.installed-stamp; \
	else echo "oidc: npm is missing; the OIDC sign-in tests will skip (fail under CI=true)"; fi

lint: $(STAMP)
	$(BIN)/ruff check gateway adapters sdk examples tests bench
	$(BIN)/ruff format --check gateway adapters sdk examples tests bench
	$(BIN)/lint-imports --no-cache

typecheck: $(STAMP)
	$(BIN)/mypy

# The TypeScript SDK's npm dependencies (sdk-ts/package-lock.json, from the registry) and its
# build, for tests/typescript/ (which skip without them, and fail under CI=true).
NPM_STAMP := sdk-ts/node_modules/.ci-stamp

$(NPM_STAMP): sdk-ts/package.json sdk-ts/package-lock.json
	cd sdk-ts && npm ci --no-audit --no-fund && npm run build
	touch $(NPM_STAMP)

# Two workers (pytest-xdist): most of the suite waits on real subprocesses (a framework import
# alone is 2-5 s), so two run in the time of one and a half; serially it took 14-15 min here.
# The 15 slowest are listed at the end: the suite must stay well inside CI's 20 minutes.
unit: $(STAMP) $(NPM_STAMP)
	$(BIN)/pytest -q -p no:cacheprovider -n 2 --durations=15

# The tests not marked `subprocess`; --no-subprocess fails any of them that starts a process
# (tests/subprocess_guard.py), so the selection stays true as tests are added.
fast: $(STAMP)
	$(BIN)/pytest -q -p no:cacheprovider -n 2 -m "not subprocess" --no-subprocess

# Benchmarks, chaos and fuzzing: their own venv (LangGraph, schemathesis, py-spy never reach .venv).
BENCH_VENV ?= .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed-stamp

$(BENCH_STAMP): pyproject.toml sdk/pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/pip install --quiet -e ./sdk -e '.[bench,postgres,mcp]'
	touch $(BENCH_STAMP)

## make bench: every measurement, median of 3 runs, one table and bench/results.json (see docs/performance.md).
bench: $(BENCH_STAMP)
	PATH="$(CURDIR)/$(BENCH_VENV)/bin:$$PATH" $(BENCH_VENV)/bin/python -m bench $(BENCH_ARGS)

## make chaos: <= 5 min soak with >= 10 SIGKILLs of a real gateway, then the invariants.
chaos: $(BENCH_STAMP)
	$(BENCH_VENV)/bin/python -m bench.chaos --seconds 60 --kills 12 $(CHAOS_ARGS)

## make chaos-pg: the same soak on a fresh PostgreSQL database (HITL_TEST_POSTGRES_URL);
## CHAOS_ARGS="--replicas 2" runs two gateways on it and SIGKILLs one at a time (failover).
chaos-pg: $(BENCH_STAMP)
	$(BENCH_VENV)/bin/python -m bench.chaos --pg --seconds 60 --kills 12 $(CHAOS_ARGS)

## make fuzz: schemathesis against /openapi.json for a minute: no 5xx, JSON error body on 4xx.
fuzz: $(BENCH_STAMP)
	PATH="$(CURDIR)/$(BENCH_VENV)/bin:$$PATH" $(BENCH_VENV)/bin/python -m bench.fuzz --seconds 60 $(FUZZ_ARGS)

## browser: Debian's chromium for the end-to-end web test (installed only when missing; needs root).
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
		if [ "$$(id -u)" = 0 ]; then apt-get update && apt-get install -y chromium; \
		elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo apt-get update && sudo apt-get install -y chromium; \
		else echo "browser: /usr/bin/chromium is missing and apt-get needs root; the browser test will skip (fail under CI=true)"; fi; \
	fi

clean:
	rm -rf $(VENV) $(BENCH_VENV) var .mypy_cache .ruff_cache

## make bench-store: suspend/decide throughput on SQLite and PostgreSQL (bench/store_bench.py).
.PHONY: bench-store
bench-store: $(STAMP)
	$(BIN)/python bench/store_bench.py
