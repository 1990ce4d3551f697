# Two commands do everything on a fresh machine: `make run` trains the default experiment (DQN on
# CartPole-v1), `make test` runs the test suite. Both build .venv first when it is missing or
# stale. `make run STEPS=20000` runs a shorter one.
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
	$(VENV)/bin/stagerl run dqn-cartpole $(if $(STEPS),--steps $(STEPS))

test: $(VENV)/.installed
	$(PY) -m pytest -m "not slow" -q

bench: $(VENV)/.installed
	$(PY) -m pip install --quiet -c constraints/cpu.txt -e '.[bench]'
	$(PY) benchmarks/trajectories.py
	$(PY) benchmarks/loop.py
	$(PY) benchmarks/vector.py
	$(PY) benchmarks/gym_env.py
	$(PY) benchmarks/hooks_overhead.py

lint: $(VENV)/.installed
	$(PY) -m ruff check stagerl trajectories tests benchmarks examples tools

clean:
	rm -rf $(VENV)
