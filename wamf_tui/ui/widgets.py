"""The shared widgets. They draw what they are given; they detect, analyse and write nothing.

All user text is drawn as `rich.text.Text`, never parsed as markup, so an
answer like `[bold]` shows literally.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.dom import NoScreen
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Input, OptionList, Static
from textual.widgets.input import Selection
from textual.widgets.option_list import Option as ListOption

from ..flow import Question
from ..model import STEP_TITLES, Step


class KeysFooter(Footer):
    """Textual's footer rebuilds all its keys on every bindings signal, seven times while the app
    opens; this one rebuilds only when a key, its label or whether it works has changed."""

    _keys: tuple[tuple[str, str, str, bool, bool], ...] | None = None

    def bindings_changed(self, screen: Screen) -> None:
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            keys = tuple((key, b.action, b.description, enabled, b.show)
                         for key, (_, b, enabled, _) in screen.active_bindings.items())
            if keys == self._keys:
                return
            self._keys = keys
        super().bindings_changed(screen)

    def on_resize(self, event: events.Resize) -> None:
        # Below 80 columns ctrl+p gives up its place (F1 still lists it): at 60 the keys then fit,
        # where "quit" used to be cut to "qui".
        self.show_command_palette = event.size.width >= 80
        self.compact = event.size.width < 60  # at 40 columns back, quit, explain and F2 then fit


class DrawsOnChange:
    """The panes are redrawn on every answer and detection result: a widget with this draws only
    when what it is given has changed, so unchanged text costs no layout and no bytes."""

    _shown: object = None

    def unchanged(self, shown: object) -> bool:
        if shown == self._shown:
            return True
        self._shown = shown
        return False


class StepsBar(DrawsOnChange, Static):
    """● done  ◉ current  ○ to come, plus the register in use."""

    def show(self, current: Step, register: str, ascii_only: bool = False, width: int = 120) -> None:
        done, here, todo = ("*", ">", "-") if ascii_only else ("●", "◉", "○")
        compact = width < 100  # in a side pane only the current step keeps its title
        if self.unchanged((current, register, ascii_only, compact)):
            return
        t = Text(no_wrap=True, overflow="ellipsis")
        for step, title in STEP_TITLES.items():
            mark = done if step < current else here if step == current else todo
            style = "bold reverse" if step == current else ("" if step < current else "dim")
            label = f" {mark} {int(step)} {title} " if step == current or not compact else f" {mark}{int(step)}"
            t.append(label, style=style)
        voice = "MLSys engineer" if register == "mlsys" else "algorithm engineer"
        t.append(f"  for: {voice}" if not compact else f"  {'MLSys' if register == 'mlsys' else 'algo'}",
                 style="italic")
        self.update(t)


class DetectedPane(DrawsOnChange, VerticalScroll):
    BORDER_TITLE = "detected"

    def compose(self) -> ComposeResult:
        yield Static(id="detected-body")

    def show(self, rows: list[tuple[str, str]], pending: list[str]) -> None:
        if self.unchanged((tuple(rows), tuple(pending))):  # tuples: the app's pending list changes in place
            return
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        for label, text in rows:
            grid.add_row(label, Text(text))
        for name in pending:
            grid.add_row(name, Text("checking…", style="dim italic"))
        if not rows and not pending:
            grid.add_row("", Text("nothing detected yet", style="dim"))
        self.query_one("#detected-body", Static).update(grid)


class PreviewPane(DrawsOnChange, VerticalScroll):
    BORDER_TITLE = "contract.md (live)"

    def compose(self) -> ComposeResult:
        yield Static(id="preview-body")

    def show(self, text: str, title: str = "contract.md (live)") -> None:
        if self.unchanged((text, title)):
            return
        self.border_title = title
        self.query_one("#preview-body", Static).update(Text(text))


ABOVE = "Enter takes it as shown above · ↑ puts it here to edit · or type your own · ? explain"
PLACEHOLDERS = {
    "choice": "type your own answer · Enter takes the highlighted one · 1-9 pick · ↑↓ move · ? explain",
    "multi": "space toggles · 1-9 toggle · type to add your own · Enter accepts · ? explain",
    "text": "type an answer · Enter accepts · ? explain",
}


class AnswerInput(Input):
    """The answer line. While it is empty, digits, space and ? act as keys (pick, toggle, explain); ?
    also while it holds the untouched proposal, which it explains and never replaces; at the run
    question, so does t (try it).

    Decided here, in key order, rather than by screen bindings: over a slow SSH link keys arrive
    in batches, and a binding would see the line still empty while typed keys are queued."""

    def on_mount(self) -> None:
        self.cursor_blink = False  # over SSH every blink is bytes on the wire, twice a second

    def check_consume_key(self, key: str, character: str | None) -> bool:
        """`?` is the screen's explain key in the footer (which leaves out the keys a focused Input takes);
        the key itself still comes here first, and `_on_key` decides whether it explains or is typed."""
        return key != "question_mark" and super().check_consume_key(key, character)

    class Shortcut(Message):
        def __init__(self, character: str) -> None:
            super().__init__()
            self.character = character

    class Joined(Message):
        """A paste of several lines was joined into the one answer line (say so: nothing dropped silently)."""

        def __init__(self, lines: int) -> None:
            super().__init__()
            self.lines = lines

    def _on_paste(self, event: events.Paste) -> None:
        r"""A pasted command over several lines (`\` continuations, or a plain line break) is one
        command: its lines are joined, as the shell joins them. Textual's own keeps the first line."""
        lines = [ln.strip() for ln in event.text.splitlines() if ln.strip()]
        if len(lines) > 1:
            event.prevent_default()
            event.stop()
            joined = " ".join(ln[:-1].rstrip() if ln.endswith("\\") else ln for ln in lines)
            if self.selection.is_empty:
                self.insert_text_at_cursor(joined)
            else:
                self.replace(joined, *self.selection)
            self.post_message(self.Joined(len(lines)))
        # one line: Input's own handler, next in the class chain, inserts it

    async def _on_key(self, event: events.Key) -> None:
        q = getattr(self.parent, "question", None)
        c = event.character
        proposal = bool(self.value) and sorted(self.selection) == [0, len(self.value)]  # untouched, all selected
        # on a choice, the user's own earlier answer (untouched) is no obstacle to picking an option
        empty = not self.value or proposal and q is not None and q.kind != "text"
        trial = c == "t" and q is not None and q.key == "run"  # try the proposed run line (asks first)
        if c and ((c == "?" or trial) and (not self.value or proposal) or (
                empty and c in "123456789 " and q is not None and q.options)):
            event.stop()
            event.prevent_default()
            self.post_message(self.Shortcut(c))
            return
        await super()._on_key(event)


class Choices(OptionList):
    """The options: whenever the list is given fewer or more rows (a small terminal, a message that takes
    some), it scrolls so the highlighted option stays in view."""

    def on_resize(self, event: events.Resize) -> None:
        self.scroll_to_highlight()


class Prompt(VerticalScroll):
    """The question's text. Where the area cannot hold all of it (a 40x12 pane, the written contract's
    long message), it shows its first rows and scrolls to the rest (shift+up / shift+down, the mouse
    wheel), its scroll bar saying there is more, where a plain text would cut the rest off unseen."""

    can_focus = False

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.text = Static(id="prompt-text")

    def compose(self) -> ComposeResult:
        yield self.text


class QuestionView(Vertical):
    """The chat-like area: the app's question, its options, and the user's answer line."""

    BORDER_TITLE = "questions"

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.question: Question | None = None
        self.prefilled = ""
        self.checked: set[int] = set()
        self.shown: list[int] = []  # the options on screen, by index into the question's (a filter hides some)
        self.above = ""  # a proposal too long for the answer line, shown whole in the prompt instead

    def compose(self) -> ComposeResult:
        yield Prompt(id="prompt")
        yield Choices(id="options")
        # select_on_focus would select text typed between a Tab and the focus event, and the next key
        # would replace it: the proposal is selected once, when it is shown, instead.
        yield AnswerInput(id="answer", select_on_focus=False)
        yield Static(id="message")

    def ask(self, q: Question, keep_typed: bool = False,
            draft: tuple[tuple[str, ...], frozenset[int]] | None = None) -> bool:
        """Show `q`. With keep_typed, text the user already typed over the proposal stays; `draft`, the toggles
        the user left this list with (Esc before Enter), are its ticks again while its options are the same.
        Whether a draft was dropped because they changed."""
        same = self.question is not None and self.question.key == q.key
        if same and keep_typed and q == self.question:
            return False  # a detection result redraws the screen: refilling equal options would re-lay it out
        self.question = q
        prompt = Text()
        prompt.append("wamf  ", style="bold")
        prompt.append(q.prompt)
        above = q.kind == "text" and len(q.default) > self._line_width()
        if above:  # the answer line would show a window of it: shown whole here, once, and the line left empty
            prompt.append("\n" + q.default, style="bold")
        prompt_view = self.query_one("#prompt", Prompt)
        prompt_view.text.update(prompt)
        if not same:
            prompt_view.scroll_home(animate=False)
        options = self.query_one("#options", OptionList)
        dropped = False
        if not same:
            self.checked = {i for i, o in enumerate(q.options) if o.checked}
            if draft is not None and draft[0] == tuple(o.value for o in q.options):
                self.checked = set(draft[1])
            dropped = draft is not None and draft[0] != tuple(o.value for o in q.options)
        self._fill_options(q)
        options.display = bool(q.options)
        answer = self.query_one("#answer", Input)
        answer.display = q.kind == "text" or q.free_text
        answer.placeholder = ABOVE if above else PLACEHOLDERS[q.kind]  # the keys an empty answer line takes
        self.above = q.default if above else ""
        if above:
            if not (keep_typed and answer.value != self.prefilled):  # kept: what the user typed, not a proposal
                answer.value = ""
            self.prefilled = ""
        elif q.kind == "text":
            typed = answer.value
            if not (same and keep_typed and typed != self.prefilled):
                answer.value = q.default
                # all selected, so typing replaces the proposal and Enter accepts it; the cursor at the
                # start, so a long command shows its beginning (its launcher), not its last flags
                answer.selection = Selection(len(q.default), 0)
            self.prefilled = q.default
        elif not same and q.kind == "choice" and q.free_text and q.default and q.default not in {
                o.value for o in q.options}:  # the user's own answer, back again: on its line, not option 1
            answer.value = q.default
            answer.selection = Selection(len(q.default), 0)
            self.prefilled = q.default
        elif not same:
            answer.value = ""
            self.prefilled = ""
        if not same:
            self.say("")
        if q.options and not same:
            idx = next((i for i, o in enumerate(q.options) if o.value == q.default), 0)
            options.highlighted = idx
        self.refit()
        if not same:
            # Typing always lands in the answer line: keys batched by a slow SSH link would
            # otherwise reach whichever widget had focus before a Tab was processed.
            target = self.target() or options
            target.focus()
            # a list hidden by the question before (a reading, a write) took the focus away to a pane, and a
            # widget shown in this same tick takes it only once laid out: ask again after the refresh
            self.call_after_refresh(lambda: self._on_a_live_screen() and target.display
                                    and self.screen.focused is not target and target.focus())
        return dropped

    def draft(self) -> tuple[str, tuple[tuple[str, ...], frozenset[int]]] | None:
        """The list question on screen and its toggles, where they differ from what it proposed (or was given)."""
        q = self.question
        if q is None or q.kind != "multi" or self.checked == {i for i, o in enumerate(q.options) if o.checked}:
            return None
        return q.key, (tuple(o.value for o in q.options), frozenset(self.checked))

    def _line_width(self) -> int:
        """The columns the answer line shows (the area's width less its border and the line's indent)."""
        return (self.size.width or self.app.size.width) - 2 - 6 - 1

    def edit_above(self) -> None:
        """↑ on the empty answer line: the proposal shown above comes into it, to edit."""
        answer = self.query_one("#answer", Input)
        answer.value = self.above
        answer.cursor_position = 0

    def target(self) -> Input | OptionList | None:
        """Where the keys go: the answer line when shown, else the options; None while neither is (a write)."""
        answer, options = self.query_one("#answer", Input), self.query_one("#options", OptionList)
        return answer if answer.display else options if options.display else None

    def _fill_options(self, q: Question, word: str = "") -> None:
        options = self.query_one("#options", OptionList)
        keep = options.highlighted
        options.clear_options()
        items = []
        self.shown = [i for i, o in enumerate(q.options) if word.lower() in o.label.lower()]
        for i in self.shown:
            o = q.options[i]
            t = Text()
            t.append(f"{i + 1} " if i < 9 else "  ", style="bold")
            if q.kind == "multi":
                t.append("[x] " if i in self.checked else "[ ] ")
            t.append(o.label)
            if o.note:
                t.append(f"\n    {o.note}", style="dim")
            items.append(ListOption(t))
        options.add_options(items)
        if keep is not None and keep < len(items):
            options.highlighted = keep

    def toggle(self, index: int) -> None:
        if self.question is None or self.question.kind != "multi" or not 0 <= index < len(self.question.options):
            return
        self.checked ^= {index}
        self._fill_options(self.question)
        self.query_one("#options", OptionList).highlighted = index

    def say(self, text: str, error: bool = False) -> None:
        msg = self.query_one("#message", Static)
        msg.update(Text(text, style="bold red" if error else "italic"))
        msg.set_class(error, "-error")
        self.refit()

    # --- fitting a small area: the message and the answer line never fall below its edge -----------

    MIN_OPTION_ROWS = 3
    _fitting = False

    def refit(self) -> None:
        """Measure the parts at their natural heights once laid out, then share the area's rows out."""
        if self._fitting or not self.is_mounted:
            return
        self._fitting = True
        for part in ("#prompt", "#options", "#message"):
            self.query_one(part).styles.max_height = None
        self.call_after_refresh(self._fit)

    def on_resize(self, event: events.Resize) -> None:
        self.refit()

    def _on_a_live_screen(self) -> bool:
        """Whether this area's screen is still one of the app's. What `call_after_refresh` left runs after the
        refresh of the screen current by then (Textual hands it there): when Enter ended the step meanwhile,
        that is the next step's, and this area's screen is being taken apart, its parts removed one by one.
        Then there is nothing to fit or focus; a query for a part already gone would take the app down."""
        try:
            return self.is_attached and self.screen in self.app.screen_stack
        except NoScreen:  # already detached
            return False

    def _rows(self) -> int:
        """The rows the area may have, from the layout rather than its current size (which the fitting
        itself shrinks): all it is given on a small screen, else its `max-height` of 60%."""
        if self.screen.has_class("-tiny"):
            return self.content_region.height
        return int((self.screen.size.height - 1) * 0.6) - 2  # 60% of the rows above the footer, less the border

    def _fit(self) -> None:
        """The answer line first, then the message (`?`'s explanation), then the options, then the prompt,
        each keeping a little (the prompt three rows, the list one, scrolled to the highlighted option): what
        the area cannot hold is clipped from the end of the prompt or the list, never the answer line."""
        self._fitting = False
        if not self._on_a_live_screen():
            return
        prompt = self.query_one("#prompt", Prompt)
        options = self.query_one("#options", OptionList)
        answer, message = self.query_one("#answer", Input), self.query_one("#message", Static)
        room = self._rows() - (answer.outer_size.height if answer.display else 0)
        asked = prompt.outer_size.height
        wanted = options.outer_size.height if options.display else 0
        said = message.outer_size.height if message.display else 0
        if asked + wanted + said <= room:
            return
        keep_asked, keep_wanted = min(asked, 3), min(wanted, 1)
        said = min(said, max(room - keep_asked - keep_wanted, 1))
        room -= said
        rows = min(wanted, max(min(self.MIN_OPTION_ROWS, wanted), room - asked), max(room - keep_asked, 1))
        message.styles.max_height = max(said, 1)
        if options.display:
            options.styles.max_height = max(rows, 1)
        prompt.styles.max_height = max(room - rows, 1)

    def typed(self) -> str:
        return self.query_one("#answer", Input).value

    def highlighted_value(self) -> str | None:
        q = self.question
        idx = self.query_one("#options", OptionList).highlighted
        if q is None or idx is None or not q.options or idx >= len(self.shown):
            return None
        return q.options[self.shown[idx]].value

    def filter_word(self) -> str:
        """The typed word that filters a long list: one word, no spaces (a command has spaces)."""
        typed = self.typed().strip()
        return typed if self.question is not None and self.question.filterable and typed and " " not in typed \
            and typed != self.prefilled else ""

    def on_input_changed(self, event: Input.Changed) -> None:
        q = self.question
        if q is not None and q.filterable:
            self._fill_options(q, self.filter_word())
            if self.shown:
                self.query_one("#options", OptionList).highlighted = 0

    def multi_value(self) -> list[str]:
        assert self.question is not None
        picked = [o.value for i, o in enumerate(self.question.options) if i in self.checked]
        typed = self.typed().strip()
        return picked + ([typed] if typed else [])
