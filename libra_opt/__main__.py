"""``python -m libra_opt``: the ``libra-opt`` command line."""

import sys

from libra_opt.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
