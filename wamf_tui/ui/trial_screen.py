"""The trial run, on screen: what will run and a second key before anything starts, then the job's
output as it comes with the steps and the clock, then what it measured. The running is
`wamf_tui.bench.trial`'s; this screen draws it."""

from __future__ import annotations

import time
from collections import deque

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import RichLog, Static

from ..bench import results, trial
from ..contract import proof
from ..model import TrialResult

LIMIT_STEP_S = 60
LOG_LINES = 2000


class TrialScreen(ModalScreen[TrialResult | None]):
    """Dismissed with the result, or None when the user cancels before it starts."""

    BINDINGS = [
        Binding("enter,t", "start", "start", show=False),
        Binding("s", "stop", "stop"),
        Binding("plus,equals_sign", "limit(1)", "+1 min"),
        Binding("minus", "limit(-1)", "-1 min"),
        Binding("escape", "leave", "back"),
    ]

    class Finished(Message):
        def __init__(self, result: TrialResult) -> None:
            super().__init__()
            self.result = result

    def __init__(self, job: trial.Trial, where: str, move: str = "", expect: proof.Expected | None = None) -> None:
        super().__init__()
        self.job, self.move = job, move
        self.expect = expect or proof.Expected()  # the contract's claims, checked when it ends
        self.where = where  # the activate line, command, folder and GPUs, as said before it starts
        self.phase = "ready"  # ready, running, done
        self.result: TrialResult | None = None
        self.pending: deque[str] = deque()  # output lines from the trial's thread, drained on the UI's

    def compose(self) -> ComposeResult:
        with Vertical(id="trial", classes="-ready"):
            with VerticalScroll(id="trial-body"):  # the arrows and PgDn scroll it where it does not fit
                yield Static(id="trial-status")
            yield RichLog(id="trial-log", max_lines=LOG_LINES, wrap=True, markup=False)
            yield Static(id="trial-keys")  # pinned: what the keys do stays in view however long the rest

    def on_mount(self) -> None:
        self.query_one("#trial").border_title = "try the benchmark"
        self.query_one(RichLog).display = False
        self.show_status()
        self.query_one("#trial-body").focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "start":
            return self.phase in ("ready", "done")
        if action == "stop":
            return self.phase == "running"
        if action == "limit":
            return self.phase != "done"
        return True

    def action_start(self) -> None:
        if self.phase == "done":
            self.dismiss(self.result)
            return
        self.phase = "running"
        self.query_one("#trial").set_classes("-running")
        self.query_one(RichLog).display = True
        self.set_interval(0.25, self.drain)
        self.run_worker(self._run, thread=True, group="trial", exclusive=True)
        self.refresh_bindings()
        self.show_status()

    def _run(self) -> None:
        result = proof.run(self.job, self.expect, self.pending.append)
        self.post_message(self.Finished(result))

    def action_stop(self) -> None:
        self.job.stop()
        self.show_status()

    def action_limit(self, sign: int) -> None:
        self.job.limit_s = max(LIMIT_STEP_S, self.job.limit_s + sign * LIMIT_STEP_S)
        self.show_status()

    def action_leave(self) -> None:
        if self.phase == "running":
            self.action_stop()  # it ends, is measured, and then Esc leaves
        else:
            self.dismiss(self.result)

    def drain(self) -> None:
        log = self.query_one(RichLog)
        while self.pending:
            log.write(Text.from_ansi(self.pending.popleft()))
        if self.phase == "running":
            self.show_status()

    def on_trial_screen_finished(self, msg: Finished) -> None:
        self.drain()
        self.phase, self.result = "done", msg.result
        self.query_one("#trial").set_classes("-done")
        self.refresh_bindings()
        self.show_status()
        body = self.query_one("#trial-body", VerticalScroll)
        body.scroll_home(animate=False)
        body.focus()

    def show_status(self) -> None:
        out = Text()
        if self.phase == "ready":
            out.append("This runs your job now:\n", style="bold")
            out.append(self.where + "\n")
            out.append(f"time limit {_clock(self.job.limit_s)} (+/- change it)")
            keys = "Enter or t: start · Esc: cancel, nothing runs"
        elif self.phase == "running":
            job = self.job
            elapsed = time.monotonic() - job.started if job.started else 0.0
            out.append(f"running {_clock(elapsed)} / {_clock(job.limit_s)}", style="bold")
            out.append(f" · {job.steps} optimizer steps")
            if job.last_step_s is not None:
                out.append(f" · last step {results.step_time(job.last_step_s)}")
            keys = "stopping…" if job.ended else "s or Esc: stop · +/- time limit"
        else:
            assert self.result is not None
            failed = self.result.ended == "exited" and self.result.exit_status != 0
            for line in results.describe(self.result, self.move):
                out.append(line + "\n", style="bold red" if failed and line.startswith("likely cause") else "")
            for line in proof.describe(self.result.claims):
                out.append(line + "\n", style="bold red" if line.startswith("FAILED") else "")
            out.rstrip()
            keys = "Enter or Esc: back (the result goes into the contract) · ↑↓ PgUp PgDn scroll"
        self.query_one("#trial-status", Static).update(out)
        self.query_one("#trial-keys", Static).update(Text(keys, style="bold"))


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 60}:{s % 60:02d}"
