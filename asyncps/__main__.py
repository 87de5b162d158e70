"""`python -m asyncps SUBCOMMAND ...`: the `asyncps` console script (asyncps/cli.py)."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m asyncps"))
