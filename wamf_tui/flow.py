"""The init flow as data: which questions each step asks, what each proposes, and
how an answer makes the next `InitState`. The UI only shows a `Question` and hands the
answer back, so the whole flow is testable without a terminal. `InitState` is frozen:
every function here returns a new state, and its caller keeps it (the flow is the one
place a state is made from the last).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from . import proposals
from .contract import literal, placeholder_in
from .model import ALLOWED_CHANGES, HINTS, Analysis, InitState, Step
from .wording import ALLOWED_NOTES, READER_OPTIONS, explain, register_for, say

Kind = Literal["choice", "text", "multi"]


@dataclass
class Option:
    label: str
    value: str
    checked: bool = False
    note: str = ""


@dataclass
class Question:
    key: str
    kind: Kind
    prompt: str
    help: str
    options: list[Option] = field(default_factory=list)
    default: str = ""  # pre-filled text (text questions), or the option picked by Enter (choice)
    free_text: bool = True  # choice / multi questions also take a typed answer
    allow_empty: bool = False
    filterable: bool = False  # a long list: a word typed on the answer line filters it


@dataclass
class Outcome:
    error: str | None = None
    action: Literal["next", "stay", "write", "back", "recheck", "analyze"] = "next"


def _q(state: InitState, key: str, kind: Kind, **kw: object) -> Question:
    fmt = kw.pop("fmt", {})
    r = state.reader_register
    return Question(key, kind, say(key, r, **fmt), explain(key, r), **kw)  # type: ignore[arg-type]


def _opt(state: InitState, key: str, value: str) -> Option:
    return Option(say(key, state.reader_register), value)


def questions(state: InitState, step: Step) -> list[Question]:
    """The questions of `step`, built fresh from the state so they follow every answer."""
    r = state.reader_register
    if step == Step.READER:
        opts = [Option(t, t) for t in READER_OPTIONS]
        return [_q(state, "reader", "choice", options=opts, default=state.reader or READER_OPTIONS[1])]
    if step == Step.JOB:
        qs: list[Question] = []
        repo = state.detected.repo
        if repo is not None and not repo.is_git:
            qs.append(
                _q(state, "not_git", "choice", fmt={"path": repo.path}, free_text=False,
                   options=[Option("Continue with this folder", "continue"), Option("Quit", "quit")],
                   default="continue")
            )
        qs.append(_q(state, "repo", "text", default=state.repo or proposals.repo_line(state)))
        if repo is not None and repo.dirty:
            qs.append(
                _q(state, "dirty", "choice", free_text=False,
                   fmt={"summary": proposals.dirty_summary(repo)},
                   options=[_opt(state, "dirty_continue", "continue"), _opt(state, "dirty_recheck", "recheck")],
                   default="continue")
            )
        qs.append(_q(state, "activate", "text", default=state.activate or proposals.activate_line(state)))
        qs.append(_q(state, "command", "choice", default=proposals.command_default(state), filterable=True,
                     options=[Option(cmd, cmd, note=why) for cmd, why in proposals.candidate_commands(state)]))
        if state.reading:  # the run line depends on the script's reading: nothing to accept before it lands
            qs.append(Question("reading", "choice", say("reading", r, script=state.script), explain("reading", r),
                               free_text=False))
            return qs
        if state.changes:
            qs.append(_q(state, "changes", "multi", free_text=False, options=[
                Option(f"{c.what} -> {c.how}", str(i), c.enabled, c.why) for i, c in enumerate(state.changes)]))
            qs.append(_q(state, "steps", "text", default=proposals.step_count(state),
                         fmt={"notes": proposals.warmup_note(state)}))
            qs.append(_q(state, "mode", "choice", free_text=False, default=state.mode,
                         options=[_opt(state, "mode_speed", "speed"), _opt(state, "mode_accuracy", "accuracy")]))
        qs.append(_q(state, "run", "text", default=state.run or proposals.run_line(state),
                     fmt={"notes": proposals.run_notes(state)}))
        if state.analysis is not None:
            qs.append(_q(state, "must_not_change", "text",
                         default=state.must_not_change or proposals.must_not_change(state)))
        qs.append(_q(state, "node", "text", default=state.node or proposals.node_line(state)))
        problems = proposals.known_problems(state)
        if problems:  # never ask the user to vouch for what detection knows is false
            qs.append(Question("guarantees", "choice", say("guarantees_problems", r, problems="; ".join(problems)),
                               explain("guarantees", r), free_text=False, default="anyway",  # honest, and never loops
                               options=[_opt(state, "guarantee_recheck", "recheck"),
                                        _opt(state, "guarantee_node", "node"),
                                        _opt(state, "guarantee_anyway", "anyway")]))
            return qs
        items = proposals.guarantee_items(state, r)
        qs.append(
            _q(state, "guarantees", "choice", free_text=False, fmt={"items": "; ".join(items)},
               options=[_opt(state, "guarantee_yes", "yes"), _opt(state, "guarantee_no", "no")], default="yes")
        )
        return qs
    if step == Step.CHECKS:
        checks = state.checks if "checks" in state.answered else proposals.checkpoints(state)
        opts = [
            Option(f"{c.name}: {c.what}", str(i), c.enabled, f"{c.where} · {c.steps} · {c.tolerance}")
            for i, c in enumerate(checks)
        ]
        examples = proposals.extra_check_examples(state)
        return [
            _q(state, "checks", "multi", options=opts, free_text=False),
            _q(state, "extra_checks", "text", default=state.extra_checks, allow_empty=True,
               fmt={"examples": f" For example: {examples}." if examples else ""}),
            _q(state, "recorder", "text", default=state.recorder or proposals.recorder(state)),
        ]
    if step == Step.RULES:
        chosen = state.allowed_changes if "allowed" in state.answered else list(ALLOWED_CHANGES[:4])
        hints = state.hints if "hints" in state.answered else []
        return [
            _q(state, "allowed", "multi", free_text=False,
               options=[Option(c, c, c in chosen, ALLOWED_NOTES[c] if r == "algo" else "")
                        for c in ALLOWED_CHANGES]),
            _q(state, "own_tests", "text", default=state.own_tests or proposals.test_command(state),
               allow_empty=True),
            _q(state, "hands_off", "multi", free_text=True, options=[
                Option(f, f, f in state.hands_off.split(", ")) for f in proposals.folders(state)]),
            _q(state, "memory_trade", "text", default=state.memory_trade or "no more than today", allow_empty=True),
            _q(state, "when_to_stop", "text",
               default=state.when_to_stop or "-15% step time would do; then hand back", allow_empty=True),
            _q(state, "hints", "multi", free_text=True, options=[Option(h, h, h in hints) for h in HINTS]),
            _q(state, "anything_else", "text", default=state.anything_else, allow_empty=True),
        ]
    return [
        _q(state, "confirm", "choice", free_text=False,
           options=[_opt(state, "confirm_yes", "yes"), _opt(state, "confirm_no", "no")], default="yes")
    ]


def _index(state: InitState, keys: list[str]) -> int:
    """Where `state.at` is among the step's questions. A question that is gone (a re-scan found the
    checkout clean) leaves the place to the first one still unanswered, else to the last."""
    if state.at in keys:
        return keys.index(state.at)
    if not state.at:
        return 0
    return next((i for i, k in enumerate(keys) if k not in state.answered), len(keys) - 1)


def current(state: InitState) -> Question | None:
    qs = questions(state, state.step)
    return qs[_index(state, [q.key for q in qs])] if qs else None


def answer(state: InitState, value: str | list[str]) -> tuple[InitState, Outcome]:
    """The state after the answer to the current question, moved on. The same state on error."""
    q = current(state)
    if q is None:
        return state, Outcome("No question here.", "stay")
    if q.key == "reading":
        return state, Outcome(None, "stay")
    new, outcome = _apply(state.model_copy(update={"at": q.key}), q, value)
    if outcome.error:
        return state, outcome
    if q.key not in new.answered:
        new = new.model_copy(update={"answered": [*new.answered, q.key]})
    if outcome.action in ("next", "analyze"):
        new = advance(new)
    return new, outcome


def take_analysis(state: InitState, analysis: Analysis) -> InitState:
    """Fold a script's analysis in: the benchmark table appears, and the user is taken to it
    unless they already answered it; otherwise they stay on the question they were at."""
    from .analyze.benchmark import default_steps, job_launch, propose

    q = current(state)
    key = q.key if q else None
    args = job_launch(state).args
    new = state.model_copy(update={"reading": False, "analysis": analysis, "changes": propose(
        analysis, default_steps(analysis, args), state.mode, args) if analysis.kind == "training" else []})
    keys = [x.key for x in questions(new, new.step)]
    if new.step == Step.JOB and "changes" in keys and "changes" not in new.answered:
        key = "changes"  # the table is the point of choosing a script: never skip past it
    return new.model_copy(update={"at": key}) if key in keys else new


def changed_files(state: InitState) -> list[str]:
    """The files of the script's reading that are not what was read (edited, or gone) since."""
    from pathlib import Path

    from .files import digest

    a = state.analysis
    if a is None or not a.digests:
        return []
    root = Path(state.repo_path)
    return [f for f, d in a.digests.items() if digest(root / f) != d]


