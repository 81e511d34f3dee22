"""Step 1: the job. The repo, the environment, the command, the benchmark table and its run line, the
node, and the guarantee. The questions after the command wait for the script's reading (`reading`)."""

from __future__ import annotations

from datetime import datetime

from ..contract import proof
from ..model import InitState, Step
from ..propose import proposals
from ..wording import explain, say
from .base import Ask, Option, Outcome, Question, Value, opt, put, read, setter


def _stamp() -> str:
    return datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z").strip()


def _not_git(state: InitState) -> Question:
    repo = state.detected.repo
    return put(state, "not_git", "choice", fmt={"path": repo.path if repo else ""}, free_text=False,
               options=[Option("Continue with this folder", "continue"), Option("Quit", "quit")], default="continue")


def _repo(state: InitState) -> Question:
    return put(state, "repo", "text", default=state.repo or proposals.repo_line(state))


def _dirty(state: InitState) -> Question:
    repo = state.detected.repo
    summary = proposals.dirty_summary(repo) if repo else ""
    return put(state, "dirty", "choice", free_text=False, fmt={"summary": summary},
               options=[opt(state, "dirty_continue", "continue"), opt(state, "dirty_recheck", "recheck")],
               default="continue")


def _take_dirty(state: InitState, value: Value) -> tuple[InitState, Outcome]:
    if value == "recheck":
        return state, Outcome(None, "recheck")
    repo = state.detected.repo
    decision = (f"Dirty checkout ({proposals.dirty_summary(repo)}) settled: "
                f"optimize starts from HEAD without the uncommitted changes.") if repo else ""
    return state.model_copy(update={"dirty_decision": decision}), Outcome()


def _activate(state: InitState) -> Question:
    return put(state, "activate", "text", default=state.activate or proposals.activate_line(state))


def _command(state: InitState) -> Question:
    return put(state, "command", "choice", default=proposals.command_default(state), filterable=True,
               options=[Option(cmd, cmd, note=why) for cmd, why in proposals.candidate_commands(state)])


def _take_command(state: InitState, value: Value) -> tuple[InitState, Outcome]:
    text = str(value)
    launch = proposals.read_command(state, text)
    if launch is None:
        return state, Outcome(say("command_unknown", state.reader_register, found=text[:80]), "stay")
    stale = launch.path != state.script or state.analysis is None
    if text == state.command and not stale:  # the same command again (Esc, then Enter): every later answer stays
        return state, Outcome()
    said = say("run_dropped", state.reader_register, what="command") if _own_run(state) else ""
    return state.model_copy(update={"command": text, "launch": launch, "script": launch.path or "", "run": "",
                                    **({"analysis": None, "changes": []} if stale else {})}), Outcome(
        None, "analyze", said)


def _own_run(state: InitState) -> bool:
    """The run line is one the user wrote, not the proposal (which follows the table by itself)."""
    return bool(state.run) and state.run != proposals.run_line(state)


def _follow_table(state: InitState, new: InitState, what: str) -> tuple[InitState, Outcome]:
    """The run line follows the benchmark table: kept when the table is as it was, else proposed again
    from it (and said, when it was the user's own)."""
    if new.changes == state.changes and new.mode == state.mode:
        return new, Outcome()
    said = say("run_dropped", state.reader_register, what=what) if _own_run(state) else ""
    return new.model_copy(update={"run": ""}), Outcome(said=said)


def _reading(state: InitState) -> Question:
    r = state.reader_register
    return Question("reading", "choice", say("reading", r, script=state.script), explain("reading", r),
                    free_text=False)


def _changes(state: InitState) -> Question:
    wrong = proof.disproved(state)
    return put(state, "changes", "multi", free_text=False, options=[
        Option(f"{c.what} -> {c.how}", str(i), c.enabled, proof.mark(wrong[c.what]) if c.what in wrong else c.why)
        for i, c in enumerate(state.changes)])


def _take_changes(state: InitState, value: Value) -> tuple[InitState, Outcome]:
    picked = value if isinstance(value, list) else [value]
    return _follow_table(state, state.model_copy(update={"changes": [
        c.model_copy(update={"enabled": str(i) in picked}) for i, c in enumerate(state.changes)]}), "benchmark table")


def _steps(state: InitState) -> Question:
    """The table's step count; or, where the trial's job ended on its own below it, what really ran."""
    seen = proof.steps_seen(state)
    ended = say("steps_ended", state.reader_register, steps=seen) if seen else ""
    return put(state, "steps", "text", default=str(seen) if seen else proposals.step_count(state),
               fmt={"notes": proposals.warmup_note(state) + ended})


def _take_steps(state: InitState, value: Value) -> tuple[InitState, Outcome]:
    text = str(value)
    whole = text.lower() in ("all", "whole", "whole job")
    if not whole and (not text.isdigit() or not 0 < int(text) < 10**7):
        return state, Outcome(say("steps_number", state.reader_register), "stay")
    steps = None if whole else int(text)
    return _follow_table(state, state.model_copy(update={"changes": proposals.plan(state, steps)}), "step count")


def _mode(state: InitState) -> Question:
    return put(state, "mode", "choice", free_text=False, default=state.mode,
               options=[opt(state, "mode_speed", "speed"), opt(state, "mode_accuracy", "accuracy")])


