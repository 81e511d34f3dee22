"""One screen per step over the shared `InitState`; all four panes on each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, OptionList, Static

from .. import contract, finish, flow, git_exclude, wording
from ..detect import describe
from ..flow import Option, Question
from ..model import Analysis, Step
from ..validate import Verdict
from ..visible import visible
from ..wording import say
from .messages import (
    AnswerGiven,
    ContractKept,
    ContractWritten,
    CopyRequested,
    RescanRequested,
    SaveRequested,
    TrialRequested,
    WriteRequested,
)
from .widgets import AnswerInput, DetectedPane, KeysFooter, PreviewPane, QuestionView, StepsBar

if TYPE_CHECKING:
    from .app import WamfApp

DIGITS = [Binding(str(n), f"digit({n})", show=False) for n in range(1, 10)]


class StepScreen(Screen):
    STEP: Step = Step.READER
    AUTO_FOCUS = "#answer, #options"  # never a pane: keys typed early must land in the answer
    BINDINGS = [
        Binding("escape", "back", "back"),
        # shown here, early, so a 40-column footer still says how to quit (the app's own comes last)
        Binding("ctrl+q", "app.quit", "quit"),
        Binding("question_mark", "explain", "explain"),
        Binding("f1", "keys", "keys"),
        Binding("space", "toggle_row", "toggle"),
        Binding("ctrl+t", "switch_register", "voice"),
        Binding("ctrl+r", "rescan", "re-scan"),
        Binding("f2", "toggle_preview", "preview"),
        Binding("t", "try_it", "try it", show=False),  # said where it works: the run question, step 4's check
        *DIGITS,
    ]

    app: WamfApp

    def compose(self) -> ComposeResult:
        yield StepsBar(id="steps")
        with Horizontal(id="middle"):
            yield DetectedPane(id="detected")
            yield PreviewPane(id="preview")
        yield QuestionView(id="question")
        yield KeysFooter()

    ready = False  # set once the panes exist; detection results arriving earlier wait for on_mount

    def on_mount(self) -> None:
        self.ready = True
        self.app.apply_size_classes(self)
        self.redraw()

    def on_screen_resume(self) -> None:
        self.app.apply_size_classes(self)

    def on_resize(self) -> None:
        if self.ready:
            self.app.apply_size_classes(self)
            self.redraw(keep_typed=True)

    # --- drawing -------------------------------------------------------------

    @property
    def qview(self) -> QuestionView:
        return self.query_one(QuestionView)

    def redraw(self, keep_typed: bool = True) -> None:
        if not self.ready:
            return
        st = self.app.state
        self.query_one(StepsBar).show(st.step, st.reader_register, self.app.ascii_only, self.app.size.width)
        self.redraw_detected()
        self.query_one(PreviewPane).show(self.app.render_contract())
        q = flow.current(st)
        if q is not None:
            kind = self.qview.question.kind if self.qview.question else None
            self.qview.ask(q, keep_typed=keep_typed)
            if kind != q.kind:
                self.refresh_bindings()  # the footer rebuilds itself: only when the keys that work change

    def redraw_detected(self) -> None:
        if self.ready:
            st = self.app.state
            self.query_one(DetectedPane).show(describe(st.detected, st.script), self.app.pending)

    # --- answering -----------------------------------------------------------

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        q = self.qview.question
        if q is None:
            return
        typed = event.value
        if q.kind == "multi":
            self.submit(self.qview.multi_value())
        elif q.kind == "choice" and not typed.strip():
            self.submit(self.qview.highlighted_value() or q.default)
        elif q.kind == "choice" and self.qview.filter_word() and self.qview.shown:
            self.submit(self.qview.highlighted_value() or typed)  # a word typed to filter: the option it found
        else:
            self.submit(typed)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        q = self.qview.question
        shown = self.qview.shown
        if q is None or not 0 <= event.option_index < len(shown) or shown[event.option_index] >= len(q.options):
            return  # an Enter queued for a question that has since moved on
        if q.kind == "multi":
            self.submit(self.qview.multi_value())
        else:
            self.submit(q.options[shown[event.option_index]].value)

    def on_answer_input_joined(self, event: AnswerInput.Joined) -> None:
        event.stop()
        self.qview.say(say("paste_joined", self.app.state.reader_register, lines=event.lines))

    def on_answer_input_shortcut(self, event: AnswerInput.Shortcut) -> None:
        event.stop()
        c = event.character
        if c == "?":
            self.action_explain()
        elif c == "t":
            self.action_try_it()
        elif c == " ":
            self.action_toggle_row()
        else:
            self.action_digit(int(c))

    def submit(self, value: str | list[str]) -> None:
        state, outcome = flow.answer(self.app.state, value)
        if outcome.error:
            self.qview.say(outcome.error, error=True)
            return
        self.app.state = state  # at once: the next key answers the next question
        self.post_message(AnswerGiven(outcome))

    # --- actions ---------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        focused = self.focused
        typing = isinstance(focused, Input) and bool(focused.value)
        q = self.qview.question if self.is_mounted else None
        if action == "digit":
            return bool(q and q.options) and not typing
        if action == "explain":
            return not typing
        if action == "toggle_row":
            return bool(q and q.kind == "multi") and not typing
        if action == "toggle_preview":
            return self.has_class("-tiny")
        if action == "try_it":  # the answer line takes t as a key while it holds the untouched proposal
            untouched = isinstance(focused, Input) and focused.value == self.qview.prefilled
            return self.can_try() and (not typing or untouched)
        if action == "confirm":
            return getattr(self, "phase", "") == "confirm" and not typing
        if action == "copy":
            return getattr(self, "phase", "") == "done"
        return True

    def can_try(self) -> bool:
        """`t` tries the benchmark at the run question (its proposal) and at step 4 (the run line)."""
        q = self.qview.question if self.is_mounted else None
        if getattr(self, "phase", "confirm") != "confirm" or q is None:
            return False
        return q.key == "run" and bool(q.default.strip()) or self.STEP == Step.CONFIRM and bool(self.app.state.run)

    def action_try_it(self) -> None:
        if not self.can_try():
            return
        q = self.qview.question
        default = q.default if q is not None else ""
        run = self.app.state.run if self.STEP == Step.CONFIRM else (self.qview.typed().strip() or default)
        self.post_message(TrialRequested(run))

    def action_digit(self, n: int) -> None:
        q = self.qview.question
        if q is None or not 0 < n <= len(q.options):
            return
        if q.kind == "multi":
            self.qview.toggle(n - 1)
        else:
            self.submit(q.options[n - 1].value)

    def action_toggle_row(self) -> None:
        idx = self.query_one("#options", OptionList).highlighted
        if idx is not None:
            self.qview.toggle(idx)

    def action_keys(self) -> None:
        self.app.push_screen(KeysScreen())

    def action_explain(self) -> None:
        q = self.qview.question
        if q is not None:
            self.qview.say(f"{q.help or q.prompt}  (F1: every key)")

    def action_back(self) -> None:
        self.app.state = flow.back(self.app.state)
        self.post_message(AnswerGiven(flow.Outcome(action="stay")))

    def action_switch_register(self) -> None:
        st = self.app.state
        self.app.state = st.model_copy(update={"reader_register": "mlsys" if st.reader_register == "algo" else "algo"})
        self.post_message(AnswerGiven(flow.Outcome(action="stay")))

    def action_rescan(self) -> None:
        self.post_message(RescanRequested())

    def action_toggle_preview(self) -> None:
        self.toggle_class("-show-preview")

    def on_key(self, event) -> None:
        """Up/down in the answer line move the option highlight, so the hands can stay on the keyboard row."""
        if event.key in ("up", "down") and isinstance(self.focused, Input):
            options = self.query_one("#options", OptionList)
            if options.display and options.option_count:
                options.action_cursor_up() if event.key == "up" else options.action_cursor_down()
                event.stop()
                q = self.qview.question
                if q is not None and q.kind == "choice" and self.focused.value == self.qview.prefilled:
                    self.focused.value = ""  # an earlier own answer, untouched: Enter now takes the option


class KeysScreen(ModalScreen[None]):
    """Every key, in one place (F1)."""

    BINDINGS = [Binding("escape,f1,q", "dismiss", "close")]

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for key, what in wording.KEYS:
            table.add_row(key, what)
        yield Static(table, id="keys")

    def on_mount(self) -> None:
        self.query_one("#keys").border_title = "keys · Esc closes"


class ReaderScreen(StepScreen):
    STEP = Step.READER


class JobScreen(StepScreen):
    STEP = Step.JOB


class ChecksScreen(StepScreen):
    STEP = Step.CHECKS


class RulesScreen(StepScreen):
    STEP = Step.RULES


class ConfirmScreen(StepScreen):
    """Step 4: the check result, the confirmation, and the write (with diff and .bak when a contract exists)."""

    STEP = Step.CONFIRM
    BINDINGS = [
        Binding("y", "confirm('yes')", "write it"),
        Binding("n", "confirm('no')", "go back", show=False),
        Binding("c", "copy('command')", "copy command"),
        Binding("p", "copy('path')", "copy path"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.phase = "confirm"  # confirm, writing, overwrite, path, done
        self._verdict: tuple[tuple[str, str], Analysis | None, Verdict] | None = None  # (lines, reading, verdict)

    def action_confirm(self, value: str) -> None:
        self.submit(value)

    def action_copy(self, what: str) -> None:
        text = wording.CLAUDE if what == "command" else visible(self.app.state.contract_path)
        self.post_message(CopyRequested(text))
        self.qview.say(f"Sent to your clipboard (OSC 52): {text} · if nothing arrived, copy it from here.")

    def redraw(self, keep_typed: bool = True) -> None:
        if not self.ready:
            return
        if self.phase == "confirm":
            super().redraw(keep_typed)
            verdict = self.run_verdict()
            said = [f"line {line}: {m}" for line, m in finish.problems(self.app.render_contract(), verdict)]
            if said:
                self.qview.say("check: " + "; ".join(said[:3]), True)
            else:
                self.qview.say("check: passes the downstream rules" + (
                    f"; {verdict.warnings[0]}" if verdict.warnings else ", and the run line fits the job's code")
                    + " · t: try the run line now")
            return
        st = self.app.state
        self.query_one(StepsBar).show(st.step, st.reader_register, self.app.ascii_only, self.app.size.width)
        self.redraw_detected()
        self.refresh_bindings()

    def run_verdict(self) -> Verdict:
        """The run line held against the job's code, from the reading already done (no script is read
        here). Kept while the run line, the reading and the contract's place stay the same: the screen
        redraws on every detection result, and the check looks at files."""
        st = self.app.state
        lines = (st.run, st.contract_path)
        if self._verdict is None or self._verdict[0] != lines or self._verdict[1] is not st.analysis:
            self._verdict = lines, st.analysis, finish.run_verdict(st, read=False)
        return self._verdict[2]

    def submit(self, value: str | list[str]) -> None:
        st = self.app.state
        r = st.reader_register
        text = value if isinstance(value, str) else " ".join(value)
        if self.phase == "writing":
            return  # an Enter while the file is being written: the outcome is on its way
        if self.phase == "confirm":
            super().submit(value)
        elif self.phase == "overwrite":
            if text == "overwrite":
                self.write(overwrite=True)
            elif text == "other":
                self.ask_path()
            else:
                self.phase = "confirm"
                self.redraw()
        elif self.phase == "done":
            if text == "yes":
                self.qview.say(git_exclude.add_to_exclude(st) + " · ctrl+q quits.")
            else:
                self.qview.say(".git/info/exclude left alone · ctrl+q quits.")
        elif self.phase == "path":
            found = contract.placeholder_in(text)
            if found:
                self.qview.say(say("placeholder", r, found=found), error=True)
                return
            if not text.strip():
                self.qview.say(say("empty", r), error=True)
                return
            self.app.state = st.model_copy(update={"contract_path": self.app.resolve_contract_path(text.strip())})
            self.post_message(SaveRequested())
            self.write()

    def write(self, overwrite: bool = False) -> None:
        """Called by the flow's 'write' action, and again after an overwrite or path answer."""
        st = self.app.state
        text = self.app.render_contract()
        if finish.problems(text, self.run_verdict()):
            self.phase = "confirm"
            self.redraw()
            return
        self.phase = "writing"
        self.qview.say(f"writing {visible(st.contract_path)} …")
        self.post_message(WriteRequested(text, overwrite))

    def on_contract_written(self, msg: ContractWritten) -> None:
        st = self.app.state
        r = st.reader_register
        result, text = msg.result, msg.text
        if result.written:
            self.post_message(ContractKept(st.contract_path, msg.wrapper_error))
        if result.diff is not None:
            self.phase = "overwrite"
            self.query_one(PreviewPane).show(result.diff or "(no difference)", "difference with the file on disk")
            self.qview.ask(Question("overwrite", "choice", say("overwrite", r, path=visible(st.contract_path)), "",
                                    [Option(say("overwrite_yes", r), "overwrite"),
                                     Option(say("overwrite_other", r), "other"),
                                     Option(say("confirm_no", r), "back")], default="overwrite", free_text=False))
        elif result.error:
            self.ask_path(say("write_failed", r, path=visible(st.contract_path), reason=result.error))
        else:
            self.phase = "done"
            self.query_one(PreviewPane).show(text, f"written: {visible(st.contract_path)}")
            own = git_exclude.own_files(st)
            options = [Option(say("exclude_no", r), "no"), Option(say("exclude_yes", r, files=", ".join(own)), "yes")]
            self.qview.ask(Question("done", "choice", self.app.done_message(), "", options if own else [],
                                    default="no", free_text=False))
            self.qview.say("ctrl+q quits.")
        self.refresh_bindings()

    def ask_path(self, error: str = "") -> None:
        r = self.app.state.reader_register
        self.phase = "path"
        self.qview.ask(Question("path", "text", say("other_path", r), "",
                                default=visible(self.app.state.contract_path)))
        if error:
            self.qview.say(error, error=True)


SCREENS: dict[Step, type[StepScreen]] = {
    Step.READER: ReaderScreen,
    Step.JOB: JobScreen,
    Step.CHECKS: ChecksScreen,
    Step.RULES: RulesScreen,
    Step.CONFIRM: ConfirmScreen,
}
