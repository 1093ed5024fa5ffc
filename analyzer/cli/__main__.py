"""``python -m analyzer.cli``: the same as ``expert-analyze`` (used under ``mpiexec``)."""

import sys

from .analyze import main

sys.exit(main())
