"""``python -m groundlock``: the same command as the installed ``groundlock`` script."""

import sys

from groundlock.cli import main

if __name__ == "__main__":
    sys.exit(main())
