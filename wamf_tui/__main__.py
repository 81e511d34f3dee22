"""`python -m wamf_tui`. Python put the current folder first on `sys.path`; started inside a repository,
that folder's `argparse.py` or `json.py` would be imported in place of the real one. It is taken off
before anything else is imported (as `python -P` does, Python 3.11+); `entry` then re-runs the command
isolated when PYTHONPATH reaches into the repo."""

import os
import sys

if not getattr(sys.flags, "safe_path", False) and sys.path and \
        os.path.realpath(sys.path[0] or os.curdir) == os.path.realpath(os.getcwd()):
    del sys.path[0]

from .entry import main  # noqa: E402

raise SystemExit(main())
