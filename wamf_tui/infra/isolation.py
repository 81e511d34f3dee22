"""How wamf-tui starts Python isolated (`python -I`): its own package first on the path, nothing of
the user's (`PYTHONPATH`, the user site, the current folder). Used by the command's first lines
(`entry`) and by every child the app starts (`children`); only `os` and `sys` are imported here."""

import os
import sys

OUR_FOLDER = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# What an isolated child runs: our package from its own folder, whatever the current folder holds.
BOOT = f"import sys; sys.path.insert(0, {OUR_FOLDER!r}); from wamf_tui.cli import main; sys.exit(main())"


def isolated_command(*args: str) -> list[str]:
    return [sys.executable, "-I", "-c", BOOT, *args]
