"""``python -m libra_opt.cli``: the same as the ``libra-opt`` command."""

import sys

from libra_opt.cli.main import main

sys.exit(main())
