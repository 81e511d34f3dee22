"""The `wamf-tui` command's first lines: make sure none of the user's Python runs in the app.

Users start wamf-tui inside their repo, often with `PYTHONPATH` pointing at it. Then a repo's
`re.py`, `json.py` or `sitecustomize.py` would be imported in place of the real one as soon as the
app imports it. Before it imports anything, the app re-runs itself isolated (`python -I`: no
`PYTHONPATH`, no user site, no current folder on `sys.path`), and its own children always start
that way (`children.wamf_tui`, through `isolation`). Only `os` and `sys`, loaded by Python itself, are
used here.
"""

import os
import sys

from .infra.isolation import isolated_command

_REACHES_SYS_PATH = ("PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE")


def main() -> int:
    if not sys.flags.isolated and any(os.environ.get(v) for v in _REACHES_SYS_PATH):
        os.execv(sys.executable, isolated_command(*sys.argv[1:]))
    from .cli import main as cli_main

    return cli_main()
