# Two commands on a fresh machine (Python 3.11+):  make demo   and   make test
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench install

$(BIN)/evalrunner: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

install: $(BIN)/evalrunner

# Evaluate the bundled HR assistant on test_suites/demo-hr.xlsx; reports in ./evalrunner-out
demo: install
	$(BIN)/evalrunner demo

test: install
	$(BIN)/python -m pytest -q -p no:cacheprovider

lint: install
	$(BIN)/ruff check .

bench: install
	$(BIN)/python bench/bench_engine.py 200 2000
