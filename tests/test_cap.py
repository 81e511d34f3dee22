"""How far the benchmark runs, from the job's total as its command, its config file or its default sets it."""

from __future__ import annotations

import pytest

from wamf_tui.model import Analysis, Resolved, StepControl
from wamf_tui.propose.cap import DEFAULT_STEPS, default_steps, total_steps

STEPS = StepControl(name="--steps", file="train.py", line=3, default="2000")


def job(default: str = "2000", resolved: dict[str, Resolved] | None = None) -> Analysis:
    return Analysis(script="train.py", step_controls=[STEPS.model_copy(update={"default": default})],
                    loop_reads=["steps"], resolved=resolved or {})


@pytest.mark.parametrize(("total", "steps"), [("30", None), ("29", None), ("1", None), ("31", DEFAULT_STEPS),
                                              ("0", DEFAULT_STEPS), ("2000", DEFAULT_STEPS)])
def test_a_job_within_one_benchmark_run_is_kept_whole(total, steps):
    """Up to 30 steps (the cap itself included) the job is the benchmark; a total of 0 says no total."""
    assert default_steps(job(total)) == steps


def test_the_command_sets_the_total_in_either_spelling_and_a_flag_without_its_value_says_none():
    assert total_steps(STEPS, ["--steps=12"]) == "12" and total_steps(STEPS, ["--steps", "12"]) == "12"
    assert default_steps(job(), ["--steps=12"]) is None and default_steps(job(), ["--steps", "12"]) is None
    assert total_steps(STEPS, ["--lr", "1", "--steps"]) is None  # the last word, with nothing after it
    assert total_steps(STEPS, ["--stepsize=5"]) == "2000"  # another flag: the default stands


def test_the_config_file_the_command_names_sets_the_total_over_the_default():
    from_file = job(resolved={"--steps": Resolved(value="20", source="conf/short.yaml:4")})
    assert total_steps(STEPS, [], from_file) == "20" and default_steps(from_file) is None
    said_default = job(resolved={"--steps": Resolved(value="20", source="default")})
    assert total_steps(STEPS, [], said_default) == "2000" and default_steps(said_default) == DEFAULT_STEPS
    assert total_steps(STEPS, []) == "2000"  # no reading at hand: the flag's default
