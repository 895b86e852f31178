"""``python -m autograder``: the command line (``autograder/ways_in/cli.py``)."""

import sys

from autograder.ways_in.cli import main

if __name__ == "__main__":
    sys.exit(main())
