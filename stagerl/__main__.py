"""``python -m stagerl``: the ``stagerl`` command (see :mod:`stagerl.cli`)."""

import sys

from stagerl.cli import main

sys.exit(main())
