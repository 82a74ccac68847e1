"""``python -m cachesched.cli``."""

import sys

from . import main

sys.exit(main())
