"""The Textual app: owns the `Conversation` (the session's state), reads detection from a child process,
writes the contract off the event loop, and moves between step screens. Every answer is saved before the
screen moves on.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
from collections.abc import Mapping
from functools import partial
from pathlib import Path

from textual.app import SystemCommand
from textual.binding import Binding
from textual.timer import Timer

from .. import flow, wording
from ..bench import results, trial
from ..contract import finish, git_exclude, proof
from ..contract import render as contract
from ..detect import SUBJECTS, environment
from ..detect.isolated import ChildDetection
from ..infra import children, clipboard
from ..infra.visible import visible
from ..model import STEP_TITLES, HardwareFacts, InitState, Step, TrialResult
from ..model import Detected as DetectedFacts
from ..propose import proposals
from ..read import isolated
from ..read.subcommands import called
from ..session import lock, resume
from ..session import store as session
from . import workers
from .conversation import Conversation
from .dialogs import ResumeScreen
from .gate import HiddenFilter
from .messages import (
    AnalysisReady,
    AnswerGiven,
    ContractWritten,
    Copied,
    CopyRequested,
    DetectionStarted,
    FactsArrived,
    GpusRefreshed,
    RescanRequested,
    TrialRequested,
)
from .screens import SCREENS, ConfirmScreen, StepScreen
from .session_keeping import SessionKeeping
from .trial_screen import TrialScreen

GPU_REFRESH_S = 1.0
HIDDEN = HiddenFilter()
LOCK_CHECK_S = 2.0
LAUNCH_BOUND_S = 1.0  # the detection child starts within this even if the after-paint callback is lost


class WamfApp(SessionKeeping):
    CSS_PATH = "app.tcss"
    TITLE = "wamf-tui"
    BINDINGS = [
        Binding("ctrl+q", "quit", "quit", priority=True),
        Binding("ctrl+c", "quit", "quit", show=False, priority=True),
    ]

    def __init__(self, state: InitState, *, saved: InitState | None = None, detect: bool = True) -> None:
        super().__init__()
        self.talk = Conversation(state, contract.load_template(state.template_path),
                                 wants_ascii(os.environ, getattr(sys.stdout, "encoding", "") or ""))
        self.saved = saved
        # (title, text) said once the first frame is up: a damaged saved session, an answer the file gave refused
        self.startup_notes: list[tuple[str, str]] = []
        self.read_only: lock.Holder | None = None  # another instance holds this repo's session: save nothing
        self.detect = detect
        self.gpu_timer: Timer | None = None
        self.resumed_facts: DetectedFacts | None = None  # what a resumed session knew, to say what moved
        self.change_log: list[str] = []
        self.reread: list[str] = []  # the script's files that changed since a resumed session read them
        self.holds_session = False  # took the repo's lock (`open_session`): each save first checks it still does
        self.saver = session.Saver(on_error=self._save_failed, still_mine=self._still_mine,
                                   on_lost=self._session_lost)
        self.detection: ChildDetection | None = None
        self.detect_run = 0
        self.launched_run = 0  # the detect_run whose child was started
        self.failures_told: set[str] = set()

    @property
    def state(self) -> InitState:
        return self.talk.state

    @state.setter
    def state(self, state: InitState) -> None:
        self.talk.state = state

    # --- lifecycle -------------------------------------------------------------

    def on_mount(self) -> None:
        try:
            loop = asyncio.get_running_loop()
            loop.set_default_executor(workers.DaemonThreads())
            loop.add_signal_handler(signal.SIGHUP, self._on_hangup)
            loop.add_signal_handler(signal.SIGTERM, self._on_signal)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
        self.call_after_refresh(self._collector_back_on)
        self.set_interval(LOCK_CHECK_S, self._check_lock)  # taken over while idle: said within seconds
        for title, note in self.startup_notes:
            self.notify(note, title=title, severity="warning", timeout=20)
        if self.read_only is not None:
            self.notify(f"another wamf-tui holds this repo's session ({self.read_only.describe()}): this one is "
                        "read-only and saves nothing. Take it over from the palette (ctrl+p).",
                        title="read-only", severity="warning", timeout=30)
        if self.saved is not None:
            self.push_screen(ResumeScreen(self.saved), self._resume_answered)
            return
        if self.detect:
            self.start_detection()

    def get_line_filters(self):
        """Textual's filters, then the last gate for text: no control character reaches the terminal."""
        return [*super().get_line_filters(), HIDDEN]

    def get_default_screen(self) -> StepScreen:
        """The step's screen is the app's first screen. Pushed over Textual's blank default screen,
        it cost a fifth more work before the question was on screen (counted in instructions)."""
        return SCREENS[self.state.step](self.talk)

    def _collector_back_on(self) -> None:
        """`cli.main` starts the app with the cyclic collector off. Frozen, what start-up built stays
        out of every later collection: a full pass over it took 60 ms, long enough for a key to wait.
        The few thousand objects start-up left in cycles are kept, once (about a megabyte)."""
        if not gc.isenabled():
            gc.freeze()
            gc.enable()

    def _resume_answered(self, resume: bool | None) -> None:
        if resume and self.saved is not None:
            self.resumed_facts = self.saved.detected.model_copy(deep=True)
            self.state = flow.resumed(self.saved).model_copy(update={
                "repo_path": self.state.repo_path,
                "contract_path": self.state.contract_path or self.saved.contract_path,
                "template_path": self.state.template_path or self.saved.template_path})
        self.saved = None
        changed = flow.changed_files(self.state)
        if changed:  # edited since the answers: its flags and line numbers are read again
            self.reread = changed
            self.start_analysis()
        elif self.state.reading or self.state.script and self.state.analysis is None:
            self.start_analysis()  # killed while the script was read: read it again, never skip past it
        self.show_step()
        if self.detect:
            self.start_detection()

    def _on_signal(self) -> None:
        self.save(wait=True)
        self.exit()

    def _on_hangup(self) -> None:
        """SSH dropped: the terminal is gone, so there is nothing to restore, and Textual's
        shutdown would block writing to it. Save and leave at once."""
        self.save(wait=True)
        children.stop_all()
        os._exit(0)

    async def action_quit(self) -> None:
        self.save(wait=True)
        self.exit()

    def exit(self, *args, **kwargs) -> None:
        # First of all: a script still being read or a hung interpreter must not hold the exit,
        # and killing the child ends the worker thread waiting on it.
        children.stop_all()
        super().exit(*args, **kwargs)

    def on_unmount(self) -> None:
        self.saver.flush()

    # --- detection -------------------------------------------------------------

    def start_detection(self) -> None:
        if self.detection is not None:
            self.detection.stop()  # a re-scan: the previous child's answers are no longer wanted
        self.detect_run += 1
        self.failures_told = set()
        self.talk.pending = list(SUBJECTS)
        self._redraw(keep_typed=True)
        # The child starts once the frame is on screen: before that it would compete with the first paint.
        # Textual hands that callback to the screen current when it is read; a screen replaced before its
        # next paint drops it, and the subjects would say "checking…" for ever. The app's own timer is the
        # bound: whichever comes first starts the child, once.
        self.call_after_refresh(self._launch_detection, self.detect_run)
        self.set_timer(LAUNCH_BOUND_S, partial(self._launch_detection, self.detect_run))

    def _launch_detection(self, run: int) -> None:
        if run != self.detect_run or run == self.launched_run:
            return
        self.launched_run = run
        self.run_worker(workers.detection(self, self.state.repo_path, run), thread=True, group="detect")

    def on_detection_started(self, msg: DetectionStarted) -> None:
        if msg.run == self.detect_run:
            self.detection = msg.detection  # what the next re-scan stops
        else:  # a re-scan came while this one was starting
            msg.detection.stop()

    def on_facts_arrived(self, msg: FactsArrived) -> None:
        if msg.run != self.detect_run:
            return
        if msg.subject in self.talk.pending:
            self.talk.pending.remove(msg.subject)
        if isinstance(msg.facts, Exception):
            if str(msg.facts) not in self.failures_told:
                self.notify(f"{msg.subject} failed: {msg.facts}", severity="warning")
            self.failures_told.add(str(msg.facts))  # a child that died fails every subject alike: say it once
        else:
            self._tell_what_changed(msg.subject, msg.facts)
            self._detected(msg.subject, msg.facts)  # the place is a key: it survives new questions
            if isinstance(msg.facts, HardwareFacts) and msg.facts.nvml and self.gpu_timer is None:
                self.gpu_timer = self.set_interval(GPU_REFRESH_S, self._refresh_gpu)
        self._facts_changed()

    def on_analysis_ready(self, msg: AnalysisReady) -> None:
        told = ""
        if "analysis" in self.talk.pending:
            self.talk.pending.remove("analysis")
        if isinstance(msg.analysis, Exception):
            self.state = flow.analysis_failed(self.state)  # the flow goes on; the run line is the user's to check
            self.notify(f"analysis failed: {msg.analysis}", severity="warning")
        elif self.reread:
            self.state, said = flow.take_reread(self.state, msg.analysis)
            told = f"{', '.join(self.reread)} changed since your answers: flags and line numbers read again" + (
                f"; {'; '.join(said)}" if said else "")
            self.reread = []
            self.change_log.append(told)
            self.notify(told, title="since your last session", severity="warning", timeout=15)
            self.save()
        else:
            self.state = flow.take_analysis(self.state, msg.analysis)
            self.save()
        self._facts_changed(told)

    def _facts_changed(self, told: str = "") -> None:
        """Repaint the detected pane, and the question unless step 4 is past its confirm phase."""
        if (screen := self._step_screen()) is not None:
            screen.redraw_detected()
            if self.state.step == Step.CONFIRM and self.state.at != "confirm":
                return  # the write's questions keep what they said
            screen.redraw(keep_typed=True)
            if told:
                screen.qview.say(told)  # in the question area too: a toast goes

    def _detected(self, subject: str, facts: object) -> None:
        """A new state with one subject of the detected facts replaced (the state is frozen)."""
        self.state = self.state.model_copy(update={"detected": self.state.detected.model_copy(update={subject: facts})})

    def _tell_what_changed(self, subject: str, facts: object) -> None:
        if self.resumed_facts is None:
            return
        changes = resume.what_changed(self.resumed_facts, subject, facts)
        if subject == "repo" and changes and self.state.repo == proposals.repo_line(self.state):
            self._detected("repo", facts)
            self.state = self.state.model_copy(update={"repo": proposals.repo_line(self.state)})  # follow HEAD
        for line in changes:
            self.notify(line, title="since your last session", severity="warning", timeout=12)
        self.change_log += changes

    def _step_screen(self) -> StepScreen | None:
        """The step's screen when it is on top; None under a dialog, and once the app is closing: a timer or a
        worker's message can come after the last screen went, where `self.screen` raises."""
        top = self.screen_stack[-1] if self.screen_stack else None
        return top if isinstance(top, StepScreen) else None

    def _refresh_gpu(self) -> None:
        """Re-read NVML while the detected pane is on screen; nothing at all while it is hidden."""
        screen = self._step_screen()
        hw = self.state.detected.hardware
        if hw is None or screen is None or not screen.ready or screen.has_class("-tiny"):
            return
        if any(w.group == "gpu" and w.is_running for w in self.workers):
            return
        from ..detect.hardware import read_gpus

        self.run_worker(workers.posting(self, lambda: read_gpus(hw), GpusRefreshed), thread=True, group="gpu")

    def on_gpus_refreshed(self, msg: GpusRefreshed) -> None:
        facts = msg.hardware
        if isinstance(facts, Exception) or facts == self.state.detected.hardware:
            return  # unchanged: no repaint, no bytes to the terminal
        self._detected("hardware", facts)
        if (screen := self._step_screen()) is not None:
            screen.redraw_detected()

    def start_analysis(self) -> None:
        script = Path(self.state.repo_path) / self.state.script
        if not script.is_file():
            self.notify(f"{self.state.script} is not a file in the repo; the run line is yours to write",
                        severity="warning")
            return
        self.talk.pending.append("analysis")
        self.state = self.state.model_copy(update={"reading": True})
        launch = self.state.launch
        root, command, by = self.state.repo_path, list(launch.args) if launch else [], called(launch)
        versions = environment.installed(self.state.detected.env, self.state.activate)
        work = workers.posting(self, lambda: isolated.analyze_in_child(script, root, command, by, installed=versions),
                               AnalysisReady)
        self.run_worker(work, thread=True, group="analysis", exclusive=True)

    # --- moving between steps ------------------------------------------------

    def after_answer(self, outcome: flow.Outcome) -> None:
        self.save()
        if outcome.action == "back":
            if self.state.step == Step.CONFIRM:
                self.state = flow.go(self.state, Step.RULES)
            else:
                self.exit()
                return
        if outcome.action == "recheck":
            self.start_detection()
        if outcome.action == "analyze":
            self.start_analysis()
        if outcome.action in ("write", "overwrite"):
            self.write(overwrite=outcome.action == "overwrite")
            return
        said = outcome.said
        if outcome.action == "exclude":
            said = git_exclude.add_to_exclude(self.state) + " · ctrl+q quits."
        self.show_step()
        if said and (screen := self._step_screen()) is not None:
            screen.qview.say(said)

    def show_step(self) -> None:
        if not self.screen_stack:  # closing: nothing to show it on
            return
        screen = self.screen
        if isinstance(screen, StepScreen) and screen.STEP == self.state.step:
            screen.redraw(keep_typed=False)
        elif len(self.screen_stack) > 1:
            self.switch_screen(SCREENS[self.state.step](self.talk))
        else:  # the first screen cannot be switched away: the next one goes over it, later ones replace that
            self.push_screen(SCREENS[self.state.step](self.talk))

    def _redraw(self, keep_typed: bool) -> None:
        if (screen := self._step_screen()) is not None:
            screen.redraw(keep_typed=keep_typed)

    # --- contract --------------------------------------------------------------

    def write(self, overwrite: bool = False) -> None:
        """Write the contract (and the wrapper) in a thread, so a slow or network home directory never
        holds a frame; a contract that breaks a rule goes back to the confirmation instead."""
        text = self.talk.contract()
        if finish.problems(text, self.talk.verdict()):
            self.state = flow.go(self.state, Step.CONFIRM, "confirm")
            self.show_step()
            return
        self.show_step()  # at `writing` (the answer put it there): what was confirmed is what is written
        self.run_worker(workers.writing(self, self.state, text, overwrite), thread=True, group="write-contract")

    def on_contract_written(self, msg: ContractWritten) -> None:
        result, path = msg.result, visible(self.state.contract_path)
        if msg.wrapper_error:
            self.notify(msg.wrapper_error, severity="error")
        self.state, error = flow.written(self.state, result.diff, result.error)
        self.talk.shown_file = ((result.diff or "(no difference)", "difference with the file on disk")
                                if result.diff is not None else (msg.text, f"written: {path}"))
        self.save()
        self.show_step()
        if (screen := self._step_screen()) is not None and (error or self.state.at == "done"):
            screen.qview.say(error or "ctrl+q quits.", error=bool(error))

    def on_answer_given(self, msg: AnswerGiven) -> None:
        self.after_answer(msg.outcome)

    def on_rescan_requested(self, _: RescanRequested) -> None:
        self.start_detection()

    def get_system_commands(self, screen):
        """The palette (ctrl+p): jump to a step already reached, and the app's actions."""
        yield from super().get_system_commands(screen)
        for step, title in STEP_TITLES.items():
            if step <= self.state.step and step != self.state.step:
                yield SystemCommand(f"Go to step {int(step)}: {title}", "answers stay as they are",
                                    lambda s=step: self._jump(s))
        if self.read_only is not None:
            yield SystemCommand("Take over the session", f"from {self.read_only.describe()}; its answers are "
                                "replaced by this one's", self.take_over)
        if isinstance(screen, StepScreen):
            yield SystemCommand("Re-scan", "run detection again", self.start_detection)
            yield SystemCommand("Switch wording", "MLSys engineer / algorithm engineer", screen.action_switch_register)
            yield SystemCommand("Keys", "every key", screen.action_keys)
        if isinstance(screen, StepScreen) and screen.can_try():
            yield SystemCommand("Try the benchmark now", "runs the run line once, after a second key",
                                screen.action_try_it)
        if isinstance(screen, ConfirmScreen) and self.state.at == "done":  # the same path as `c` / `p`
            yield SystemCommand("Copy the optimize command", wording.CLAUDE, lambda: screen.action_copy("command"))
            yield SystemCommand("Copy the contract path", visible(self.state.contract_path),
                                lambda: screen.action_copy("path"))

    def on_trial_requested(self, msg: TrialRequested) -> None:
        """`t`: say what would run and wait for a second key (`TrialScreen`); nothing runs before it."""
        st, run = self.state, msg.run
        hw = st.detected.hardware or HardwareFacts(host="")
        gpus = trial.gpus_in_use(hw, os.environ)
        busy = [str(g.index) for g in hw.gpus if g.index in gpus and not g.free]
        seen = (", ".join(map(str, gpus)) + (f" (busy: {', '.join(busy)})" if busy else " (free)")) if gpus \
            else "none seen"
        where = (f"  activate  {visible(st.activate or '(none)')}\n  run       {visible(run)}\n"
                 f"  in        {visible(st.repo_path)}\n  GPUs      {seen}")
        job = trial.Trial(st.activate, run, Path(st.repo_path), gpus=gpus, log_dir=session.state_dir() / "trials",
                          read_gpus=trial.sample_gpus, limit_s=trial.default_limit(st.trial))
        expect = proof.expected(st.model_copy(update={"run": run}))
        self.push_screen(TrialScreen(job, where, proposals.output_switch(st), expect), self._trial_done)

    def _trial_done(self, result: TrialResult | None) -> None:
        screen = self._step_screen()
        if screen is None:
            return
        if result is None:
            screen.qview.say("nothing ran")
            return
        self.state, offered = proof.with_offers(self.state.model_copy(update={"trial": result}))
        self.save()
        failed = result.ended != "exited" or result.exit_status != 0
        said = results.describe(result, proposals.output_switch(self.state), brief=True)
        disproved = [c for c in result.claims if not c.ok]
        if disproved:
            said.append(f"{len(disproved)} claim(s) of the contract failed: " + "; ".join(
                f"{c.claim} ({c.observed})" for c in disproved[:3]))
        if offered:
            said.append(f"{offered} row(s) offered in the benchmark table: what the trial saw run, to say it stays on")

        def tell() -> None:
            if (shown := self._step_screen()) is not None:
                shown.qview.say("trial: " + " · ".join(said), error=failed or bool(result.touched) or bool(disproved))

        if failed and self.state.step == Step.CONFIRM:  # back to the run line, to edit it
            self.state = flow.go(self.state, Step.JOB, "run")
            self.show_step()
            self.call_after_refresh(tell)
            return
        screen.redraw(keep_typed=True)
        tell()

    def _jump(self, step: Step) -> None:
        self.state = flow.go(self.state, step)
        self.after_answer(flow.Outcome(action="stay"))

    def on_copy_requested(self, msg: CopyRequested) -> None:
        """Copy off the event loop: inside tmux it starts `tmux load-buffer`."""
        text = self._clipboard = msg.text
        environ = dict(os.environ)
        self.run_worker(workers.posting(self, lambda: clipboard.copy(text, environ), lambda r: Copied(text, r)),
                        thread=True, group="copy")

    def on_copied(self, msg: Copied) -> None:
        """Write what is left for the terminal (OSC 52), and say on screen which way the text went."""
        way = clipboard.Way.OSC52 if isinstance(msg.copied, Exception) else msg.copied[0]
        sequence = clipboard.osc52(msg.text, os.environ) if isinstance(msg.copied, Exception) else msg.copied[1]
        if sequence and self._driver is not None:
            self._driver.write(sequence)
        if isinstance(screen := self._step_screen(), ConfirmScreen):
            screen.copied(msg.text, way)


def wants_ascii(environ: Mapping[str, str], encoding: str) -> bool:
    """ASCII marks and borders for a terminal that is not UTF-8. Python turns a C locale's stdout into
    UTF-8 on its own (PEP 538), so the locale the terminal was started with decides, then the encoding."""
    locale = environ.get("LC_ALL") or environ.get("LC_CTYPE") or environ.get("LANG") or ""
    if locale:
        return not any(u in locale.lower() for u in ("utf-8", "utf8"))
    return "utf" not in encoding.lower()
