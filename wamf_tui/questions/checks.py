"""Step 2: how the optimizer proves a change right: the checkpoints, checks of the user's own, and
where the reference values are recorded."""

from __future__ import annotations

from ..contract import proof
from ..model import InitState, Step
from ..propose import proposals
from .base import Ask, Option, Outcome, Question, Value, put, setter


def _base(state: InitState):
    return state.checks if "checks" in state.answered else proposals.checkpoints(state)


def _checks(state: InitState) -> Question:
    wrong = proof.disproved(state)
    return put(state, "checks", "multi", free_text=False, options=[
        Option(f"{c.name}: {c.what}", str(i), c.enabled,
               proof.mark(wrong[c.name]) if c.name in wrong else f"{c.where} · {c.steps} · {c.tolerance}")
        for i, c in enumerate(_base(state))])


def _take_checks(state: InitState, value: Value) -> tuple[InitState, Outcome]:
    picked = value if isinstance(value, list) else [value]
    return state.model_copy(update={"checks": [
        c.model_copy(update={"enabled": str(i) in picked}) for i, c in enumerate(_base(state))]}), Outcome()


def _extra_checks(state: InitState) -> Question:
    examples = proposals.extra_check_examples(state)
    return put(state, "extra_checks", "text", default=state.extra_checks, allow_empty=True,
               fmt={"examples": f" For example: {examples}." if examples else ""})


def _recorder(state: InitState) -> Question:
    return put(state, "recorder", "text", default=state.recorder or proposals.recorder(state))


ASKS = (
    Ask("checks", Step.CHECKS, _checks, _take_checks),
    Ask("extra_checks", Step.CHECKS, _extra_checks, setter("extra_checks")),
    Ask("recorder", Step.CHECKS, _recorder, setter("recorder")),
)
