"""python3 -m act.export (act.export.cli)."""

import sys

from .cli import main

sys.exit(main())
