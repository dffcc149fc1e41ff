# make run · make test · make bench — each creates .venv when it is missing or stale.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONFIG ?= config/demo.toml

.PHONY: run test faults bench floor lint clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/tabled --config $(CONFIG)

test: $(STAMP)
	$(BIN)/ruff check daemon drivers client bridge tests bench
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# the fault campaign (docs/reliability.md, The fault campaign): a few minutes, run by .ci/run
faults: $(STAMP)
	$(BIN)/python tests/fault_campaign.py

bench: $(STAMP)
	$(BIN)/python -m bench

# the floor (needs nats-server): every fault test, then 20 daemons + 480 fake tables for 60 s
floor: $(STAMP)
	$(BIN)/python -m pytest -m floor $(PYTEST_ARGS)
	$(BIN)/python -m bench.floor

lint: $(STAMP)
	$(BIN)/ruff check daemon drivers client bridge tests bench

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