def take_reread(state: InitState, analysis: Analysis) -> tuple[InitState, list[str]]:
    """A script that changed since the answers were given, read again: answers that were the proposals
    follow the new reading; answers of the user's own are kept, and said. Also returns what changed."""
    old_run, old_checks, old_changes = proposals.run_line(state), state.checks, state.changes
    was_proposal = state.run == old_run
    steps = proposals.step_count(state)
    new = take_analysis(state, analysis)
    if old_changes and new.changes:  # the user's step count and toggles stay, on the new reading
        kept = new.model_copy(update={"changes": old_changes})
        new = new.model_copy(update={"changes": proposals.plan(kept, None if steps == "all" else int(steps))})
    said = []
    if new.run and was_proposal and proposals.run_line(new) != new.run:
        new = new.model_copy(update={"run": proposals.run_line(new)})
        said.append("the run line follows it")
    elif new.run and not was_proposal:
        said.append("your own run line is kept: check its flags")
    if "checks" in new.answered:
        enabled = {c.name: c.enabled for c in old_checks}
        new = new.model_copy(update={"checks": [c.model_copy(update={"enabled": enabled.get(c.name, True)})
                                                for c in proposals.checkpoints(new)]})
        if [(c.name, c.where) for c in new.checks] != [(c.name, c.where) for c in old_checks]:
            said.append("checkpoint lines re-read")
    return new, said


