"""`python -m verifidx.cli`: the same command as the `verifidx` script."""

import sys

from verifidx.cli import main

sys.exit(main())
