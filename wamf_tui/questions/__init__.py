"""Every question of the init flow, declared once, in one module per step (`reader`, `job`, `checks`,
`rules`, `confirm`). A new question is one `Ask` in its step's module and its words in `wording`."""

from __future__ import annotations

from ..model import Step
from . import checks, confirm, job, reader, rules
from .base import Ask, Option, Outcome, Question, Value

REGISTRY: dict[Step, tuple[Ask, ...]] = {
    Step.READER: reader.ASKS,
    Step.JOB: job.ASKS,
    Step.CHECKS: checks.ASKS,
    Step.RULES: rules.ASKS,
    Step.CONFIRM: confirm.ASKS,
}

__all__ = ["REGISTRY", "Ask", "Option", "Outcome", "Question", "Value"]
