"""python3 -m act.zoo (act.zoo.run)."""

import sys

from .run import main

sys.exit(main())
