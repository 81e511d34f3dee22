"""The spec's arithmetic for what the benchmark switches off or cuts, from the job's own settings."""

from __future__ import annotations

from wamf_tui.model import Analysis, StepControl
from wamf_tui.propose.prices import checkpoint_price, eval_batches_cut, eval_price


def job(flags: dict[str, str | None], total: str | None = "2000") -> Analysis:
    return Analysis(script="train.py", config_system="argparse", flags=flags, loop_reads=["steps"],
                    step_controls=[StepControl(name="--steps", file="train.py", line=3, default=total)])


def test_an_eval_is_priced_with_what_the_job_says_of_it():
    assert eval_price(job({"--eval-every": "200"})) == (
        "price: eval batches x 1/3 of a train step / steps between evals; found every 200 (--eval-every), "
        "the rest is to measure")
    assert eval_price(job({"--eval-iters": "50"})) == (
        "price: eval batches x 1/3 of a train step / steps between evals; found batches 50 (--eval-iters), "
        "the rest is to measure")
    assert eval_price(job({"--lr": "3"})) == (
        "price: eval batches x 1/3 of a train step / steps between evals; interval and batches not found")
    assert eval_price(job({"--eval-every": "200", "--eval-iters": "60"})) == (
        "price: 60 eval batches (--eval-iters) x 1/3 train step / 200 steps (--eval-every) = about 10.0% of train "
        "time")


def test_a_save_is_priced_by_its_own_switch_first_and_by_the_jobs_total():
    flags = {"--save-steps": "100", "--ckpt-every": "1"}
    assert checkpoint_price(job(flags), "--ckpt-every").startswith(
        "price: one save every 1 steps (--ckpt-every default), 2000 saves in the real job's 2000 steps;")
    assert checkpoint_price(job(flags), None).startswith(
        "price: one save every 100 steps (--save-steps default), 20 saves in the real job's 2000 steps;")
    assert checkpoint_price(job(flags, total=None), None).startswith(
        "price: one save every 100 steps (--save-steps default); share of train time")


def test_an_evals_batches_are_cut_to_one_in_its_parsers_spelling_unless_a_framework_limit():
    assert eval_batches_cut(job({"--eval-iters": "200"})) == ["--eval-iters=1"]
    assert eval_batches_cut(job({"--eval-iters": "1"})) is None
    lightning = job({"limit_val_batches": "20"}).model_copy(update={"config_system": "hydra"})
    assert eval_batches_cut(lightning) is None  # a share of the val set, not a count: left as the job has it
