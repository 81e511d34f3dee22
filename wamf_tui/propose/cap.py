"""How far the benchmark runs: the setting that caps the job's steps (the one its training loop reads, never
one the job computes itself), the job's own total, and whether the job is short enough to keep whole."""

from __future__ import annotations

from ..model import Analysis, StepControl

DEFAULT_STEPS = 30  # warm-up until step time settles, then at least 10 steady steps


UNSET_DEFAULTS = ("None", "''", '""')  # a step flag's default that says no total


def default_steps(a: Analysis, args: list[str] | tuple[str, ...] = ()) -> int | None:
    """The proposed step count, or None to keep the whole job: a job whose total (as its command sets
    it, else its default) is already within one benchmark run is left whole, as the spec asks."""
    control = step_control(a)
    total = total_steps(control, args, a)
    if total and total.isdigit() and 0 < int(total) <= DEFAULT_STEPS and control and "epoch" not in control.name:
        return None
    return DEFAULT_STEPS


def total_steps(control: StepControl | None, args: list[str] | tuple[str, ...],
                a: Analysis | None = None) -> str | None:
    """The job's step total: the value its command gives the step flag (`--num_iterations 18865`), else the
    config file's it names, else the flag's default. A default of 10 says nothing of a command that asks for
    18865."""
    if control is None:
        return None
    for i, word in enumerate(args):
        name, eq, value = word.partition("=")
        if name == control.name:
            return value if eq else (args[i + 1] if i + 1 < len(args) else None)
    said = a.resolved.get(control.name) if a is not None else None
    return said.value if said is not None and said.source != "default" and said.value else control.default


def step_control(a: Analysis) -> StepControl | None:
    """The step count's setting: the one the training loop's header reads, else the first the reading found
    (a flag of the parser that the loop never reads, litgpt's `--train.max_steps`, must not win over the loop's
    own bound). None when the loop's bound is one the job computes itself (cleanrl's `num_iterations =
    total_timesteps // batch_size`), or one it breaks on that it computes from no step setting (litgpt's
    `max_iters` from `train.max_tokens`): no flag caps it, the wrapper does."""
    bounds = [s for s in a.step_controls if s.role == "bound" and "epoch" not in s.name and "limit" not in s.name]
    read = next((s for s in bounds if _leaf(s.name) in {r.lower() for r in a.loop_reads}), None)
    if read is not None and _leaf(read.name) in {c.lower() for c in a.computed}:
        return None
    if read is None and a.loop_bound_local:  # it breaks on a bound no step setting feeds: the wrapper caps
        return None
    return read or next(iter(bounds), None)


def _leaf(setting: str) -> str:
    """`num_iterations` of `--num-iterations`, `SOLVER.MAX_ITER` -> `max_iter`: as the code reads it."""
    return setting.lstrip("-+").split(".")[-1].replace("-", "_").lower()


def epoch_control(a: Analysis) -> StepControl | None:
    """The job's own epoch count flag (`--epochs`), where its parser has one."""
    return next((s for s in a.step_controls if s.role == "bound" and "epoch" in s.name and s.name.startswith("--")),
                None)