def _take_mode(state: InitState, value: Value) -> tuple[InitState, Outcome]:
    new = state.model_copy(update={"mode": "accuracy" if value == "accuracy" else "speed"})
    count = proposals.step_count(new)
    steps = None if count == "all" else int(count)
    return _follow_table(state, new.model_copy(update={"changes": proposals.plan(new, steps)}), "mode")


def _run(state: InitState) -> Question:
    return put(state, "run", "text", default=state.run or proposals.run_line(state),
               fmt={"notes": proposals.run_notes(state) + "".join(f" {n}." for n in proof.trial_fixes(state))})


def _take_run(state: InitState, value: Value) -> tuple[InitState, Outcome]:
    text, r = str(value), state.reader_register
    missing = proposals.missing_in_run(state, text)
    if missing:
        return state, Outcome(say("run_missing", r, names=missing), "stay")
    left = proposals.left_out_of_run(state, text)
    if left:
        return state, Outcome(say("run_left_out", r, names=left, source=proposals.command_source(state)), "stay")
    return state.model_copy(update={"run": text}), Outcome()


def _must_not_change(state: InitState) -> Question:
    return put(state, "must_not_change", "text", default=state.must_not_change or proposals.must_not_change(state))


def _node(state: InitState) -> Question:
    return put(state, "node", "text", default=state.node or proposals.node_line(state))


def _guarantees(state: InitState) -> Question:
    r = state.reader_register
    problems = proposals.known_problems(state)
    if problems:  # never ask the user to vouch for what detection knows is false
        return Question("guarantees", "choice", say("guarantees_problems", r, problems="; ".join(problems)),
                        explain("guarantees", r), free_text=False, default="anyway",  # never loops
                        options=[opt(state, "guarantee_recheck", "recheck"), opt(state, "guarantee_node", "node"),
                                 opt(state, "guarantee_anyway", "anyway")])
    return put(state, "guarantees", "choice", free_text=False, default="yes",
               fmt={"items": "; ".join(proposals.guarantee_items(state, r))},
               options=[opt(state, "guarantee_yes", "yes"), opt(state, "guarantee_no", "no")])


def _take_guarantees(state: InitState, value: Value) -> tuple[InitState, Outcome]:
    if value == "recheck":
        return state, Outcome(None, "recheck")
    if value == "node":
        return state.model_copy(update={"at": "node"}), Outcome(None, "stay")
    if value == "anyway":
        return state.model_copy(update={"guarantees": f"User chose to continue at {_stamp()} despite: "
                                                      f"{'; '.join(proposals.known_problems(state))}"}), Outcome()
    if value != "yes":
        return state.model_copy(update={"guarantees": ""}), Outcome(None, "first")
    items = "; ".join(proposals.guarantee_items(state, "mlsys"))
    return state.model_copy(update={"guarantees": f"User confirmed at {_stamp()}: {items}"}), Outcome()


def unattended(state: InitState) -> InitState:
    """The guarantee without a person (`--yes`): what was checked, and that nobody vouched."""
    checked = "; ".join(proposals.guarantee_items(state, "mlsys")[2:]) or "nothing"
    problems = proposals.known_problems(state)
    return state.model_copy(update={
        "guarantees": f"Not confirmed by a person: the answers file supplied the answers ({_stamp()}); {checked}"
                      + (f"; problems found: {'; '.join(problems)}" if problems else ""),
        "answered": state.answered if "guarantees" in state.answered else [*state.answered, "guarantees"]})


def _benchmark(state: InitState) -> bool:
    return read(state) and bool(state.changes)


ASKS = (
    Ask("not_git", Step.JOB, _not_git, lambda s, v: (s, Outcome(None, "back") if v == "quit" else Outcome()),
        when=lambda s: s.detected.repo is not None and not s.detected.repo.is_git),
    Ask("repo", Step.JOB, _repo, setter("repo")),
    Ask("dirty", Step.JOB, _dirty, _take_dirty, when=lambda s: s.detected.repo is not None and s.detected.repo.dirty,
        words=("dirty_continue", "dirty_recheck")),
    Ask("activate", Step.JOB, _activate, setter("activate")),
    Ask("command", Step.JOB, _command, _take_command, words=("command_unknown", "run_dropped")),
    Ask("reading", Step.JOB, _reading, when=lambda s: s.reading, waits=True),
    Ask("changes", Step.JOB, _changes, _take_changes, when=_benchmark, words=("run_dropped",)),
    Ask("steps", Step.JOB, _steps, _take_steps, when=_benchmark, words=("steps_number", "steps_ended")),
    Ask("mode", Step.JOB, _mode, _take_mode, when=_benchmark, words=("mode_speed", "mode_accuracy")),
    Ask("run", Step.JOB, _run, _take_run, when=read, words=("run_missing", "run_left_out")),
    Ask("must_not_change", Step.JOB, _must_not_change, setter("must_not_change"),
        when=lambda s: read(s) and s.analysis is not None),
    Ask("node", Step.JOB, _node, setter("node"), when=read),
    Ask("guarantees", Step.JOB, _guarantees, _take_guarantees, when=read,
        words=("guarantees_problems", "guarantee_recheck", "guarantee_node", "guarantee_anyway", "guarantee_yes",
               "guarantee_no")),
)
