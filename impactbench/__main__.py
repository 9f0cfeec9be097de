"""``python -m impactbench``: the command line (see :mod:`impactbench.bench.cli`)."""

import sys

from .bench.cli import main

sys.exit(main())
