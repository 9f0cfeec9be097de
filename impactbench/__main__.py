"""``python -m impactbench``: the command line (see :mod:`impactbench.cli`)."""

import sys

from .cli import main

sys.exit(main())
