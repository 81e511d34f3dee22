"""Where a session lives between runs, and how one starts.

State is saved outside the checkout (the user's state directory, keyed by the
repo path) after every answer, so `git status` stays clean and a dropped SSH
connection loses nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..infra.files import read_regular, write_atomic
from ..infra.records import Invalid
from ..model import InitState

MAX_STATE = 64 * 1024 * 1024  # a session with its detection and reading is well under a megabyte


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "wamf-tui"


def unusable_state_dir() -> str | None:
    """Why sessions cannot be saved here (the state folder is a file, read-only, full), else None: said
    in one line before the app starts, instead of a traceback on its first save."""
    import tempfile

    d = state_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=d, prefix=".probe-"):
            pass
    except OSError as e:
        return f"cannot save sessions in {d}: {e.strerror or e}; set XDG_STATE_HOME to a folder you can write"
    return None


def state_file(repo_path: str | Path) -> Path:
    key = hashlib.sha256(os.fsencode(Path(repo_path).resolve())).hexdigest()[:16]
    return state_dir() / f"{key}.json"


def _write(path: Path, text: str) -> str | None:
    """Write atomically; an error message instead of an exception (the app keeps going)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
    except OSError as e:
        return f"could not save the session to {path}: {e.strerror or e}"
    return None


class Saver:
    """Saves in one background thread, the newest state winning.

    The app saves after every answer; on a slow (network) home directory the fsync would
    otherwise delay the next keypress. `flush` waits for the write, for quitting and hangups.
    """

    def __init__(self, on_error: Callable[[str], None] = lambda msg: None,
                 still_mine: Callable[[str], bool] = lambda repo: True,
                 on_lost: Callable[[str], None] = lambda repo: None) -> None:
        """`still_mine(repo)` is asked before each write: once it says no (another instance took the
        session over), nothing more is written and `on_lost(repo)` is told, once."""
        self.on_error = on_error
        self.still_mine, self.on_lost = still_mine, on_lost
        self.lost = False
        self._cond = threading.Condition()
        self._queued: tuple[Path, str, str] | None = None
        self._writing = False
        threading.Thread(target=self._run, name="wamf-save", daemon=True).start()

    def submit(self, state: InitState) -> None:
        """Save `state` soon (nothing once the session was lost to another instance, until `regained`)."""
        snapshot = state_file(state.repo_path), state.to_json(), state.repo_path  # the UI goes on changing it
        with self._cond:
            self._queued = snapshot
            self._cond.notify_all()

    def regained(self) -> None:
        """This instance holds the session again (taken back): saves are written again."""
        self.lost = False

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything submitted is on disk; False if that took longer than `timeout`."""
        with self._cond:
            return self._cond.wait_for(lambda: self._queued is None and not self._writing, timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._queued is not None)
                queued, self._queued, self._writing = self._queued, None, True
            assert queued is not None
            path, text, repo = queued
            if not self.lost and not self.still_mine(repo):
                self.lost = True
                self.on_lost(repo)
            err = None if self.lost else _write(path, text)
            if err:
                self.on_error(err)
            with self._cond:
                self._writing = False
                self._cond.notify_all()


def save_now(state: InitState) -> str | None:
    """Save at once, outside the app (`--yes`): `wamf-tui try` then checks the claims from its facts."""
    try:
        text = state.to_json()
    except ValueError as e:  # an answer JSON cannot hold (a path that is not UTF-8, in its text)
        return f"could not save the session: {e.__class__.__name__}"
    return _write(state_file(state.repo_path), text)


def load(repo_path: str | Path) -> InitState | None:
    """The saved session for this repo, or None when there is none or nothing of it is readable."""
    return load_saved(repo_path)[0]


def load_saved(repo_path: str | Path) -> tuple[InitState | None, str | None]:
    """(the saved session, what to tell the user). A file that does not load whole is never dropped in
    silence: it is kept beside as `.corrupt-<time>`, the answers that still validate are kept, and the
    message names the file and what was lost."""
    path = state_file(repo_path)
    try:
        raw = read_regular(path, MAX_STATE + 1)  # never a FIFO, never a link to /dev/zero
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, f"the saved session {path} cannot be read ({e.strerror or e}); starting afresh"
    if len(raw) > MAX_STATE:
        raw = b""  # not a session: kept aside below, as a damaged one
    try:
        return InitState.from_json(raw.decode("utf-8")), None
    except (ValueError, UnicodeDecodeError):
        pass
    stamp = time.strftime("%Y%m%d-%H%M%S")
    kept = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while kept.exists():  # two in one second: the first copy stays
        n += 1
        kept = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    try:
        os.replace(path, kept)
    except OSError:
        kept = path
    state, dropped = _salvage(raw)
    if state is None:
        return None, f"the saved session could not be read; it is kept as {kept}"
    lost = f"; not kept: {', '.join(dropped)}" if dropped else ""
    return state, f"the saved session was damaged; it is kept as {kept}{lost}"


def _salvage(raw: bytes) -> tuple[InitState | None, list[str]]:
    """The answers of a damaged state file that still validate, and the names of those that do not."""
    try:
        data = json.loads(raw.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return None, []
    if not isinstance(data, dict):
        return None, []
    dropped: list[str] = []
    for _ in range(len(data) + 1):
        try:
            return InitState.model_validate(data), sorted(dropped)
        except Invalid as e:
            bad = {str(e.loc[0])} if e.loc else set()
            if not bad & set(data):
                return None, []
            for key in bad & set(data):
                dropped.append(key)
                del data[key]
    return None, []


def forget(repo_path: str | Path) -> None:
    try:
        state_file(repo_path).unlink()
    except OSError:
        pass


def new_state(repo_path: str | Path, contract: str | None = None, template: str | None = None) -> InitState:
    root = Path(repo_path).resolve()
    return InitState(
        repo_path=str(root),
        contract_path=str(Path(contract).expanduser().resolve()) if contract else str(root / "contract.md"),
        template_path=str(Path(template).expanduser().resolve()) if template else None,
    )