def analysis_failed(state: InitState) -> InitState:
    """The script could not be read: the questions that waited for it are asked on what is known."""
    if not state.reading:
        return state
    new = state.model_copy(update={"reading": False})
    return go(new, Step.JOB, "run") if new.step == Step.JOB else new


def go(state: InitState, step: Step, key: str = "") -> InitState:
    """To question `key` of `step` ("": its first question, named, so a question that new facts put
    before it later does not take the user's place)."""
    return state.model_copy(update={"step": step, "at": key or next((q.key for q in questions(state, step)), "")})


def advance(state: InitState) -> InitState:
    """To the question after the current one; after a step's last, to the next step's first. When the
    current question went away with the answer, the first one still unanswered is next."""
    keys = [q.key for q in questions(state, state.step)]
    i = _index(state, keys)
    if state.at and state.at not in keys and i < len(keys) and keys[i] not in state.answered:
        return state.model_copy(update={"at": keys[i]})
    if i + 1 < len(keys):
        return state.model_copy(update={"at": keys[i + 1]})
    if state.step < Step.CONFIRM:
        return go(state, Step(state.step + 1))
    return state


def back(state: InitState) -> InitState:
    """Esc: to the first question of the step, then of the previous step (answers stay as the proposals)."""
    keys = [q.key for q in questions(state, state.step)]
    if keys and _index(state, keys) > 0:
        return go(state, state.step)
    if state.step > Step.READER:
        return go(state, Step(state.step - 1))
    return state


def _text(q: Question, value: str | list[str]) -> str | Outcome:
    text = literal(value if isinstance(value, str) else " ".join(value))
    found = placeholder_in(text)
    if found:
        return Outcome(found, "stay")
    if not text and not q.allow_empty:
        return Outcome("empty", "stay")
    if text.upper() == "TBD":  # the downstream check refuses it: say so now, not at step 4
        return Outcome("tbd", "stay")
    return text


