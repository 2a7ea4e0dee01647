"""The ``libra-opt`` command line: argparse over the Python API, nothing else."""

from libra_opt.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
