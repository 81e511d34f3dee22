"""The app's hold on the repo's session: every answer saved by the saver's thread, the lock checked while the
app waits for a key, the session taken over by another instance (read-only from then on) and taken back.
A base of the app, so its message handlers are the app's own."""

from __future__ import annotations

from textual.app import App

from ..model import InitState
from ..session import lock
from ..session import store as session
from .messages import SaveFailed, SessionLost


class SessionKeeping(App):
    read_only: lock.Holder | None  # another instance holds this repo's session: save nothing
    holds_session: bool  # took the repo's lock (`open_session`): each save first checks it still does
    saver: session.Saver
    state: InitState

    def save(self, wait: bool = False) -> None:
        """Queue the state for the saver thread; `wait` when the process is about to end. Read-only
        (another instance holds the session): nothing, so its answers are never overwritten."""
        if self.read_only is not None:
            return
        self.saver.submit(self.state)
        if wait and not self.saver.flush():
            self.notify("the session is still being saved; the disk is slow", severity="warning")

    def _save_failed(self, error: str) -> None:
        """From the saver's thread: only a message crosses over."""
        self.post_message(SaveFailed(error))

    def on_save_failed(self, msg: SaveFailed) -> None:
        self.notify(msg.error, severity="warning")

    def _still_mine(self, repo: str) -> bool:
        return not self.holds_session or lock.still_mine(repo)

    def _check_lock(self) -> None:
        """Another instance took the session over while this one waited for a key: stop saving now."""
        if self.holds_session and not self.saver.lost and not lock.still_mine(self.state.repo_path):
            self.saver.lost = True
            self._session_lost(self.state.repo_path)

    def _session_lost(self, repo: str) -> None:
        """From the saver's thread: another instance took the session over; this one saved nothing."""
        self.post_message(SessionLost(lock.holder(repo)))

    def on_session_lost(self, msg: SessionLost) -> None:
        self.read_only = msg.holder or lock.Holder(0, "", "")
        self.holds_session = False
        who = f"another wamf-tui ({msg.holder.describe()})" if msg.holder else "another wamf-tui, since closed,"
        self.notify(f"{who} took this repo's session over: this one is read-only now and saved nothing since. "
                    "Take it back from the palette (ctrl+p) to save here again.",
                    title="read-only", severity="warning", timeout=30)

    def take_over(self) -> None:
        """This instance holds the session from now on, and saves."""
        lock.take(self.state.repo_path)
        self.read_only = None
        self.holds_session = True
        self.saver.regained()
        self.save()
        self.notify("this instance now holds the session; answers are saved again", title="session")
