"""The init flow: where the user is (`InitState.at`, a question's key), what the current question is,
and the state each answer, reading and write makes. The questions themselves are declared in
`questions`, one module per step; the UI only shows a `Question` and hands the answer back, so the whole
conversation is testable without a terminal. `InitState` is frozen: every function here returns a new
state, and its caller keeps it (the flow is the one place a state is made from the last).
"""

from __future__ import annotations

from .contract.render import literal, placeholder_in
from .model import Analysis, InitState, Step
from .propose import proposals
from .questions import REGISTRY, Ask, Option, Outcome, Question, Value
from .questions.confirm import PHASES, contract_path, written
from .questions.job import unattended as _unattended
from .wording import say

__all__ = ["Option", "Outcome", "Question", "PHASES", "contract_path", "written"]


def asks(state: InitState, step: Step) -> list[Ask]:
    """The declarations of `step` that apply to the state as it is."""
    return [a for a in REGISTRY[step] if a.when(state)]


def questions(state: InitState, step: Step) -> list[Question]:
    """The questions of `step`, built fresh from the state so they follow every answer."""
    return [a.build(state) for a in asks(state, step)]


def _index(state: InitState, keys: list[str]) -> int:
    """Where `state.at` is among the step's questions. A question that is gone (a re-scan found the
    checkout clean) leaves the place to the first one still unanswered, else to the last."""
    if state.at in keys:
        return keys.index(state.at)
    if not state.at:
        return 0
    return next((i for i, k in enumerate(keys) if k not in state.answered), len(keys) - 1)


def _current(state: InitState) -> Ask | None:
    found = asks(state, state.step)
    return found[_index(state, [a.key for a in found])] if found else None


def current(state: InitState) -> Question | None:
    ask = _current(state)
    return ask.build(state) if ask else None


def answer(state: InitState, value: Value) -> tuple[InitState, Outcome]:
    """The state after the answer to the current question, moved on. The same state on error."""
    ask = _current(state)
    if ask is None:
        return state, Outcome("No question here.", "stay")
    if ask.waits:  # a reading or a write on its way: the Enter has nothing to answer
        return state, Outcome(None, "stay")
    q = ask.build(state)
    checked = _checked(state, q, value)
    if isinstance(checked, Outcome):
        return state, checked
    new, outcome = ask.apply(state.model_copy(update={"at": q.key}), checked)
    if outcome.error:
        return state, outcome
    if ask.remembered and q.key not in new.answered:
        new = new.model_copy(update={"answered": [*new.answered, q.key]})
    if outcome.action == "first":  # to the step's first question; for the app, a move within the step
        new, outcome = go(new, new.step), Outcome(None, "stay", outcome.said)
    if outcome.action in ("next", "analyze"):
        new = advance(new)
    return new, outcome


def take_analysis(state: InitState, analysis: Analysis) -> InitState:
    """Fold a script's analysis in: the benchmark table appears, and the user is taken to it
    unless they already answered it; otherwise they stay on the question they were at."""
    from .propose.benchmark import propose
    from .propose.cap import default_steps
    from .propose.run_line import job_launch

    q = current(state)
    key = q.key if q else None
    args = job_launch(state).args
    fresh = propose(analysis, default_steps(analysis, args), state.mode, args) if analysis.kind != "inference" else []
    kept = {c.what.split(" (")[0]: c.enabled for c in state.changes}  # the same script read again: toggles stay
    new = state.model_copy(update={"reading": False, "analysis": analysis, "changes": [
        c.model_copy(update={"enabled": kept.get(c.what.split(" (")[0], c.enabled)}) for c in fresh]})
    keys = [x.key for x in questions(new, new.step)]
    if new.step == Step.JOB and "changes" in keys and "changes" not in new.answered:
        key = "changes"  # the table is the point of choosing a script: never skip past it
    return new.model_copy(update={"at": key}) if key in keys else new


def changed_files(state: InitState) -> list[str]:
    """The files of the script's reading that are not what was read (edited, or gone) since."""
    from pathlib import Path

    from .infra.files import digest

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
    """Esc: one question back; from a step's first question, to the previous step's last. Every answer
    stays: the question shows it, and Enter keeps it."""
    if state.at == "writing":  # the file is being written: its outcome comes to this place
        return state
    if state.step == Step.CONFIRM and state.at in PHASES:  # a question of the write: back to the confirmation
        return state.model_copy(update={"at": "confirm"})
    keys = [q.key for q in questions(state, state.step)]
    i = _index(state, keys) if keys else 0
    if i > 0:
        return state.model_copy(update={"at": keys[i - 1]})
    if state.step > Step.READER:
        before = Step(state.step - 1)
        return go(state, before, next((q.key for q in reversed(questions(state, before))), ""))
    return state


def _checked(state: InitState, q: Question, value: Value) -> Value | Outcome:
    """The answer as the question's declaration takes it (a list for a multi question), or the refusal:
    a placeholder, an empty answer where one is needed, or TBD (refused downstream: said now, not at step 4)."""
    r = state.reader_register
    if q.kind == "multi":
        picked = value if isinstance(value, list) else [value]
        blank = next((f for f in map(placeholder_in, picked) if f), "")
        return Outcome(say("placeholder", r, found=blank), "stay") if blank else [literal(p) for p in picked
                                                                                   if p.strip()]
    text = literal(value if isinstance(value, str) else " ".join(value))
    found = placeholder_in(text)
    if found:
        return Outcome(say("placeholder", r, found=found), "stay")
    if not text and not q.allow_empty:
        return Outcome(say("empty", r), "stay")
    if text.upper() == "TBD":
        return Outcome(say("tbd", r), "stay")
    return text


def unattended(state: InitState) -> InitState:
    """The guarantee question without a person (`--yes`): what was checked, and that nobody vouched."""
    return advance(_unattended(state))


def resumed(state: InitState) -> InitState:
    """A saved session taken up again: a write that was under way, or its questions, start over at the
    confirmation (what was on screen then, a difference or a failure, is gone with that run)."""
    return state.model_copy(update={"at": "confirm"}) if state.step == Step.CONFIRM and state.at in PHASES else state
