#!/usr/bin/env python3
"""bwlab: build the exercises, run the grader, show what it found.

    python3 run.py test        grade the exercises in exercises/ on this machine's GPU
    python3 run.py selftest    run the kit's own tests
    python3 run.py --help      every command
"""
import os
import sys

if sys.version_info < (3, 10):
    sys.exit("run.py needs Python 3.10 or newer (this is %d.%d)" % sys.version_info[:2])

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "grader", "py"))

from bwlab.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
