"""What crosses from a worker thread to the app: one typed message per kind of news.

A thread touches no widget and no app attribute; it posts one of these, and the handler on the
event loop does the rest.
"""

from __future__ import annotations

from textual.message import Message

from ..contract.render import WriteResult
from ..detect.isolated import ChildDetection
from ..flow import Outcome
from ..infra import clipboard
from ..model import Analysis, HardwareFacts
from ..session.lock import Holder


class DetectionStarted(Message):
    """The detection child is running: the app keeps it, to stop it on a re-scan."""

    def __init__(self, detection: ChildDetection, run: int) -> None:
        super().__init__()
        self.detection, self.run = detection, run


class FactsArrived(Message):
    """One subject's facts from the detection child (or why it failed)."""

    def __init__(self, subject: str, facts: object, run: int) -> None:
        super().__init__()
        self.subject = subject
        self.facts = facts
        self.run = run  # which detection it came from: a re-scan drops what the previous one still sends


class GpusRefreshed(Message):
    """NVML read again while the detected pane is on screen."""

    def __init__(self, hardware: HardwareFacts | Exception) -> None:
        super().__init__()
        self.hardware = hardware


class AnalysisReady(Message):
    """The script's reading, from the analysis child (or why it failed)."""

    def __init__(self, analysis: Analysis | Exception) -> None:
        super().__init__()
        self.analysis = analysis


class SaveFailed(Message):
    """The saver thread could not write the session."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class SessionLost(Message):
    """The saver found another instance holding the session (`holder`, None when it has quit since)."""

    def __init__(self, holder: Holder | None) -> None:
        super().__init__()
        self.holder = holder


class ContractWritten(Message):
    """The outcome of the contract write, posted from the writing thread."""

    def __init__(self, result: WriteResult, text: str, wrapper_error: str | None) -> None:
        super().__init__()
        self.result, self.text, self.wrapper_error = result, text, wrapper_error


# --- what a screen asks of the app (a screen posts; it never calls the app) ---------------------------------


class AnswerGiven(Message):
    """The flow took an answer (or a key moved the place): save, and show the step the outcome says."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__()
        self.outcome = outcome


class TrialRequested(Message):
    """`t`: show what this run line would run, and run it on a second key."""

    def __init__(self, run: str) -> None:
        super().__init__()
        self.run = run


class RescanRequested(Message):
    """ctrl+r: detect again (a commit or a stash in another pane)."""


class CopyRequested(Message):
    """Copy `text`: into tmux's paste buffer inside tmux, else the terminal's clipboard (OSC 52)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class Copied(Message):
    """A copy is done (`clipboard.copy`'s way, and the escape sequence still to write, if any)."""

    def __init__(self, text: str, copied: tuple[clipboard.Way, str] | Exception) -> None:
        super().__init__()
        self.text = text
        self.copied = copied
