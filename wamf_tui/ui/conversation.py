"""What the app and its screens share: the session's state and what is drawn from it.

The app owns one `Conversation` and hands it to each screen it builds. A screen reads the state here,
keeps the state the flow returns for an answer (at once, so a second key pressed before the next frame
answers the next question), and posts a message for everything else; it never calls the app.
"""

from __future__ import annotations

from ..contract import finish
from ..contract import render as contract
from ..model import InitState
from ..propose.validate import Verdict


class Conversation:
    def __init__(self, state: InitState, template: str, ascii_only: bool) -> None:
        self.state = state
        self.template = template
        self.ascii_only = ascii_only
        self.pending: list[str] = []  # the subjects detection (and the reading) still owes
        self.shown_file: tuple[str, str] | None = None  # step 4 after a write: (text, title) for the preview
        self._verdict: tuple[tuple[str, str], object, Verdict] | None = None
        # toggles of a list question left with Esc before Enter took them: its options' values, the ones checked
        self.drafts: dict[str, tuple[tuple[str, ...], frozenset[int]]] = {}

    def contract(self) -> str:
        return contract.render(self.state, self.template)

    def verdict(self) -> Verdict:
        """The run line held against the job's code, from the reading already done (no script is read
        here). Kept while the run line, the reading and the contract's place stay the same: step 4 redraws
        on every detection result, and the check looks at files."""
        st = self.state
        lines = (st.run, st.contract_path)
        if self._verdict is None or self._verdict[0] != lines or self._verdict[1] is not st.analysis:
            self._verdict = lines, st.analysis, finish.run_verdict(st, read=False)
        return self._verdict[2]
