"""One screen per step over the shared `Conversation`; all four panes on each. A screen draws the
state, hands answers to the flow, and posts what the app must do; it never calls the app."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Input, OptionList

from .. import flow, wording
from ..contract import finish
from ..detect.summary import describe
from ..infra import clipboard
from ..infra.visible import visible
from ..model import Step
from ..wording import say
from .conversation import Conversation
from .dialogs import KeysScreen
from .messages import AnswerGiven, CopyRequested, RescanRequested, TrialRequested
from .widgets import AnswerInput, DetectedPane, KeysFooter, PreviewPane, QuestionView, StepsBar

DIGITS = [Binding(str(n), f"digit({n})", show=False) for n in range(1, 10)]


class StepScreen(Screen):
    STEP: Step = Step.READER
    AUTO_FOCUS = "#answer, #options"  # never a pane: keys typed early must land in the answer
    # The footer is the same on every step: back, quit, explain, the keys, and F2 where the preview is hidden;
    # in that order, so a 40-column footer still says how to quit and how to explain. The other keys are said
    # where they work (the question, its answer line) and listed by F1.
    BINDINGS = [
        Binding("escape", "back", "back"),
        Binding("ctrl+q", "app.quit", "quit"),  # the app's own comes last in the footer
        Binding("question_mark", "explain", "explain"),
        Binding("f2", "toggle_preview", "preview"),
        Binding("f1", "keys", "keys"),
        Binding("shift+down", "scroll_prompt(1)", "more", show=False),  # a question's text the area cuts short
        Binding("shift+up", "scroll_prompt(-1)", "more", show=False),
        Binding("space", "toggle_row", "toggle", show=False),
        Binding("ctrl+t", "switch_register", "voice", show=False),
        Binding("ctrl+r", "rescan", "re-scan", show=False),
        Binding("t", "try_it", "try it", show=False),  # said where it works: the run question, step 4's check
        *DIGITS,
    ]

    def __init__(self, talk: Conversation) -> None:
        super().__init__()
        self.talk = talk

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
        self.fit()
        self.redraw()

    def on_screen_resume(self) -> None:
        self.fit()

    def on_resize(self) -> None:
        if self.ready:
            self.fit()
            self.redraw(keep_typed=True)

    def fit(self) -> None:
        """The layout's size classes, from the terminal's size and whether it draws only ASCII."""
        w, h = self.app.size
        for name, on in (("-narrow", w < 100), ("-tiny", w < 60 or h < 20), ("-ascii", self.talk.ascii_only)):
            if self.has_class(name) != on:  # restyling the tree is costly: only on a real change
                self.set_class(on, name)

    # --- drawing -------------------------------------------------------------

    @property
    def qview(self) -> QuestionView:
        return self.query_one(QuestionView)

    def redraw(self, keep_typed: bool = True) -> None:
        if not self.ready:
            return
        st = self.talk.state
        self.query_one(StepsBar).show(st.step, st.reader_register, self.talk.ascii_only, self.app.size.width)
        self.redraw_detected()
        self.query_one(PreviewPane).show(*self.preview())
        q = flow.current(st)
        if q is not None:
            kind = self.qview.question.kind if self.qview.question else None
            if self.qview.ask(q, keep_typed=keep_typed, draft=self.talk.drafts.pop(q.key, None)):
                self.qview.say(say("toggles_dropped", st.reader_register))
            if kind != q.kind:
                self.refresh_bindings()  # the footer rebuilds itself: only when the keys that work change

    def preview(self) -> tuple[str, str]:
        return self.talk.contract(), "contract.md (live)"

    def redraw_detected(self) -> None:
        if self.ready:
            st = self.talk.state
            self.query_one(DetectedPane).show(describe(st.detected, st.script), self.talk.pending)

    # --- answering -----------------------------------------------------------

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        current = flow.current(self.talk.state)
        if current is not None and self.qview.question is not None and self.qview.question.key != current.key:
            self.redraw(keep_typed=True)  # an Enter a frame before the next question is drawn: it answers that one
        q = self.qview.question
        if q is None:
            return
        typed = self.qview.typed()
        if q.kind == "multi":
            self.submit(self.qview.multi_value())
        elif q.kind == "choice" and not typed.strip():
            self.submit(self.qview.highlighted_value() or q.default)
        elif q.kind == "text" and not typed.strip() and self.qview.above:
            self.submit(self.qview.above)  # the proposal shown whole above the empty line
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
        self.qview.say(say("paste_joined", self.talk.state.reader_register, lines=event.lines))

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
        state, outcome = flow.answer(self.talk.state, value)
        if outcome.error:
            self.qview.say(outcome.error, error=True)
            return
        self.talk.state = state  # at once: the next key answers the next question
        self.post_message(AnswerGiven(outcome))

    # --- actions ---------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        focused = self.focused
        typing = isinstance(focused, Input) and bool(focused.value)
        q = self.qview.question if self.is_mounted else None
        if action == "digit":
            return bool(q and q.options) and not typing
        if action == "explain":  # the untouched proposal is no typing: ? explains it (dimmed, never hidden, else)
            return True if not typing or isinstance(focused, Input) and focused.value == self.qview.prefilled else None
        if action == "toggle_row":
            return bool(q and q.kind == "multi") and not typing
        if action == "toggle_preview":  # at any size: hidden on a small screen, cramped at 80x24
            return True
        if action == "try_it":  # the answer line takes t as a key while it holds the untouched proposal
            untouched = isinstance(focused, Input) and focused.value == self.qview.prefilled
            return self.can_try() and (not typing or untouched)
        if action == "confirm":
            return self.talk.state.at == "confirm" and not typing
        if action == "copy":
            return self.talk.state.at == "done"
        return True

    def can_try(self) -> bool:
        """`t` tries the benchmark at the run question (its proposal) and at step 4 (the run line)."""
        q = self.qview.question if self.is_mounted else None
        if q is None:
            return False
        return q.key == "run" and bool(q.default.strip()) or q.key == "confirm" and bool(self.talk.state.run)

    def action_try_it(self) -> None:
        if not self.can_try():
            return
        q = self.qview.question
        default = q.default if q is not None else ""
        run = self.talk.state.run if self.STEP == Step.CONFIRM else (self.qview.typed().strip() or default)
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
        if (left := self.qview.draft()) is not None:  # toggles not yet taken with Enter: kept for the way back
            self.talk.drafts[left[0]] = left[1]
        self.talk.state = flow.back(self.talk.state)
        self.post_message(AnswerGiven(flow.Outcome(action="stay")))

    def action_switch_register(self) -> None:
        st = self.talk.state
        self.talk.state = st.model_copy(update={"reader_register": "mlsys" if st.reader_register == "algo" else "algo"})
        self.post_message(AnswerGiven(flow.Outcome(action="stay")))

    def action_rescan(self) -> None:
        self.post_message(RescanRequested())

    def action_scroll_prompt(self, rows: int) -> None:
        self.query_one("#prompt").scroll_relative(y=rows, animate=False)

    def action_toggle_preview(self) -> None:
        self.toggle_class("-show-preview")

    def _hand_on(self, event) -> bool:
        """An Enter or a typed letter that reached a pane (the focus it took while a write hid the options, a
        frame before the next question's took it back; or a Tab) is the question's: once the answer line or
        the options are laid out, they take the focus and do what the key does there."""
        bound = {b.key for b in self.BINDINGS if isinstance(b, Binding)}
        target = self.qview.target()
        if target is None or not (event.key == "enter" or event.is_printable and event.key not in bound):
            return False
        event.stop()
        key, character = event.key, event.character

        def again() -> None:
            if not (target.display and target.region.area):
                return
            target.focus()
            if key == "enter":
                self.call_later(target.action_submit if isinstance(target, Input) else target.action_select)
            elif isinstance(target, Input) and character:
                if target.selection.is_empty:
                    target.insert_text_at_cursor(character)
                else:
                    target.replace(character, *target.selection)

        self.call_after_refresh(again)
        return True

    def on_key(self, event) -> None:
        """Up/down in the answer line move the option highlight, so the hands can stay on the keyboard row."""
        if isinstance(self.focused, PreviewPane | DetectedPane) and self._hand_on(event):
            return
        if event.key == "up" and isinstance(self.focused, Input) and self.qview.above and not self.focused.value:
            self.qview.edit_above()
            event.stop()
            return
        if event.key in ("pageup", "pagedown") and isinstance(self.focused, Input):
            options = self.query_one("#options", OptionList)
            if options.display and options.option_count:
                options.action_page_up() if event.key == "pageup" else options.action_page_down()
                event.stop()
            return
        if event.key in ("up", "down") and isinstance(self.focused, Input):
            options = self.query_one("#options", OptionList)
            if options.display and options.option_count:
                options.action_cursor_up() if event.key == "up" else options.action_cursor_down()
                event.stop()
                q = self.qview.question
                if q is not None and q.kind == "choice" and self.focused.value == self.qview.prefilled:
                    self.focused.value = ""  # an earlier own answer, untouched: Enter now takes the option


class ReaderScreen(StepScreen):
    STEP = Step.READER


class JobScreen(StepScreen):
    STEP = Step.JOB


class ChecksScreen(StepScreen):
    STEP = Step.CHECKS


class RulesScreen(StepScreen):
    STEP = Step.RULES


class ConfirmScreen(StepScreen):
    """Step 4: the check result and the confirmation; then the write's questions (the flow's, like every
    other), with the difference or the written contract in the preview (`Conversation.shown_file`)."""

    STEP = Step.CONFIRM
    BINDINGS = [
        Binding("y", "confirm('yes')", "write it", show=False),  # said by the question, as c and p are
        Binding("n", "confirm('no')", "go back", show=False),
        Binding("c", "copy('command')", "copy command", show=False),
        Binding("p", "copy('path')", "copy path", show=False),
    ]

    def action_confirm(self, value: str) -> None:
        self.submit(value)

    def action_copy(self, what: str) -> None:
        text = wording.CLAUDE if what == "command" else visible(self.talk.state.contract_path)
        self.post_message(CopyRequested(text))

    def copied(self, text: str, way: clipboard.Way) -> None:
        self.qview.say(wording.COPIED[way.value].format(text=text))

    def preview(self) -> tuple[str, str]:
        shown = self.talk.shown_file
        return shown if shown is not None and self.talk.state.at in ("overwrite", "done") else super().preview()

    def redraw(self, keep_typed: bool = True) -> None:
        if not self.ready:
            return
        super().redraw(keep_typed)
        if self.talk.state.at != "confirm":
            self.refresh_bindings()
            return
        verdict = self.talk.verdict()
        said = [f"line {line}: {m}" for line, m in finish.problems(self.talk.contract(), verdict)]
        if said:
            self.qview.say("check: " + "; ".join(said[:3]), True)
        else:
            self.qview.say("check: passes every rule the optimizer checks" + (
                f"; {verdict.warnings[0]}" if verdict.warnings else ", and the run line fits the job's code")
                + " · t: try the run line now")


SCREENS: dict[Step, type[StepScreen]] = {
    Step.READER: ReaderScreen,
    Step.JOB: JobScreen,
    Step.CHECKS: ChecksScreen,
    Step.RULES: RulesScreen,
    Step.CONFIRM: ConfirmScreen,
}
