# Two commands do everything on a fresh machine: `make run` trains the default experiment,
# `make test` runs the test suite. Both build .venv first when it is missing or stale.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STEPS ?=

.PHONY: run test bench lint clean

$(VENV)/.installed: pyproject.toml constraints/cpu.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints/cpu.txt torch==2.13.0
	$(PY) -m pip install --quiet -c constraints/cpu.txt -e '.[dev]'
	touch $@

run: $(VENV)/.installed
	$(PY) examples/main_job.py $(STEPS)

test: $(VENV)/.installed
	$(PY) -m pytest -m "not slow" -q

bench: $(VENV)/.installed
	$(PY) -m pip install --quiet -c constraints/cpu.txt -e '.[bench]'
	$(PY) benchmarks/trajectories.py
	$(PY) benchmarks/loop.py
	$(PY) benchmarks/vector.py
	$(PY) benchmarks/gym_env.py

lint: $(VENV)/.installed
	$(PY) -m ruff check stagerl trajectories tests benchmarks examples

clean:
	rm -rf $(VENV)
