# The README's commands. Each target creates/updates .venv itself.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP)-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

$(STAMP)-bench: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,bench]'
	touch $@

# A real pipeline on the example project: an implement -> test -> route loop.
demo: $(STAMP)-dev
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
