"""The app started from the command line: on a repo (a new session, the saved one offered, or read-only when
another instance holds it), or on a session filled from an answers file; and what is said once it ends."""

from __future__ import annotations

import sys
from pathlib import Path

from .. import wording
from ..infra import checkout
from ..model import InitState, Step
from ..session import lock
from ..session import store as session
from .app import WamfApp


def open_session(root: Path) -> lock.Holder | None:
    """Take the repo's session, or say who holds it (this instance is then read-only)."""
    held_by = lock.holder(root)
    if held_by is None:
        lock.take(root)
    return held_by


def make_app(path: Path, contract: str | None = None, template: str | None = None, fresh: bool = False,
             detect: bool = True) -> WamfApp:
    """The app on a repo as the command line starts it (and the tests): a new state, the saved session
    offered unless `fresh` or finished, a damaged one said, and the repo's session taken, or read-only
    when another instance holds it."""
    root = checkout.find_root(path)
    state = session.new_state(root, contract, template)
    held_by = open_session(root)
    saved, damage = (None, None) if fresh else session.load_saved(root)
    if fresh and held_by is None:
        session.forget(root)
    if saved is not None and saved.written and saved.step == Step.CONFIRM:
        saved = None  # a finished session: start a new one
    app = WamfApp(state, saved=saved, detect=detect)
    app.startup_notes = [("saved session", damage)] if damage else []
    app.read_only, app.holds_session = held_by, held_by is None
    return app


def run_app(path: Path, contract: str | None = None, template: str | None = None, fresh: bool = False) -> int:
    app = make_app(path, contract, template, fresh)
    try:
        app.run()
    finally:
        lock.release(app.state.repo_path)  # the root make_app took the session for
    _say_if_lost(app)
    if app.state.written:
        print("\n".join(wording.done_lines(app.state)))
    return 0


def prefilled_app(state: InitState) -> WamfApp:
    """The app on a state filled from an answers file. It takes the repo's session like any start, or
    is read-only while another instance holds it."""
    held_by = open_session(Path(state.repo_path))
    app = WamfApp(state)
    app.read_only, app.holds_session = held_by, held_by is None
    return app


def run_prefilled(state: InitState, refused: str = "") -> int:
    """`--answers` without `--yes`: open at step 4 on the filled state, to read and confirm; or at the question
    whose answer was `refused`, with the answers before it kept and the reason said."""
    app = prefilled_app(state)
    if refused:
        app.startup_notes.append(("answers file", f"{refused.rstrip('.')}; the answers before it are kept"))
    try:
        app.run()
    finally:
        lock.release(state.repo_path)
    _say_if_lost(app)
    if app.state.written:
        print("\n".join(wording.done_lines(app.state)))
    return 0


def _say_if_lost(app: WamfApp) -> None:
    """Taken over while quitting, the last save was refused: said on the terminal, since the screen is gone."""
    if app.saver.lost:
        print("wamf-tui: another wamf-tui took this repo's session over; this one's last answers were not saved",
              file=sys.stderr)
