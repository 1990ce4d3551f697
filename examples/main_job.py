"""The project's main job (``make run``): tabular Q-learning on RandomWalk1D and FrozenLake-v1.

Usage: python examples/main_job.py [STEPS]  (training steps per environment; default 5000,
a few seconds on one CPU core). Exits non-zero unless both environments are solved.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tabular_q_random_walk import main  # noqa: E402  (the examples folder is not a package)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
