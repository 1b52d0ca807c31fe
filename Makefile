# lake_assets developer entry points.
#
#   make venv         .venv: lake_assets (editable) + dev tools
#   make venv-paimon  .venv-paimon: pypaimon and pypaimon-rust (pins an old pyarrow; driven by subprocess from tests)
#   make test         lint (ruff + mypy) + pytest (needs both venvs; interop tests fail instead of skipping when CI is set)
#   make lint         ruff check, then mypy (configured in pyproject.toml; fails on any error)
#   make java-oracle  fetch Paimon Java 0.9 (pinned sdist) and compile the test oracle into .cache/paimon-java
#   make demo         the main job: end-to-end demo (Dagster + Spark + a Paimon table under ./warehouse)
#   make dagster      the Dagster UI (dagster dev) on the same definitions, http://127.0.0.1:3000
#   make clean        remove venvs, ./warehouse and caches
#
# Both venvs are guarded by stamp files, so the targets are fast no-ops once installed;
# .venv is reinstalled when pyproject.toml or constraints.txt changes, .venv-paimon when PAIMON_VERSION
# changes. constraints*.txt pin the versions the suite last passed with (fast, reproducible installs).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON ?= python3
PAIMON_VERSION ?= 2.1.0
PAIMON_PYARROW ?= 19.0.1
PAIMON_RUST_VERSION ?= 0.4.0
MAINTENANCE_SLOTS ?= 2

VENV := .venv
VENV_PAIMON := .venv-paimon
VENV_STAMP := $(VENV)/.installed
PAIMON_STAMP := $(VENV_PAIMON)/.installed-pypaimon-$(PAIMON_VERSION)-rust-$(PAIMON_RUST_VERSION)
LINT_PATHS = $(wildcard lake_assets jobs tests bench)

export PIP_DISABLE_PIP_VERSION_CHECK := 1
# mypy's incremental cache outside the checkout, so that a fresh clone on the same machine reuses it
# (30 CPU s cold, under 1 s warm). mypy revalidates every entry against the size, mtime and hash of
# its source, so another checkout's entry is rechecked, not trusted; it writes entries atomically.
# Override with MYPY_CACHE_DIR=.mypy_cache.
export MYPY_CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/lake_assets/mypy

.PHONY: help venv venv-paimon java-oracle browser test lint demo dagster clean

help:
	@sed -n 's/^#   //p' $(firstword $(MAKEFILE_LIST))

venv: $(VENV_STAMP)

venv-paimon: $(PAIMON_STAMP)

# $(1) = venv dir. Refuses pythons older than 3.11; removes a half-created venv on failure.
define make_venv
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else \
		"error: $(PYTHON) is Python %d.%d; need >= 3.11 (try make PYTHON=python3.11)" % sys.version_info[:2])'
	$(PYTHON) -m venv $(1) || { rm -rf $(1); exit 1; }
endef

$(VENV)/bin/python:
	$(call make_venv,$(VENV))

$(VENV_PAIMON)/bin/python:
	$(call make_venv,$(VENV_PAIMON))

$(VENV_STAMP): pyproject.toml constraints.txt | $(VENV)/bin/python
	$(VENV)/bin/python -m pip install --upgrade pip
	$(VENV)/bin/python -m pip install -e '.[dev]' -c constraints.txt
	touch $@

$(PAIMON_STAMP): | $(VENV_PAIMON)/bin/python
	$(VENV_PAIMON)/bin/python -m pip install --upgrade pip
	$(VENV_PAIMON)/bin/python -m pip install 'pypaimon==$(PAIMON_VERSION)' 'pyarrow==$(PAIMON_PYARROW)' \
		'pypaimon-rust==$(PAIMON_RUST_VERSION)' -c constraints-paimon.txt
	rm -f $(VENV_PAIMON)/.installed-pypaimon-*
	touch $@

lint: venv
	$(VENV)/bin/ruff check $(LINT_PATHS)
	$(VENV)/bin/mypy

# Paimon Java as the differential tests' oracle (tests/java/build.py: cached, a no-op when up to date;
# under CI=true a missing JDK or jar fails here, elsewhere the differential tests skip saying why).
java-oracle: venv
	$(VENV)/bin/python -m tests.java.build

test: lint venv-paimon java-oracle browser
	# Bytecode caches on: a machine that sets PYTHONDONTWRITEBYTECODE makes every child Python
	# (Spark workers, jobs, engine drivers) compile lake_assets again, ~0.2 CPU s each
	env -u PYTHONDONTWRITEBYTECODE $(VENV)/bin/python -m pytest -q

# Headless Chromium for the Dagster UI test (Debian's package; installed when missing and root).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1 \
				|| echo "warning: could not install chromium; the UI test will say why it skipped"; \
		else echo "note: chromium missing; install Debian's chromium to run the UI test"; fi; }

demo: venv
	$(VENV)/bin/python -m lake_assets.demo

# The Dagster UI on the same definitions (lake.yaml), instance under ./dagster_home.
dagster: venv
	mkdir -p dagster_home && cp dagster.yaml dagster_home/dagster.yaml
	# The global cap on Spark maintenance runs (pool lake_maintenance; dagster.yaml explains the pools).
	DAGSTER_HOME=$(CURDIR)/dagster_home $(VENV)/bin/dagster instance concurrency set lake_maintenance \
		$(MAINTENANCE_SLOTS)
	# From DAGSTER_HOME: in any other folder holding a dagster.yaml (the repo root) `dagster dev` warns
	# that the file "will not be used". lake.yaml paths resolve against lake.yaml's folder.
	cd dagster_home && DAGSTER_HOME=$(CURDIR)/dagster_home LAKE_CONFIG=$(CURDIR)/lake.yaml PYTHONPATH=$(CURDIR) \
		$(abspath $(VENV))/bin/dagster dev -w $(CURDIR)/workspace.yaml -h 127.0.0.1 -p 3000

clean:
	rm -rf $(VENV) $(VENV_PAIMON) .cache warehouse data dagster_home .pytest_cache .ruff_cache .hypothesis build dist *.egg-info
	find . -type d -name __pycache__ -prune -exec rm -rf {} +