def _apply(state: InitState, q: Question, value: str | list[str]) -> tuple[InitState, Outcome]:
    """The state the answer makes, and what happens next; on an error, the state as it was."""
    r = state.reader_register
    if q.kind == "multi":
        picked = value if isinstance(value, list) else [value]
        for p in picked:
            found = placeholder_in(p)
            if found:
                return state, Outcome(say("placeholder", r, found=found), "stay")
        return _apply_multi(state, q, [literal(p) for p in picked if p.strip()]), Outcome()
    text = _text(q, value)
    if isinstance(text, Outcome):
        key = text.error if text.error in ("empty", "tbd") else "placeholder"
        return state, Outcome(say(key, r, found=text.error), "stay")
    k = q.key
    set_ = state.model_copy
    if k == "reader":
        return set_(update={"reader": text, "reader_register": register_for(text)}), Outcome()
    if k == "not_git":
        return state, Outcome(None, "back") if text == "quit" else Outcome()
    if k == "dirty":
        if text == "recheck":
            return state, Outcome(None, "recheck")
        decision = (f"Dirty checkout ({proposals.dirty_summary(state.detected.repo)}) settled: "
                    f"optimize starts from HEAD without the uncommitted changes.") if state.detected.repo else ""
        return set_(update={"dirty_decision": decision}), Outcome()
    if k == "run":
        missing = missing_inputs(state, text)
        if missing:
            return state, Outcome(say("run_missing", r, names=missing), "stay")
        left = left_out(state, text)
        if left:
            return state, Outcome(say("run_left_out", r, names=left, source=_source(state)), "stay")
        return set_(update={"run": text}), Outcome()
    if k in ("repo", "activate", "node", "must_not_change", "extra_checks", "recorder", "own_tests",
             "memory_trade", "when_to_stop", "anything_else"):
        return set_(update={k: text}), Outcome()
    if k == "command":
        launch = proposals.read_command(state, text)
        if launch is None:
            return state, Outcome(say("command_unknown", r, found=text[:80]), "stay")
        stale = launch.path != state.script or state.analysis is None
        return set_(update={"command": text, "launch": launch, "script": launch.path or "", "run": "",
                            **({"analysis": None, "changes": []} if stale else {})}), Outcome(None, "analyze")
    if k in ("steps", "mode"):
        if k == "steps":
            whole = text.lower() in ("all", "whole", "whole job")
            if not whole and (not text.isdigit() or not 0 < int(text) < 10**7):
                return state, Outcome(say("steps_number", r), "stay")
            new, steps = state, None if whole else int(text)
        else:
            new = set_(update={"mode": "accuracy" if text == "accuracy" else "speed"})
            count = proposals.step_count(new)
            steps = None if count == "all" else int(count)
        return new.model_copy(update={"changes": proposals.plan(new, steps), "run": ""}), Outcome()
    if k == "guarantees":
        stamp = datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z").strip()
        if text == "recheck":
            return state, Outcome(None, "recheck")
        if text == "node":
            return set_(update={"at": "node"}), Outcome(None, "stay")
        if text == "anyway":
            return set_(update={"guarantees": f"User chose to continue at {stamp} despite: "
                                              f"{'; '.join(proposals.known_problems(state))}"}), Outcome()
        if text != "yes":
            return go(set_(update={"guarantees": ""}), state.step), Outcome(None, "stay")
        items = "; ".join(proposals.guarantee_items(state, "mlsys"))
        return set_(update={"guarantees": f"User confirmed at {stamp}: {items}"}), Outcome()
    if k == "confirm":
        return state, Outcome(None, "write" if text == "yes" else "back")
    return state, Outcome()


def missing_inputs(state: InitState, run: str) -> str:
    """The required inputs of the job's parser that the run line leaves out, said as a list."""
    a = state.analysis
    if a is None or not a.required:
        return ""
    from .analyze.benchmark import job_args
    from .analyze.needs import missing_inputs, say_missing

    args = job_args(run)
    return say_missing(missing_inputs(a.required, args, proposals.store_true(a))) if args is not None else ""


def left_out(state: InitState, run: str) -> str:
    """The options whose value the job's documented command leaves to the reader (`--model <your_path>`)
    that the run line does not give: without them the job would run on its defaults, a different job."""
    launch = state.launch
    if launch is None or not launch.left_out:
        return ""
    from .analyze.benchmark import job_args

    given = {a.split("=")[0] for a in job_args(run) or [] if a.startswith("-")}
    return ", ".join(x for x in launch.left_out if x.split(" ")[0] not in given)


def _source(state: InitState) -> str:
    where = state.launch.source if state.launch is not None else ""
    return where.split(":")[0] if where else "The job's documented command"


def unattended(state: InitState) -> InitState:
    """The guarantee question without a person (`--yes`): what was checked, and that nobody vouched."""
    stamp = datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z").strip()
    checked = "; ".join(proposals.guarantee_items(state, "mlsys")[2:]) or "nothing"
    problems = proposals.known_problems(state)
    return advance(state.model_copy(update={
        "guarantees": f"Not confirmed by a person: the answers file supplied the answers ({stamp}); {checked}"
                      + (f"; problems found: {'; '.join(problems)}" if problems else ""),
        "answered": state.answered if "guarantees" in state.answered else [*state.answered, "guarantees"]}))


def _apply_multi(state: InitState, q: Question, picked: list[str]) -> InitState:
    if q.key == "changes":  # the run line follows the table
        return state.model_copy(update={"run": "", "changes": [
            c.model_copy(update={"enabled": str(i) in picked}) for i, c in enumerate(state.changes)]})
    if q.key == "checks":
        base = state.checks if "checks" in state.answered else proposals.checkpoints(state)
        return state.model_copy(update={"checks": [
            c.model_copy(update={"enabled": str(i) in picked}) for i, c in enumerate(base)]})
    if q.key == "allowed":
        return state.model_copy(update={"allowed_changes": [c for c in ALLOWED_CHANGES if c in picked]})
    if q.key == "hints":
        return state.model_copy(update={"hints": picked})
    if q.key == "hands_off":
        return state.model_copy(update={"hands_off": ", ".join(picked)})
    return state
