# Development commands for s2sgrad.
#
#   make demo    create .venv, install the package, run examples/quickstart.py
#   make examples  create .venv with the examples extra, run every script in examples/
#                  (files go to examples/output/, or to $S2SGRAD_EXAMPLES_OUTPUT)
#   make test    create .venv, install the package with the test extra, run ruff, mypy, pytest
#   make test-matrix  the same under each supported Python and NumPy pair (.ci/matrix: venvs
#                from pyenv's interpreters in /tmp/s2sgrad-matrix), printing a table
#   make lint    ruff check, ruff format --check and mypy (configured in pyproject.toml)
#   make docs    build the documentation site (guide pages and API reference) into site/
#   make bench   install the benchmark frameworks where possible, run benchmarks/run.py
#   make clean   remove .venv and caches
#
# pip runs only when pyproject.toml changed: each install leaves a stamp file in .venv whose
# name carries a hash of pyproject.toml.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
PIP_INSTALL := $(PIP) install --quiet --disable-pip-version-check

PYPROJECT_HASH := $(shell $(PYTHON) -c "import hashlib; print(hashlib.sha256(open('pyproject.toml', 'rb').read()).hexdigest()[:12])")
STAMP_BASE := $(VENV)/.s2sgrad-installed-$(PYPROJECT_HASH)
STAMP_TEST := $(VENV)/.s2sgrad-installed-test-$(PYPROJECT_HASH)
STAMP_EXAMPLES := $(VENV)/.s2sgrad-installed-examples-$(PYPROJECT_HASH)
REMOVE_OLD_STAMPS := find $(VENV) -maxdepth 1 -name '.s2sgrad-installed-*' \
	! -name '*-$(PYPROJECT_HASH)' -delete

# Installed by `make bench` when missing, never failing the target: autograd and jax from the
# index, torch pinned to a CPU build.
BENCH_PACKAGES := autograd:autograd jax:jax torch:torch==2.13.0

# Every example script (helpers starting with _ are imported by them, not run).
EXAMPLE_SCRIPTS := $(filter-out examples/_%,$(sort $(wildcard examples/*.py)))

.PHONY: demo examples test test-matrix lint docs bench clean

demo: $(STAMP_BASE)
	$(PY) examples/quickstart.py

examples: $(STAMP_EXAMPLES)
	@for script in $(EXAMPLE_SCRIPTS); do \
		echo "=== $$script"; \
		$(PY) $$script || exit 1; \
	done

test: $(STAMP_TEST)
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(PY) -m pytest -n auto --dist loadfile

test-matrix:
	.ci/matrix

lint: $(STAMP_TEST)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

docs: $(STAMP_TEST)
	$(PY) -m mkdocs build --strict

bench: $(STAMP_BASE)
	@for entry in $(BENCH_PACKAGES); do \
		module=$${entry%%:*}; requirement=$${entry#*:}; \
		if ! $(PY) -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$$module') is None)"; then \
			echo "installing $$requirement (optional, for comparison)"; \
			$(PIP_INSTALL) "$$requirement" || echo "could not install $$requirement; its column is left out"; \
		fi; \
	done
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build site *.egg-info .pytest_cache .ruff_cache .hypothesis

$(PY):
	$(PYTHON) -m venv $(VENV)

# Stamps of an older pyproject.toml are removed, so that going back to it installs again.
$(STAMP_BASE): | $(PY)
	$(PIP_INSTALL) -e .
	$(REMOVE_OLD_STAMPS)
	touch $@

$(STAMP_EXAMPLES): | $(PY)
	$(PIP_INSTALL) -e '.[examples]'
	$(REMOVE_OLD_STAMPS)
	touch $@ $(STAMP_BASE)

# The test extra includes the base install and the examples extra, so it leaves all three stamps.
$(STAMP_TEST): | $(PY)
	$(PIP_INSTALL) -e '.[test]'
	$(REMOVE_OLD_STAMPS)
	touch $@ $(STAMP_BASE) $(STAMP_EXAMPLES)
