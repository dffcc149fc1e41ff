# make run · make test · make bench — each creates .venv when it is missing or stale.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONFIG ?= config/demo.toml

.PHONY: run test bench lint clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/tabled --config $(CONFIG)

test: $(STAMP)
	$(BIN)/ruff check daemon drivers client bridge tests bench
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python -m bench

lint: $(STAMP)
	$(BIN)/ruff check daemon drivers client bridge tests bench

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
