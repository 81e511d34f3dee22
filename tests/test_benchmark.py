"""The benchmark conversion: off means off, each switch is the job's own, and nothing blocks what the job needs."""

from __future__ import annotations

import pytest
from conftest import make_repo

from wamf_tui.propose.benchmark import propose
from wamf_tui.propose.validate import check_run
from wamf_tui.read.analyze import analyze_script

CONFIGURATOR = """\
import os
import torch
out_dir = 'out'
eval_interval = 2000
eval_iters = 200
max_iters = 600000
exec(open('configurator.py').read())
master_process = True
os.makedirs(out_dir, exist_ok=True)
if master_process:
    os.makedirs(out_dir, exist_ok=True)
for iter_num in range(max_iters):
    if {guard}:
        losses = estimate_loss()
    loss = model(x)
    loss.backward()
    optimizer.step()
"""


def changes(tmp_path, files: dict[str, str], entry: str = "train.py"):
    root = make_repo(tmp_path / "job", files)
    a = analyze_script(root / entry, root)
    return root, a, propose(a)


@pytest.mark.parametrize(("guard", "runs"), [
    ("iter_num % eval_interval == 0", True),
    ("iter_num % eval_interval == 0 and master_process", True),
    ("iter_num > 0 and iter_num % eval_interval == 0", False),
    ("iter_num % eval_interval == eval_interval - 1", False),
])
def test_an_eval_every_n_steps_still_runs_at_step_0(tmp_path, guard, runs):
    root, a, rows = changes(tmp_path, {"train.py": CONFIGURATOR.format(guard=guard), "configurator.py": "#\n"})
    row = next(c for c in rows if c.what.startswith("eval estimate_loss"))
    assert ("still runs once, at step 0" in row.what) is runs
    assert ("so it is timed" in row.exclusion) is runs and ("excluded" in row.exclusion) is not runs
    assert row.why == ("it is timed in every benchmark run (its price is in the contract)" if runs
                       else "evals are priced, not timed")  # the reason never says 'not timed' of what is

    cuts = [c.flags for c in rows if c.how == "--eval_iters=1"]
    assert cuts == ([["--eval_iters=1"]] if runs else [])  # what the cap cannot skip reads one batch


def test_a_configurator_boolean_a_config_file_may_turn_on_is_set_false(tmp_path):
    """nanoGPT: `wandb_log = False` in train.py, `wandb_log = True` in config/train_gpt2.py, applied in order:
    only the job's own `--wandb_log=False` after the file turns the tracker off (WANDB_MODE is not its switch)."""
    body = CONFIGURATOR.format(guard="False").replace("eval_iters = 200\n", "eval_iters = 200\nwandb_log = False\n")
    body += "    if wandb_log:\n        import wandb\n        wandb.init(project='x')\n"
    root, a, rows = changes(tmp_path, {"train.py": body, "configurator.py": "#\n"})
    row = next(c for c in rows if c.what.startswith("wandb tracker off"))
    assert (row.flags, row.env) == (["--wandb_log=False"], [])


COUNTED = """\
import argparse
import torch
p = argparse.ArgumentParser()
p.add_argument("--checkpointing_steps", type=int, default=500)
p.add_argument("--always_save", type=int, default=1)
args = p.parse_args()
global_step = 0
for epoch in range(10):
    for batch in loader:
        loss = model(batch)
        loss.backward()
        optimizer.step()
{body}
"""


@pytest.mark.parametrize(("body", "runs"), [
    # counted up, then tested, in the same pass: never 0 at the test (the diffusers / lit-llama idiom)
    ("        global_step += 1\n        if global_step % args.checkpointing_steps == 0:\n"
     "            torch.save(model, 'ckpt.pt')", False),
    ("        if sync:\n            global_step += 1\n            if global_step % args.checkpointing_steps == 0:\n"
     "                torch.save(model, 'ckpt.pt')", False),
    ("        if (global_step + 1) % args.checkpointing_steps == 0:\n            torch.save(model, 'ckpt.pt')\n"
     "        global_step += 1", False),
    # counted under a condition that the test holds too (litgpt's `not is_accumulating`)
    ("        if sync:\n            global_step += 1\n        if sync and global_step % args.checkpointing_steps == 0:"
     "\n            torch.save(model, 'ckpt.pt')", False),
    # inside an interval's `if`, under `x > 0` on the same counter (nanoGPT's save under its eval): the interval
    # switched off leaves only step 0, where `x > 0` is false
    ("        if global_step % args.checkpointing_steps == 0:\n            if better or args.always_save:\n"
     "                if global_step > 0:\n                    torch.save(model, 'ckpt.pt')\n        global_step += 1",
     False),
    # tested before it is counted: true on the first pass
    ("        if global_step % args.checkpointing_steps == 0:\n            torch.save(model, 'ckpt.pt')\n"
     "        global_step += 1", True),
    # counted only on some passes (another branch): the test may still see 0
    ("        if sync:\n            global_step += 1\n        if global_step % args.checkpointing_steps == 0:\n"
     "            torch.save(model, 'ckpt.pt')", True),
    # inside an interval's `if`, under another condition: the interval still fires at step 0
    ("        if global_step % args.checkpointing_steps == 0:\n            if accelerator.is_main_process:\n"
     "                torch.save(model, 'ckpt.pt')\n        global_step += 1", True),
    # another counter counted up: not this one
    ("        seen += 1\n        if global_step % args.checkpointing_steps == 0:\n"
     "            torch.save(model, 'ckpt.pt')", True),
    # a function defined in the loop counts when it is called, not here
    ("        def bump():\n            global global_step\n            global_step += 1\n"
     "        if global_step % args.checkpointing_steps == 0:\n            torch.save(model, 'ckpt.pt')", True),
])
def test_a_counter_counted_up_before_its_test_never_fires_at_step_0(tmp_path, body, runs):
    root, a, rows = changes(tmp_path, {"train.py": COUNTED.format(body=body)})
    row = next(c for c in rows if "torch.save" in c.what)
    assert ("still runs once, at step 0" in row.what) is runs, row.what
    assert ("--checkpointing_steps=" in " ".join(row.flags)) and row.what.startswith("torch.save off") is not runs


@pytest.mark.parametrize(("start", "runs"), [("global_step = consumed // batch * accum + 1\n", False),
                                             ("global_step = 1\nglobal_step = 0\n", True)])
def test_a_counter_set_past_0_before_its_loop_never_fires_at_step_0(tmp_path, start, runs):
    """OpenRLHF's 1-indexed `step = consumed_samples // batch_size * accumulated_gradient + 1`, tested before it
    is counted up: a fresh run's first pass sees 1; set back to 0 later, it sees 0."""
    body = "        if global_step % args.checkpointing_steps == 0:\n            torch.save(model, 'ckpt.pt')\n" \
           "        global_step += 1"
    root, a, rows = changes(tmp_path, {"train.py": COUNTED.format(body=body).replace("global_step = 0\n", start)})
    row = next(c for c in rows if "torch.save" in c.what)
    assert ("still runs once, at step 0" in row.what) is runs, row.what


def test_a_save_at_the_last_step_runs_whatever_the_interval(tmp_path):
    body = ("import torch\nfor step in range(max_steps):\n    loss = model(x)\n    loss.backward()\n"
            "    opt.step()\n    if step == max_steps - 1:\n        torch.save(model, 'final.pt')\n")
    root, a, rows = changes(tmp_path, {"train.py": body})
    row = next(c for c in rows if "torch.save" in c.what)
    assert "still runs at the last step (step == max_steps - 1)" in row.what
    assert row.why == "its write is timed in every benchmark run (its price is in the contract)"


def test_the_output_folder_is_the_folders_own_setting_never_the_if_around_it(tmp_path):
    root, a, rows = changes(tmp_path, {"train.py": CONFIGURATOR.format(guard="False"), "configurator.py": "#\n"})
    flags = [f for c in rows for f in c.flags]
    assert "--out_dir=$WAMF_OUT" in flags and not any("master_process" in f for f in flags)
    assert "master_process" not in a.module_globals  # set after the configurator ran: not a setting
    run = "python train.py " + " ".join(flags)
    assert check_run(run, root, a).problems == []
    assert check_run("python train.py --master_process=x", root, a).problems == [
        "--master_process is not a setting of train.py"]


def test_a_tracker_is_switched_off_only_by_its_own_variable(tmp_path):
    body = ("from torch.utils.tensorboard import SummaryWriter\nimport wandb\nw = SummaryWriter()\n"
            "wandb.init()\nfor b in loader:\n    loss = model(b)\n    loss.backward()\n    opt.step()\n")
    root, a, rows = changes(tmp_path, {"train.py": body})
    tb = next(c for c in rows if c.what.startswith("tensorboard"))
    wb = next(c for c in rows if c.what.startswith("wandb"))
    assert tb.env == [] and "WANDB" not in tb.how and "only a code edit stops tensorboard" in tb.how
    assert tb.what == "tensorboard tracker (train.py:3) has no switch: it logs in every run" and not tb.enabled
    assert tb.why == "it logs in every run"
    assert tb.exclusion == ("tensorboard tracker at train.py:3 stays on: it logs in every run, and its logging is "
                            "timed in every benchmark run")  # recorded in the contract, with nothing to switch
    assert wb.env == ["WANDB_MODE=disabled"]


def test_uploads_never_block_the_downloads_the_job_needs(tmp_path):
    body = ("from transformers import AutoModel\nmodel = AutoModel.from_pretrained('gpt2')\n"
            "for b in loader:\n    loss = model(b).loss\n    loss.backward()\n    opt.step()\n"
            "model.push_to_hub('me/model')\n")
    root, a, rows = changes(tmp_path, {"train.py": body})
    assert not any("HF_HUB_OFFLINE" in e for c in rows for e in c.env)
    up = next(c for c in rows if c.what.startswith("push_to_hub"))
    assert not up.enabled and "only a code edit stops it" in up.how
    assert up.what == "push_to_hub (train.py:7) has no switch: it runs whenever the job reaches it"  # never "off"
    assert up.why == "it uploads in every run"


def test_no_step_cap_where_no_optimizer_steps(tmp_path):
    """Weights updated by hand: the wrapper's optimizer-step cap would never fire, so none is proposed."""
    body = ("import torch\nfor step in range(10**6):\n    loss = model(x)\n    loss.backward()\n"
            "    with torch.no_grad():\n        for p in model.parameters():\n            p -= 0.1 * p.grad\n")
    root, a, rows = changes(tmp_path, {"train.py": body})
    first = rows[0]
    assert first.what == "whole job kept (nothing can cut it short)" and not first.enabled and first.env == []
    assert not any("WAMF_MAX_STEPS" in e for c in rows for e in c.env)
    with_opt = body.replace("    with torch.no_grad():\n        for p in model.parameters():\n"
                            "            p -= 0.1 * p.grad\n", "    opt.step()\n")
    root, a, rows = changes(tmp_path / "opt", {"train.py": with_opt})
    assert rows[0].env == ["WAMF_MAX_STEPS=30"]


def test_the_off_value_a_flags_help_gives_is_used(tmp_path):
    body = ("import argparse, torch\np = argparse.ArgumentParser()\n"
            "p.add_argument('--eval-every', type=int, default=250, help='evaluate every N steps; -1 disables')\n"
            "args = p.parse_args()\nfor step in range(1000):\n    loss = model(x)\n    loss.backward()\n"
            "    opt.step()\n    if args.eval_every > 0 and step % args.eval_every == 0:\n"
            "        evaluate(model)\n")
    root, a, rows = changes(tmp_path, {"train.py": body})
    row = next(c for c in rows if c.what.startswith("eval evaluate"))
    assert row.flags == ["--eval-every=-1"] and row.how == "--eval-every=-1 (its help: -1 switches it off)"
    assert "excluded" in row.exclusion and "still runs" not in row.what  # `> 0` makes the guard false at 0


def test_only_the_jobs_own_evaluations_are_rows(tmp_path):
    helper = "def _validate_backend(x):\n    pass\n\ndef train_test_split(d):\n    return d, d\n"
    body = ("import torch\nfrom helpers import _validate_backend, train_test_split\n"
            "train, val = train_test_split(data)\n_validate_backend(cfg)\nvalidate_args(args)\n"
            "validate_expected_param_dtype(model)\nvalidate_missing_and_unexpected_for_lora(keys)\n"
            "for step in range(100):\n    loss = model(x)\n    rerun.validate_result(loss)\n    loss.backward()\n"
            "    opt.step()\n    if step > 0 and should_validate(step):\n        evaluate(model)\n"
            "        evaluate(model)\n")
    root, a, rows = changes(tmp_path, {"train.py": body, "helpers.py": helper})
    assert [c.what.split(" (")[0] for c in rows if c.what.startswith("eval ")] == ["eval evaluate"]


def test_an_optimizer_stepped_in_another_method_still_gets_the_cap(tmp_path):
    """A backward in one method and `self.opt.step()` in another is no update by hand."""
    body = ("import torch\nclass Loop:\n    def run_step(self, b):\n        loss = self.model(b)\n"
            "        loss.backward()\n        self.optimize()\n\n    def optimize(self):\n        self.opt.step()\n\n"
            "if __name__ == '__main__':\n    Loop().run_step(None)\n")
    root, a, rows = changes(tmp_path, {"train.py": body})
    assert rows[0].env == ["WAMF_MAX_STEPS=30"]


def test_what_a_readmes_command_passes_is_switched_off_and_cut_with_the_jobs_own_flags(tmp_path):
    """diffusers-style: `--push_to_hub` (store_true) in the README's command is left out, not kept; the
    step total is the job's `--max_train_steps`, cut through that flag rather than the wrapper."""
    from wamf_tui import answers
    from wamf_tui.detect.run import detect_all
    from wamf_tui.session import store as session

    body = ("import argparse, torch\np = argparse.ArgumentParser()\np.add_argument('--push_to_hub', "
            "action='store_true')\np.add_argument('--max_train_steps', type=int, default=None)\n"
            "args = p.parse_args()\nfor step in range(args.max_train_steps):\n    loss = model(x)\n"
            "    loss.backward()\n    opt.step()\nif args.push_to_hub:\n    model.push_to_hub('me/m')\n")
    root = make_repo(tmp_path / "job", {"train.py": body,
                                        "README.md": "```\npython train.py --max_train_steps=400 --push_to_hub\n```\n"})
    state = session.new_state(root)
    state = state.model_copy(update={"detected": detect_all(root)})
    state, refused = answers.fill(state, {})
    assert refused == []
    assert state.run.endswith(" train.py --max_train_steps=30")  # the seed still goes through the wrapper
    assert "--push_to_hub" not in state.run and "WAMF_MAX_STEPS" not in state.run and "400" not in state.run


def test_a_flag_that_names_a_file_gets_a_file_in_the_run_folder(tmp_path):
    body = ("import argparse, torch\np = argparse.ArgumentParser()\np.add_argument('--save', default='model.pt')\n"
            "args = p.parse_args()\nfor step in range(10):\n    loss = model(x)\n    loss.backward()\n"
            "    opt.step()\n    torch.save(model, args.save)\n")
    root, a, rows = changes(tmp_path, {"train.py": body})
    assert "--save=$WAMF_OUT/model.pt" in [f for c in rows for f in c.flags]


def test_a_flag_guarding_a_save_stays_in_the_command(tmp_path):
    """`--use_ema` guards the EMA's save, and the EMA's training too: leaving it out changes the job."""
    from wamf_tui import answers
    from wamf_tui.detect.run import detect_all
    from wamf_tui.session import store as session

    body = ("import argparse, torch\np = argparse.ArgumentParser()\np.add_argument('--use_ema', action='store_true')\n"
            "args = p.parse_args()\nfor step in range(10):\n    loss = model(x)\n    loss.backward()\n    opt.step()\n"
            "    if args.use_ema:\n        ema.step(model)\nif args.use_ema:\n    torch.save(ema, 'ema.pt')\n")
    root = make_repo(tmp_path / "job", {"train.py": body, "README.md": "```\npython train.py --use_ema\n```\n"})
    state = session.new_state(root)
    state = state.model_copy(update={"detected": detect_all(root)})
    state, refused = answers.fill(state, {})
    assert refused == [] and "--use_ema" in state.run.split()


HF_JOB = """\
from dataclasses import dataclass, field
import transformers
from transformers import Trainer

@dataclass
class DataArguments:
    data_path: str = field(default=None)
    max_len: int = 512

@dataclass
class TrainingArguments(transformers.TrainingArguments):
    optim: str = field(default="adamw_torch")

def train():
    parser = transformers.HfArgumentParser((DataArguments, TrainingArguments))
    data_args, training_args = parser.parse_args_into_dataclasses()
    trainer = Trainer(model=model, args=training_args)
    trainer.train()
    if training_args.do_eval:
        trainer.evaluate()

if __name__ == "__main__":
    train()
"""


def test_an_hf_trainer_job_gets_the_trainers_own_switches_and_no_wrapper(tmp_path):
    from wamf_tui.detect.launch import parse_launch
    from wamf_tui.model import InitState
    from wamf_tui.propose.run_line import needs_wrapper, run_command

    root, a, _ = changes(tmp_path, {"train.py": HF_JOB})
    assert a.config_system == "hf_trainer"
    assert a.flags["--max_len"] == "512" and a.flags["--optim"] == "'adamw_torch'" and "--save_strategy" in a.flags
    command = ("torchrun --nproc_per_node=4 train.py --data_path d.json --bf16 True --evaluation_strategy steps "
               "--save_strategy steps --report_to wandb --do_eval --push_to_hub")
    launch = parse_launch(command, exists={"train.py"}.__contains__)
    state = InitState(repo_path=str(root), contract_path=str(root / "contract.md"), script="train.py",
                      launch=launch, analysis=a)
    state = state.model_copy(update={"changes": propose(a, 30, "speed", launch.args)})
    assert not needs_wrapper(state.changes)
    assert run_command(state) == (
        "torchrun --nproc_per_node=4 train.py --data_path d.json --bf16 True --max_steps=30 --report_to none "
        f"--save_strategy no --do_eval False --evaluation_strategy no --output_dir={root}.wamf-bench --seed=0")
    verdict = check_run(run_command(state), root, a)
    assert verdict.problems == [] and verdict.warnings == []
    typo = check_run("python train.py --max_step=30 --data_path d", root, a)
    assert typo.problems == [] and typo.warnings == [
        "--max_step is not a field of train.py's dataclasses nor of TrainingArguments as wamf-tui knows it; check it"]


def test_a_save_no_switch_reaches_is_said_to_run_never_to_be_off(tmp_path):
    body = "import torch\nfor step in range(100):\n    loss = model(x)\n    loss.backward()\n    opt.step()\n" \
           "    torch.save(model.state_dict(), 'last.pt')\n"
    _, _, rows = changes(tmp_path, {"train.py": body})
    save = next(c for c in rows if c.what.startswith("torch.save"))
    assert save.what == "torch.save (train.py:6) has no switch: it runs whenever the job reaches it"
    assert save.why.startswith("its write is timed in every benchmark run")
    assert save.exclusion.startswith(
        "checkpoint at train.py:6 has no switch: it runs whenever the job reaches it in every benchmark run")


@pytest.mark.parametrize(("guard", "when"), [
    ("accelerator.is_main_process", "whenever the job reaches it"),  # rank 0 always gets there
    ("args.local_rank in (-1, 0)", "whenever the job reaches it"),
    ("gstep % cfg.save_every == 0", "when gstep % cfg.save_every == 0 holds"),  # an interval the code sets
])
def test_a_save_no_switch_reaches_runs_under_its_guard_unless_the_guard_only_picks_a_rank(tmp_path, guard, when):
    body = "import torch\ngstep = 0\nfor step in range(100):\n    loss = model(x)\n    loss.backward()\n" \
           f"    opt.step()\n    gstep += 1\n    if {guard}:\n        torch.save(model.state_dict(), 'last.pt')\n"
    _, _, rows = changes(tmp_path, {"train.py": body})
    save = next(c for c in rows if c.what.startswith("torch.save"))
    assert save.what == f"torch.save (train.py:9) has no switch: it runs {when}"


STEPS_FLAG = "import argparse, torch\np = argparse.ArgumentParser()\np.add_argument('--max_steps', default=1000)\n" \
             "args = p.parse_args()\n"


@pytest.mark.parametrize("own_flag", [True, False])
def test_a_save_after_the_loop_runs_once_at_the_end_unless_the_cap_stops_the_job_first(tmp_path, own_flag):
    """The job's own step flag ends the loop, so the final save runs once, after the timed steps; the wrapper's
    cap stops the job inside the loop, so it never comes. Not "whenever the job reaches it"."""
    loop = "def main():\n    for step in range(args.max_steps if 0 else 100):\n        loss = model(x)\n" \
           "        loss.backward()\n        opt.step()\n    torch.save(model.state_dict(), 'final.pt')\n" \
           "def save_config():\n    torch.save(cfg, 'cfg.pt')\nmain()\nsave_config()\n"
    head = STEPS_FLAG if own_flag else "import torch\n"
    _, a, rows = changes(tmp_path, {"train.py": head + loop})
    line = head.count("\n") + 6
    save = next(c for c in rows if f"train.py:{line}" in c.what)
    if own_flag:
        assert save.what == f"torch.save (train.py:{line}) runs once, after the training loop (ends at line {line - 1})"
    else:
        assert save.what == (f"torch.save off (train.py:{line}): it runs after the training loop (ends at line "
                             f"{line - 1}), and the step cap stops the job inside it")
        assert save.exclusion.startswith(f"checkpoint at train.py:{line} excluded: it runs after the training loop")
    other = next(c for c in rows if f"train.py:{line + 2}" in c.what)  # another function: not after the loop
    assert other.what.endswith("has no switch: it runs whenever the job reaches it")


def test_saves_in_imported_modules_are_one_row(tmp_path):
    """Library saves behind the library's own conditions (no switch of the job) are one row, not one each."""
    lib = "import torch\ndef save_a(m):\n    torch.save(m, 'a')\ndef save_b(m, cfg):\n    if cfg.keep:\n" \
          "        torch.save(m, 'b')\n"
    body = "import torch\nimport mylib\nfor step in range(100):\n    loss = model(x)\n    loss.backward()\n" \
           "    opt.step()\nmylib.save_a(model)\nmylib.save_b(model, cfg)\n"
    _, a, rows = changes(tmp_path, {"train.py": body, "mylib.py": lib})
    assert [c.file for c in a.checkpoints] == ["mylib.py", "mylib.py"]
    saves = [c for c in rows if "save" in c.what]
    assert [c.what for c in saves] == ["2 save call(s) in imported modules (mylib.py)"]


def test_past_eight_rows_the_saves_no_switch_reaches_are_priced_as_one(tmp_path):
    saves = "".join(f"    if step == {k}:\n        torch.save(model, 's{k}.pt')\n" for k in range(12))
    body = "import torch\nfor step in range(100):\n    loss = model(x)\n    loss.backward()\n    opt.step()\n" + saves
    _, a, rows = changes(tmp_path, {"train.py": body})
    shown = [c for c in rows if c.exclusion]
    assert len(a.checkpoints) == 12 and len(shown) == 8
    assert shown[-1].what == "5 more save or eval calls no switch reaches (train.py)"
    assert "torch.save (train.py:29) has no switch" in shown[-1].exclusion
    _, _, eight = changes(tmp_path / "8", {"train.py": body.split("    if step == 8:")[0]})
    assert [c.what.split()[0] for c in eight if c.exclusion] == ["torch.save"] * 8  # eight fit: each its own row


def test_a_row_that_drops_the_commands_flag_is_never_merged(tmp_path):
    """Past eight rows the ones with nothing to toggle are priced as one; an eval switched off by dropping the
    docs' `--do_eval` is not such a row: merged, the drop went with it and the eval ran in every benchmark."""
    saves = "".join(f"    if step == {k}:\n        torch.save(model, 's{k}.pt')\n" for k in range(12))
    body = ("import argparse\nimport torch\np = argparse.ArgumentParser()\np.add_argument('--do_eval', "
            "action='store_true')\nargs = p.parse_args()\nfor step in range(100):\n    loss = model(x)\n"
            "    loss.backward()\n    opt.step()\n" + saves + "if args.do_eval:\n    evaluate(model)\n")
    root = make_repo(tmp_path / "job", {"train.py": body})
    rows = propose(analyze_script(root / "train.py", root), args=["--do_eval"])
    assert any(c.drop == ["--do_eval"] for c in rows)
    assert not any("evaluate" in (c.exclusion or "") and "not switched off" in (c.exclusion or "") for c in rows)


LIGHTNING_CLI = """\
import torch
from lightning.pytorch.cli import LightningCLI
from lightning.pytorch import LightningModule, LightningDataModule

class Model(LightningModule):
    def training_step(self, batch, batch_idx):
        return self.net(batch).sum()

if __name__ == "__main__":
    LightningCLI(Model, LightningDataModule)
"""


def test_a_lightning_cli_job_is_switched_with_its_trainer_arguments(tmp_path):
    from wamf_tui.detect.launch import parse_launch
    from wamf_tui.model import InitState
    from wamf_tui.propose.run_line import needs_wrapper, run_command

    root, a, _ = changes(tmp_path, {"main.py": LIGHTNING_CLI}, entry="main.py")
    launch = parse_launch("python main.py fit --config cfg.yaml", exists={"main.py"}.__contains__)
    state = InitState(repo_path=str(root), contract_path=str(root / "contract.md"), script="main.py", launch=launch,
                      analysis=a, changes=propose(a, 30, "speed", launch.args))
    assert not needs_wrapper(state.changes)
    assert run_command(state) == (
        "python main.py fit --config cfg.yaml --trainer.max_steps=30 --trainer.logger=false "
        "--trainer.enable_checkpointing=false --trainer.limit_val_batches=0 "
        f"--trainer.default_root_dir={root}.wamf-bench --seed_everything=0")


ABSL_JOB = """\
from absl import app, flags
import torch
FLAGS = flags.FLAGS
flags.DEFINE_integer("max_steps", 1000, "Steps to train.")
flags.DEFINE_string("output_dir", "out", "Where to write.")
flags.DEFINE_integer("eval_every", 100, "Eval interval; -1 disables it.")
def main(argv):
    for step in range(FLAGS.max_steps):
        loss = model(x)
        loss.backward()
        opt.step()
        if FLAGS.eval_every > 0 and step % FLAGS.eval_every == 0:
            evaluate(model)
if __name__ == "__main__":
    app.run(main)
"""
CLICK_JOB = """\
import click, torch
@click.command()
@click.option("--max-steps", "-n", default=1000)
@click.option("--out-dir", default="out")
@click.option("--eval-every", default=100, help="Eval interval, 0 disables.")
def main(max_steps, out_dir, eval_every):
    for step in range(max_steps):
        loss = m(x)
        loss.backward()
        opt.step()
        if eval_every and step % eval_every == 0:
            evaluate(m)
if __name__ == "__main__":
    main()
"""


ACCELERATE = """\
import argparse
from accelerate import Accelerator
p = argparse.ArgumentParser()
p.add_argument("--report_to", default="{default}")
args = p.parse_args()
accelerator = Accelerator(log_with=args.report_to)
accelerator.init_trackers("job")
for b in loader:
    loss = model(b)
    accelerator.backward(loss)
    opt.step()
"""


@pytest.mark.parametrize(("default", "what", "env"), [
    ("tensorboard", "tensorboard tracker (train.py:7) has no switch: it logs in every run", []),
    ("wandb", "wandb tracker off (train.py:7)", ["WANDB_MODE=disabled"]),
])
def test_accelerates_trackers_are_read_from_log_with(tmp_path, default, what, env):
    """`Accelerator(log_with=args.report_to)` names the flag's default tracker and `init_trackers` starts it
    (its row sits there); accelerate refuses "none", so only the tracker's own variable can stop it."""
    _, a, rows = changes(tmp_path, {"train.py": ACCELERATE.replace("{default}", default)})
    row = next(c for c in rows if "tracker" in c.what)
    assert (row.what, row.env) == (what, env)


def test_accelerates_trackers_start_only_where_init_trackers_runs(tmp_path):
    """accelerate's by_feature examples: `if args.with_tracking: accelerator.init_trackers(...)`: off unless the
    switch is given, so nothing is added to the run line for it."""
    job = ACCELERATE.replace("{default}", "tensorboard").replace(
        'accelerator.init_trackers("job")', 'if args.with_tracking:\n    accelerator.init_trackers("job")').replace(
        'p.add_argument("--report_to"',
        'p.add_argument("--with_tracking", action="store_true")\np.add_argument("--report_to"')
    _, a, rows = changes(tmp_path, {"train.py": job})
    assert [(t.name, t.line, t.off_switch) for t in a.trackers] == [("tensorboard", 9, "--with_tracking")]
    assert not any(c.flags or c.env for c in rows if "tracker" in c.what)


SAVE_HOOK = """\
import argparse
from accelerate import Accelerator
p = argparse.ArgumentParser()
p.add_argument("--checkpointing_steps", type=int, default=500)
args = p.parse_args()
def main():
    accelerator = Accelerator()
    def save_model_hook(models, weights, output_dir):
        if accelerator.is_main_process:
            for m in models:
                m.save_pretrained(output_dir)
    accelerator.register_save_state_pre_hook(save_model_hook)
    step = 0
    for b in loader:
        loss = model(b)
        accelerator.backward(loss)
        opt.step()
        step += 1
        if step % args.checkpointing_steps == 0:
            accelerator.save_state("ckpt")
main()
"""


@pytest.mark.parametrize("saves_state", [True, False])
def test_a_save_in_accelerates_save_state_hook_takes_the_save_state_row(tmp_path, saves_state):
    """The hook runs inside `accelerator.save_state()` and only there: `--checkpointing_steps` switches both
    off, and no row says the hook's save runs whenever the job reaches it. Without a save_state, it keeps its row."""
    body = SAVE_HOOK if saves_state else SAVE_HOOK.replace('accelerator.save_state("ckpt")', "pass")
    _, a, rows = changes(tmp_path, {"train.py": body})
    saves = [(c.what, c.flags) for c in rows if "save" in c.what]
    assert saves == ([("save_state off (train.py:20)", ["--checkpointing_steps=1000000000"])] if saves_state else
                     [("save_pretrained (train.py:11) has no switch: it runs whenever the job reaches it", [])])


@pytest.mark.parametrize(("source", "expected"), [
    (ABSL_JOB, ["--max_steps=30", "--eval_every=-1", "--output_dir=$WAMF_OUT"]),
    (CLICK_JOB, ["--max-steps=30", "--eval-every=0", "--out-dir=$WAMF_OUT"]),
])
def test_absl_and_click_jobs_are_cut_and_switched_with_their_own_options(tmp_path, source, expected):
    _, a, rows = changes(tmp_path, {"train.py": source})
    assert [f for c in rows for f in c.flags] == expected


def test_a_save_in_a_later_loop_is_not_after_the_training_loop(tmp_path):
    """A warm-up loop that trains, then the real loop with the final save inside it: that save is in a loop the
    job runs, not once after the one the step was found in."""
    body = ("import torch\nfor w in range(3):\n    loss = model(x)\n    loss.backward()\n    opt.step()\n"
            "for step in range(1000):\n    loss = model(x)\n    loss.backward()\n    opt.step()\n"
            "    if step == 999:\n        torch.save(model, 'final.pt')\n")
    _, a, rows = changes(tmp_path, {"train.py": body})
    assert (a.train_loop.end, a.train_scope.end) == (5, 5)
    save = next(c for c in rows if "train.py:11" in c.what)
    assert save.what == "torch.save (train.py:11) has no switch: it runs when step == 999 holds"


def test_uploads_in_imported_modules_no_switch_reaches_are_one_row(tmp_path):
    """A library's own `upload_folder` and `create_repo` run only if the job calls them: one priced row, never
    'it uploads in every run'; the job's own upload keeps its switch."""
    lib = ("from huggingface_hub import create_repo, upload_folder\ndef push(folder):\n"
           "    create_repo('me/x')\n    upload_folder(folder_path=folder, repo_id='me/x')\n"
           "def end(cfg):\n    if cfg.hub_model_id:\n        upload_folder(folder_path='o', repo_id='me/y')\n")
    body = ("import argparse\nimport torch\nimport mylib\nfrom huggingface_hub import upload_folder\n"
            "p = argparse.ArgumentParser()\np.add_argument('--push_to_hub', action='store_true')\n"
            "args = p.parse_args()\nfor step in range(100):\n    loss = model(x)\n    loss.backward()\n"
            "    opt.step()\nif args.push_to_hub:\n    upload_folder(folder_path='out', repo_id='me/x')\n"
            "mylib.push('o')\nmylib.end(cfg)\n")
    _, a, rows = changes(tmp_path, {"train.py": body, "mylib.py": lib})
    assert sorted((u.file, u.name) for u in a.uploads) == [
        ("mylib.py", "create_repo"), ("mylib.py", "upload_folder"), ("mylib.py", "upload_folder"),
        ("train.py", "upload_folder")]
    uploads = [c for c in rows if "upload" in c.what or "create_repo" in c.what]
    assert [(c.what, c.enabled) for c in uploads] == [
        ("upload_folder off (train.py:13)", True),
        # the job's config decides this one (`if cfg.hub_model_id:`): its own row
        ("upload_folder (mylib.py:7) has no switch: it runs when cfg.hub_model_id holds", False),
        ("2 upload call(s) in imported modules (mylib.py)", False)]
    assert "every run" not in uploads[2].why and uploads[2].exclusion.startswith("2 upload call(s)")


def test_a_setting_two_rows_switch_off_is_given_once(tmp_path):
    """nanoGPT's save sits under its eval (`iter_num > 0` inside `iter_num % eval_interval == 0`): both rows
    switch off through `--eval_interval`, and the run line says it once."""
    from wamf_tui import answers
    from wamf_tui.detect.run import detect_all
    from wamf_tui.session import store as session

    nested = "        losses = estimate_loss()\n        if iter_num > 0:\n            torch.save(model, out_dir)\n"
    guard = "iter_num % eval_interval == 0"
    body = CONFIGURATOR.replace("        losses = estimate_loss()\n", nested).format(guard=guard)
    root = make_repo(tmp_path / "job", {"train.py": body, "configurator.py": "#\n",
                                        "README.md": "```\npython train.py\n```\n"})
    state = session.new_state(root)
    state = state.model_copy(update={"detected": detect_all(root)})
    state, refused = answers.fill(state, {})
    assert refused == []
    on = [f for c in state.changes if c.enabled for f in c.flags]
    assert on.count("--eval_interval=1000000000") == 2  # the eval's row and the save's
    assert state.run.split().count("--eval_interval=1000000000") == 1


TYRO_JOB = """\
import tyro
from titan.config import JobConfig

def main(cfg: JobConfig):
    for step in range(cfg.training.steps):
        loss = model(batch)
        loss.backward()
        opt.step()

if __name__ == "__main__":
    main(tyro.cli(JobConfig))
"""


def test_a_step_flag_the_command_gives_is_taken_where_the_parser_is_not_read(tmp_path):
    """tyro builds the flags from a config class in another package: `--training.steps 500` in the documented
    command is proof the flag exists, and the benchmark sets it instead of capping the job from outside."""
    command = ["--module", "llama3", "--training.steps", "500", "--training.seq_len=2048"]
    root = make_repo(tmp_path / "job", {"train.py": TYRO_JOB})
    a = analyze_script(root / "train.py", root, command)
    assert a.config_system == "tyro"
    cut = propose(a, 30, "speed", command)[0]
    assert (cut.what, cut.how, cut.flags, cut.env) == ("total steps cut to 30 (was 500)", "--training.steps=30",
                                                       ["--training.steps=30"], [])
    parser = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr')\nargs = p.parse_args()\n"
    read = make_repo(tmp_path / "read", {"train.py": parser + TYRO_JOB.split("\n", 2)[2]})
    b = analyze_script(read / "train.py", read, ["--num_steps", "500"])  # argparse, read in full: no such flag
    assert propose(b, 30, "speed", ["--num_steps", "500"])[0].how == "WAMF_MAX_STEPS=30 (wrapper)"


def test_an_optimizer_step_makes_a_training_job_and_a_name_elsewhere_gives_no_total(tmp_path):
    """Megatron's shape: the backward runs in a pipeline schedule past the modules read, the optimizer step in
    the training module; `max_iter = iteration` in an imported module is a local computed from a parameter,
    not a setting: no step total to quote."""
    files = {"train.py": "from pkg.loop import pretrain\nfrom pkg import ckpt\n\nif __name__ == '__main__':\n"
                         "    pretrain(model)\n",
             "pkg/__init__.py": "",
             "pkg/loop.py": "def pretrain(model):\n    while True:\n        out = model(batch)\n"
                            "        optimizer.step()\n",
             "pkg/ckpt.py": "def resume(iteration):\n    max_iter = iteration\n    return max_iter\n"}
    _, a, rows = changes(tmp_path, files)
    assert a.kind == "training" and a.step_controls == []
    assert rows[0].what == "total steps cut to 30" and rows[0].how == "WAMF_MAX_STEPS=30 (wrapper)"


NEGATED = """\
import argparse, torch, wandb
p = argparse.ArgumentParser()
p.add_argument("--no_wandb", action="store_true")
p.add_argument("--resume", default="")
p.add_argument("--distributed", action="store_true")
p.add_argument("--rank", type=int, default=0)
args = p.parse_args()
if not args.no_wandb:
    wandb.init(project="x")
for step in range(1000):
    loss = model(x)
    loss.backward()
    opt.step()
    if not args.resume:
        torch.save(model, "a.pt")
    if not args.distributed or (args.distributed and args.rank % 8 == 0):
        torch.save(model, "b.pt")
"""


def test_a_negated_store_true_is_given_to_switch_off_and_no_flag_of_an_or_is_a_switch(tmp_path):
    """`if not args.no_wandb:` is off with `--no_wandb` given (leaving it out keeps the tracker on);
    `not args.resume` and `not a or b` have no single flag that turns them off; a rank's `% 8 == 0` is no step."""
    root, a, rows = changes(tmp_path, {"train.py": NEGATED})
    wandb = next(c for c in rows if "wandb" in c.what)
    assert (wandb.what, wandb.how, wandb.flags) == ("wandb tracker off (train.py:9)", "--no_wandb given",
                                                    ["--no_wandb"])
    saves = [c for c in rows if "torch.save" in c.what]
    assert [c.what for c in saves] == [
        "torch.save (train.py:15) has no switch: it runs when not args.resume holds",
        "torch.save (train.py:17) has no switch: it runs when not args.distributed or (args.distributed and "
        "args.rank % 8 == 0) holds"]
    assert not any(f.startswith(("--resume", "--distributed", "--rank")) for c in rows for f in c.flags)
    assert check_run("python train.py " + " ".join(f for c in rows for f in c.flags), root, a).problems == []


def test_a_loop_counted_from_past_zero_never_fires_an_interval_at_its_first_step(tmp_path):
    body = ("import torch\nclass T:\n    def train(self):\n        self.first = self.done + 1\n"
            "        for self.it in range(self.first, 1000):\n            loss = model(x)\n"
            "            loss.backward()\n            opt.step()\n"
            "            if self.it % self.every == 0:\n                torch.save(model, 'a.pt')\n"
            "        for k in range(1, 9):\n            if k % 4 == 0:\n                torch.save(model, 'b.pt')\n"
            "        for j in range(0, 9):\n            if j % 4 == 0:\n                torch.save(model, 'c.pt')\n"
            "T().train()\n")
    root, a, rows = changes(tmp_path, {"train.py": body})
    what = {c.what.split(" ")[1].strip("()"): c.what for c in rows if "torch.save" in c.what}
    assert "at step 0" not in what["train.py:10"] and "at step 0" not in what["train.py:13"]
    assert "still runs once, at step 0 (j % 4 == 0 is true at 0)" in what["train.py:16"]


def test_a_step_in_a_function_without_a_loop_has_its_loop_where_it_is_called(tmp_path):
    """The DDP tutorial's idiom: `_run_batch` steps once, `_run_epoch` loops over it, `train` calls that per
    epoch and saves after it: the save comes at each epoch's end, which the wrapper's cap stops first; one
    after the loop of epochs comes once, after training."""
    body = ("import torch\nclass Trainer:\n    def _run_batch(self, b):\n        loss = self.model(b)\n"
            "        loss.backward()\n        self.opt.step()\n    def _run_epoch(self, epoch):\n"
            "        for b in self.data:\n            self._run_batch(b)\n    def train(self, epochs):\n"
            "        for epoch in range(epochs):\n            self._run_epoch(epoch)\n"
            "            if epoch % self.save_every == 0:\n                torch.save(self.model, 'snap.pt')\n"
            "        torch.save(self.model, 'final.pt')\nTrainer().train(10)\n")
    root, a, rows = changes(tmp_path, {"train.py": body})
    assert (a.train_loop.start, a.train_loop.end, a.train_scope.start) == (8, 9, 7)
    saves = [c.what for c in rows if "torch.save" in c.what]
    assert saves == [
        "torch.save off (train.py:14): it runs after each call that trains (line 12, in the loop at line 11: an "
        "epoch), and the step cap stops the job in the first epoch (unless an epoch has under 30 steps)",
        "torch.save off (train.py:15): it runs after training (the call at line 12 that runs the loop returns), "
        "and the step cap stops the job inside it"]


def test_a_save_after_a_library_trainers_train_call_runs_once_after_training(tmp_path):
    """`trainer.train()` runs the library's whole loop: the saves after it in the same function run once, at the
    end; one in another function is no such thing."""
    body = HF_JOB.replace("    trainer.train()\n", "    trainer.save_model('early')\n    trainer.train()\n"
                          "    trainer.save_state()\n    trainer.save_model(training_args.output_dir)\n") \
        + "\ndef later():\n    trainer.save_model('x')\nlater()\n"
    _, a, rows = changes(tmp_path, {"train.py": body})
    line = next(n for n, text in enumerate(body.splitlines(), 1) if text == "    trainer.train()")
    said = {c.what.split(" (")[1].split(")")[0]: c.what for c in rows
            if c.what.startswith(("save_model", "save_state"))}
    after = f"runs once, after training (the call at line {line} that runs the loop returns)"
    assert said[f"train.py:{line + 1}"] == f"save_state (train.py:{line + 1}) {after}"
    assert said[f"train.py:{line + 2}"] == f"save_model (train.py:{line + 2}) {after}"
    assert "after training" not in said[f"train.py:{line - 1}"]  # before the loop
    assert "after training" not in said[f"train.py:{len(body.splitlines()) - 1}"]  # in another function


MICRO = """\
import torch
class Loop:
    def forward_backward(self, batch):
        for i in range(0, len(batch), self.micro):
            loss = self.model(batch[i])
            loss.backward()
    def optimize(self):
        self.opt.step()
    def run_step(self, batch):
        self.forward_backward(batch)
        self.optimize()
    def run_loop(self):
        while True:
            self.run_step(next(self.data))
        torch.save(self.model, "last.pt")
Loop().run_loop()
"""


def test_a_micro_batch_loop_is_not_the_training_loop(tmp_path):
    """improved-diffusion's idiom: the backward sits in a loop over micro-batches, stepped in a sibling method;
    the training loop is the caller's caller's. With no such caller, the micro-batch loop is all there is."""
    _, a, rows = changes(tmp_path, {"train.py": MICRO})
    assert (a.train_loop.start, a.train_loop.end, a.train_scope.start) == (13, 14, 12)
    save = next(c for c in rows if "torch.save" in c.what)
    assert save.what.startswith("torch.save off (train.py:15): it runs after the training loop (ends at line 14)")
    alone = MICRO.replace("            self.run_step(next(self.data))\n", "            pass\n")
    _, a, _ = changes(tmp_path / "alone", {"train.py": alone})
    assert (a.train_loop.start, a.train_loop.end) == (4, 6)


@pytest.mark.parametrize("own_flag", [True, False])
def test_a_save_at_each_epochs_end_comes_after_the_loop_over_batches(tmp_path, own_flag):
    """dcgan's idiom: the step in a loop over batches inside a loop over epochs, the save after the inner
    loop: it runs at each epoch's end, which the wrapper's cap (inside the first epoch) never reaches."""
    body = ("for epoch in range(args.max_steps if 0 else 25):\n    for i, data in enumerate(loader):\n"
            "        loss = model(data)\n        loss.backward()\n        opt.step()\n"
            "        if i % 100 == 0:\n            save_image(data, 'x.png')\n"
            "    torch.save(model.state_dict(), 'epoch.pt')\n")
    head = STEPS_FLAG if own_flag else "import torch\n"
    _, a, rows = changes(tmp_path, {"train.py": head + body})
    line, inner_end = head.count("\n") + 8, head.count("\n") + 7
    assert (a.train_inner.start, a.train_inner.end) == (line - 6, inner_end)
    save = next(c for c in rows if "torch.save" in c.what)
    after = f"after each pass of the loop that holds the step (an epoch; it ends at line {inner_end})"
    if own_flag:
        assert save.what == f"torch.save (train.py:{line}) runs {after}"
    else:
        assert save.what == f"torch.save off (train.py:{line}): it runs {after}, and the step cap stops the job " \
                            "in the first epoch (unless an epoch has under 30 steps)"
        assert save.exclusion.startswith(f"checkpoint at train.py:{line} excluded: it runs {after}, which the wrapper")


EPOCHS = """\
import argparse, torch
p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=10)
p.add_argument("--max_steps", type=int, default=0)
p.add_argument("--eval_strategy", default="epoch")
args = p.parse_args()
def train(epoch):
    for b in loader:
        loss = model(b)
        loss.backward()
        opt.step()
def test(split):
    print(split)
for epoch in range(1, args.epochs + 1):
    train(epoch)
    if args.eval_strategy != "no":
        test("val")
test("test")
"""


@pytest.mark.parametrize(("args", "rows"), [
    (None, ["eval test (train.py:17) out of the timed steps: it runs after each call that trains (line 15, in the loop "
          "at line 14: an epoch), and the step cap stops the job in the first epoch (unless an epoch has under 30 "
          "steps)"]),
    (("--max_steps", "300"), ["eval test (train.py:17) runs after each call that trains (line 15, in the loop at line "
                              "14: an epoch)"]),
    (("--max_steps", "300", "--eval_strategy=no"), ["eval test (train.py:17) out of the timed steps"]),
])
def test_an_eval_after_each_call_that_trains_runs_at_each_epochs_end_unless_the_run_line_makes_its_guard_false(
        tmp_path, args, rows):
    """mnist's idiom: `train(epoch)` then `test()` in the loop of epochs. Under the wrapper's cap the job never
    gets there; with the job's own step flag it runs at each epoch's end, unless the run line's own value
    makes its guard false (`!= "no"` with `--eval_strategy=no`). The eval after the loop keeps the first
    one's row (one row a name)."""
    flag = 'p.add_argument("--max_steps", type=int, default=0)'
    job = EPOCHS if args is not None else EPOCHS.replace(flag, "# no step flag")
    args = args or ()
    root = make_repo(tmp_path / "job", {"train.py": job})
    a = analyze_script(root / "train.py", root, list(args))
    got = [c.what for c in propose(a, 30, args=args) if c.what.startswith("eval")]
    assert got == rows


OUTPUTS = """\
import argparse, torch
from tools import profile
p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=1000)
p.add_argument("--use-dist-ckpt", action="store_true")
p.add_argument("--server-logging", action=argparse.BooleanOptionalAction, default=False)
p.add_argument("--logits-save-dir", default=None)
p.add_argument("--save", default=None)
args = p.parse_args()
for step in range(args.steps):
    loss = model(x)
    loss.backward()
    opt.step()
    if args.save and step % 100 == 0:
        torch.save(model, args.save)
"""
PROFILER = "import argparse\ndef main():\n    p = argparse.ArgumentParser()\n    p.add_argument('--output')\n" \
           "    p.parse_args()\nif __name__ == '__main__':\n    main()\n"


@pytest.mark.parametrize("own", [False, True])
def test_the_output_folder_is_never_a_switch_an_artifact_a_saves_own_setting_or_another_tools(tmp_path, own):
    """A boolean named like a folder (`--use-dist-ckpt`), one artifact's folder (`--logits-save-dir`: given, it
    writes logits), the folder a save needs set (`--save`: given, it saves) and another tool's parser in a
    module the job imports (a profiler's `--output`) are never given the benchmark folder; the job's own
    `--output_dir` is. (A module read only as text says "main", so the profiler's `main()` may be reached.)"""
    body = OUTPUTS.replace('p.add_argument("--steps"', 'p.add_argument("--output_dir", default="out")\n'
                           'p.add_argument("--steps"') if own else OUTPUTS
    deep = {"tools/a.py": "from tools import b\n", "tools/b.py": "from tools import c\n",
            "tools/c.py": "# runs in the main thread\n"}
    body = body.replace("from tools import profile", "from tools import profile, a")
    _, a, rows = changes(tmp_path, {"train.py": body, "tools/__init__.py": "", "tools/profile.py": PROFILER, **deep})
    out = [c.flags for c in rows if c.what == "all outputs into one folder"]
    assert out == ([["--output_dir=$WAMF_OUT"]] if own else [])
    save = next(c for c in rows if "torch.save" in c.what)
    assert save.how == "--save left out (default None)"


TYRO_METRICS = """\
import tyro
from dataclasses import dataclass, field
from torch.utils.tensorboard import SummaryWriter

@dataclass
class Metrics:
    log_freq: int = 10
    enable_tensorboard: bool = False

@dataclass
class Profiling:
    enable_profiling: bool = False

@dataclass
class Job:
    metrics: Metrics = field(default_factory=Metrics)
    profiling: Profiling = field(default_factory=Profiling)
    steps: int = 1000

def loggers(config):
    if config.enable_tensorboard:
        return SummaryWriter("tb")

def main(cfg: Job):
    tb = loggers(cfg.metrics)
    for step in range(cfg.steps):
        loss = model(batch)
        loss.backward()
        opt.step()

if __name__ == "__main__":
    main(tyro.cli(Job))
"""


@pytest.mark.parametrize(("command", "twice", "how"), [
    (["--metrics.log-freq", "10"], False, "--metrics.no-enable-tensorboard given"),
    ([], False, "--metrics.no-enable-tensorboard given"),  # `metrics: Metrics` is the one section of that class
    ([], True, None),  # two sections of that class, and the command sets neither: unknown which
    (["--metrics.log_freq=10"], True, "--metrics.no-enable-tensorboard given"),
])
def test_a_tyro_jobs_bool_under_a_nested_config_is_switched_off_by_its_negation(tmp_path, command, twice, how):
    """torchtitan's idiom: `if config.enable_tensorboard:` on the metrics config, which a config function may
    set true; tyro's `--metrics.no-enable-tensorboard` turns it off whatever that function set. The section is
    the field whose type is the class that holds the bool; of two, the one the command sets a field of."""
    body = TYRO_METRICS.replace("    steps: int", "    eval_metrics: Metrics = field(default_factory=Metrics)\n"
                                "    steps: int") if twice else TYRO_METRICS
    root = make_repo(tmp_path / "job", {"train.py": body})
    a = analyze_script(root / "train.py", root, command)
    row = next(c for c in propose(a, 30, "speed", command) if c.what.startswith("tensorboard"))
    assert (row.how, row.flags) == ((how, ["--metrics.no-enable-tensorboard"]) if how else (row.how, []))
    assert row.what.startswith("tensorboard tracker off" if how else "tensorboard tracker (train.py:")


TYRO_TRAINER = {"job/__init__.py": "", "job/configs.py": """\
from dataclasses import dataclass

@dataclass
class TrainingConfig:
    steps: int = 10000
    lr: float = 3e-4

@dataclass
class ValidationConfig:
    steps: int = -1

@dataclass
class DebugConfig:
    seed: int | None = None
""", "job/trainer.py": """\
from dataclasses import dataclass, field
import torch
from job.configs import DebugConfig, TrainingConfig, ValidationConfig

class Trainer:
    @dataclass
    class Config:
        training: TrainingConfig = field(default_factory=TrainingConfig)
        validation: ValidationConfig = field(default_factory=ValidationConfig)
        debug: DebugConfig = field(default_factory=DebugConfig)

    def __init__(self, config):
        self.config = config
        self.step = 0

    def should_continue(self):
        return self.step < self.config.training.steps

    def train(self):
        while self.should_continue():
            self.step += 1
            loss = self.model(self.batch)
            loss.backward()
            self.optimizer.step()
""", "job/train.py": """\
import tyro
from job.trainer import Trainer

if __name__ == "__main__":
    Trainer(tyro.cli(Trainer.Config)).train()
"""}


def test_a_tyro_jobs_step_flag_is_the_section_the_loop_compares_with(tmp_path):
    """torchtitan: `self.step < self.config.training.steps`, where `training` is a field of the job's config typed
    `TrainingConfig`, which has `steps`: the step flag is `--training.steps`, with no default claimed (the job's
    config function sets it), though the command names no section. The one section with a `seed` field pins the
    seed (`--debug.seed=0`): the run line needs no wrapper."""
    root = make_repo(tmp_path / "r", TYRO_TRAINER)
    a = analyze_script(root / "job/train.py", root, ["--module", "llama3"])
    assert (a.step_controls[0].name, a.step_controls[0].default) == ("--training.steps", None)
    rows = propose(a, 30, "speed", [])
    assert (rows[0].what, rows[0].flags) == ("total steps cut to 30", ["--training.steps=30"])
    assert [(c.what, c.flags, c.env) for c in rows if "seed" in c.what] == [
        ("seeds pinned", ["--debug.seed=0"], [])]


def test_a_tyro_jobs_output_folder_is_its_root_configs_field(tmp_path):
    """torchtitan: `dump_folder: str = "./outputs"` on the root config (the class with sections, none itself):
    `--dump-folder` points at the benchmark folder; a section's own folder (`debug.trace_dir`) is not the job's."""
    files = dict(TYRO_TRAINER)
    files["job/trainer.py"] = files["job/trainer.py"].replace(
        "        debug: DebugConfig = field(default_factory=DebugConfig)\n",
        "        debug: DebugConfig = field(default_factory=DebugConfig)\n        dump_folder: str = \"./outputs\"\n")
    files["job/configs.py"] += "    trace_dir: str = 'traces'\n"
    root = make_repo(tmp_path / "r", files)
    a = analyze_script(root / "job/train.py", root, ["--module", "llama3"])
    rows = propose(a, 30, "speed", [])
    assert [c.flags for c in rows if c.what == "all outputs into one folder"] == [["--dump-folder=$WAMF_OUT"]]


def test_a_guard_the_trainers_own_switch_makes_false_is_off(tmp_path):
    """The DPO job's `if training_args.eval_strategy != "no": trainer.evaluate()` after training: the run line's
    `--eval_strategy no`, the Trainer table's own switch, makes it false; with another value it would run."""
    body = HF_JOB.replace("    if training_args.do_eval:\n", '    if training_args.eval_strategy != "no":\n')
    _, a, rows = changes(tmp_path, {"train.py": body})
    row = next(c for c in rows if c.what.startswith("eval evaluate"))
    assert (row.what, row.how) == ("eval evaluate (train.py:20) out of the timed steps", "--eval_strategy no in "
                                   "the run line")


def test_a_store_true_named_like_a_folder_is_never_given_the_benchmark_folder(tmp_path):
    """`--save` as a switch (`action="store_true"`): `--save=$WAMF_OUT` would stop argparse."""
    body = ("import argparse, torch\np = argparse.ArgumentParser()\np.add_argument('--save', action='store_true')\n"
            "args = p.parse_args()\nfor b in data:\n    loss = model(b)\n    loss.backward()\n    opt.step()\n")
    _, a, rows = changes(tmp_path, {"train.py": body})
    assert a.flags["--save"] == "False"
    assert not any(c.what == "all outputs into one folder" for c in rows)


NANOCHAT = """\
import argparse
import torch
from utils import set_random_seed
p = argparse.ArgumentParser()
p.add_argument("--num-iterations", type=int, default=-1)
p.add_argument("--eval-every", type=int, default=250, help="evaluate every N steps (-1 = disable)")
p.add_argument("--device-type", type=str, default="")
p.add_argument("--seed", type=int, default=1234)
args = p.parse_args()
if args.device_type == "cuda":
    torch.cuda.manual_seed(42)
{seed}
for step in range(args.num_iterations + 1):
    last_step = step == args.num_iterations
    if args.eval_every > 0 and (last_step or step % args.eval_every == 0):
        evaluate_bpb(model)
    loss = model(x)
    loss.backward()
    opt.step()
"""


@pytest.mark.parametrize(("seed", "how"), [("set_random_seed(args.seed)", "--seed=0"),
                                           ("", "WAMF_SEED=0 (wrapper seeds python, numpy, torch)"),
                                           ("torch.manual_seed(42)", "the job's own fixed seed (train.py:12)")])
def test_a_guard_the_off_value_makes_false_runs_not_even_at_the_last_step(tmp_path, seed, how):
    """nanochat: `if args.eval_every > 0 and (last_step or ...)`, with `--eval-every=-1` (its help's off value):
    the eval never runs, not even at the last step. A seed under `if args.device_type == "cuda":` is not
    switched by `--device-type`; DeepSpeed-Chat's `set_random_seed(args.seed)` is the seed's flag; nanochat's own
    `torch.manual_seed(42)`, run whatever the flags, needs no pinning (and no wrapper)."""
    _, a, rows = changes(tmp_path, {"train.py": NANOCHAT.replace("{seed}", seed), "utils.py": ""})
    by = {c.what: c.how for c in rows}
    assert by["eval evaluate_bpb (train.py:16) out of the timed steps"] == \
        "--eval-every=-1 (its help: -1 switches it off)"
    assert by["seeds pinned"] == how


def test_a_privileged_launcher_port_from_a_docs_example_is_left_out(tmp_path):
    """`--master_port 1` (a docstring's example) binds only as root: the run line leaves it to the launcher's
    own default and says so; a port of 1024 or more is the user's choice and stays."""
    from wamf_tui.detect.launch import parse_launch
    from wamf_tui.model import InitState
    from wamf_tui.propose.run_line import entry_fixes, run_command

    root, a, _ = changes(tmp_path, {"train.py": HF_JOB})
    for port, kept in (("--master_port 1", False), ("--master-port=80", False), ("--master_port 29600", True)):
        launch = parse_launch(f"python -m torch.distributed.run --nproc_per_node 2 {port} train.py --data_path d",
                              exists={"train.py"}.__contains__)
        state = InitState(repo_path=str(root), contract_path=str(root / "contract.md"), script="train.py",
                          launch=launch, analysis=a)
        assert (port in run_command(state)) is kept
        assert bool(entry_fixes(state)) is not kept


def test_an_option_whose_help_says_it_saves_there_and_whose_default_is_a_path_is_an_output_folder(tmp_path):
    """yolov5's `--project` (default `ROOT / "runs/train"`, help "save to project/name") and open_clip's `--logs`
    ("Where to store tensorboard logs", default ./logs/) are where it writes;
    `--name` (default "exp", the same help) is a run name, and a tracker's project no folder at all."""
    body = ("import argparse\nfrom pathlib import Path\nROOT = Path(__file__).parent\np = argparse.ArgumentParser()\n"
            "p.add_argument('--project', default=ROOT / 'runs/train', help='save to project/name')\n"
            "p.add_argument('--name', default='exp', help='save to project/name')\n"
            "p.add_argument('--wandb_project', default='yolo', help='W&B project to log to')\n"
            "p.add_argument('--logs', default='./logs/', help='Where to store tensorboard logs.')\n"
            "opt = p.parse_args()\nimport torch\nfor step in range(10):\n    loss = model(x)\n    loss.backward()\n"
            "    opt_.step()\n")
    _, a, rows = changes(tmp_path, {"train.py": body})
    assert [o.name for o in a.output_dirs] == ["--project", "--logs"]  # open_clip's: "Where to store" logs
    assert any("--project=$WAMF_OUT" in c.flags and "--logs=$WAMF_OUT" in c.flags for c in rows)


def test_every_output_folder_in_the_checkout_goes_to_the_benchmark_folder(tmp_path):
    """mae: `--output_dir ./output_dir` and `--log_dir ./output_dir` (TensorBoard): both are routed; a folder left
    at None means "not written" and stays unset."""
    body = ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--output_dir', default='./output_dir')\n"
            "p.add_argument('--log_dir', default='./output_dir')\np.add_argument('--ckpt_dir', default=None)\n"
            "args = p.parse_args()\nimport torch\nfor step in range(10):\n    loss = model(x)\n    loss.backward()\n"
            "    opt.step()\n")
    _, a, rows = changes(tmp_path, {"train.py": body})
    folder = next(c for c in rows if c.what == "all outputs into one folder")
    assert folder.flags == ["--output_dir=$WAMF_OUT", "--log_dir=$WAMF_OUT"]


def test_an_input_whose_default_is_a_folder_this_machine_lacks_is_required(tmp_path):
    """mae's `--data_path /datasets01/imagenet_full_size/061417/`: the authors' cluster; the user gives theirs.
    A relative default (downloaded by the job) or an absolute one that is here is no such input."""
    here = tmp_path / "imagenet"
    here.mkdir()
    body = ("import argparse\np = argparse.ArgumentParser()\n"
            "p.add_argument('--data_path', default='/datasets01/imagenet_full_size/061417/')\n"
            f"p.add_argument('--val_path', default='{here}')\np.add_argument('--data_dir', default='data/mnist')\n"
            "args = p.parse_args()\n")
    root, a, _ = changes(tmp_path, {"train.py": body})
    assert [(r.name, r.kind, r.line) for r in a.required] == [("--data_path", "option", 3)]
    assert check_run("python train.py", root, a).problems == ["train.py requires --data_path"]
    assert check_run("python train.py --data_path /d", root, a).problems == []


ROLLOUTS = """\
import argparse

import torch

p = argparse.ArgumentParser()
p.add_argument("--num-steps", type=int, default=2048)  # the rollout's length, not the run's
p.add_argument("--total-timesteps", type=int, default=1000000)
p.add_argument("--num-iterations", type=int, default=0)

if __name__ == "__main__":
    args = p.parse_args()
    args.num_iterations = args.total_timesteps // args.num_steps
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.Adam(model.parameters())
    for iteration in range(1, args.num_iterations + 1):
        for step in range(args.num_steps):
            obs = torch.ones(2)
        loss = model(obs).sum()
        loss.backward()
        opt.step()
"""


def test_the_cap_is_the_setting_the_loop_reads_and_none_the_job_computes_itself(tmp_path):
    """cleanrl's PPO: `--num-steps` is named like a step count but sizes a rollout; the loop reads
    `num_iterations`, which the job computes from the total, so no flag caps it: the wrapper does."""
    root, a, rows = changes(tmp_path, {"train.py": ROLLOUTS})
    assert a.loop_reads == ["num_iterations"] and "num_iterations" in a.computed
    assert rows[0].env == ["WAMF_MAX_STEPS=30"]
    assert not any(f in ("--num-steps", "--num-iterations") for c in rows for f in c.flags)
    given = ROLLOUTS.replace("    args.num_iterations = args.total_timesteps // args.num_steps\n", "")
    root, a, rows = changes(tmp_path / "given", {"train.py": given})  # a flag the loop reads and the job keeps
    assert rows[0].flags == ["--num-iterations=30"]


SAMPLES = """\
import argparse

import torch

p = argparse.ArgumentParser()
p.add_argument("--sample_every", type=int, default=2000)
p.add_argument("--steps", type=int, default=10000)
args = p.parse_args()
model = torch.nn.Linear(2, 2)
opt = torch.optim.Adam(model.parameters())
for step in range(args.steps):
    loss = model(torch.ones(2)).sum()
    loss.backward()
    opt.step()
    if step % args.sample_every == 0:
        engine.generate_batch(tokens, max_tokens=16)
"""


def test_samples_drawn_every_n_steps_are_an_eval_switched_off_by_their_interval(tmp_path):
    """nanochat: `engine.generate_batch(...)` under `step % sample_every == 0` runs at step 0 and costs like an
    eval; a `generate` with no interval around it (an inference job's forward) is not one."""
    root, a, rows = changes(tmp_path, {"train.py": SAMPLES})
    assert [(e.name, e.off_switch) for e in a.evals] == [("generate_batch", "--sample_every")]
    root, a, rows = changes(tmp_path / "plain", {"train.py": SAMPLES.replace(
        "    if step % args.sample_every == 0:\n        engine", "    engine")})
    assert a.evals == []


SEEDED_IF = """\
import argparse, torch
p = argparse.ArgumentParser()
p.add_argument("--seed", type=int, default=-1)
args = p.parse_args()


def set_random_seed(seed):
    if {test}:
        torch.manual_seed(seed)


set_random_seed(args.seed)
for step in range(100):
    loss = model(x)
    loss.backward()
    opt.step()
"""


@pytest.mark.parametrize(("test", "flag"), [
    ("seed > 0", "--seed=1"), ("seed >= 1 and torch.cuda.is_available()", "--seed=1"), ("seed", "--seed=1"),
    ("seed >= 0", "--seed=0"), ("seed != -1", "--seed=0")])
def test_a_seed_that_its_guard_leaves_unseeded_at_0_is_pinned_at_1(tmp_path, test, flag):
    """OpenNMT's `set_random_seed`: `if seed > 0:` seeds nothing for 0 (its default -1 means no seed): the run
    line pins the seed at a value the guard takes."""
    _, _, rows = changes(tmp_path, {"train.py": SEEDED_IF.replace("{test}", test)})
    assert next(c for c in rows if c.what == "seeds pinned").flags == [flag]


def test_a_seed_helpers_guard_in_another_module_decides_the_value(tmp_path):
    """OpenNMT-py: the entry calls `set_random_seed(opt.seed)` unguarded; the helper, in another module, seeds
    torch only under `if seed > 0:`: the seed flag is pinned at 1, not 0."""
    helper = "import torch\n\n\ndef set_random_seed(seed):\n    if seed > 0:\n        torch.manual_seed(seed)\n"
    entry = SEEDED_IF.replace("def set_random_seed(seed):\n    if {test}:\n        torch.manual_seed(seed)\n\n\n", "")
    entry = entry.replace("import argparse, torch\n", "import argparse, torch\nfrom utils import set_random_seed\n")
    _, _, rows = changes(tmp_path, {"train.py": entry, "utils.py": helper})
    assert next(c for c in rows if c.what == "seeds pinned").flags == ["--seed=1"]


MLFLOW_JOB = """\
import argparse, mlflow, torch
p = argparse.ArgumentParser()
p.add_argument("--output_dir", default="out")
p.add_argument("--steps", type=int, default=1000)
args = p.parse_args()
mlflow.start_run()
for step in range(args.steps):
    loss = model(x)
    loss.backward()
    opt.step()
"""


def test_outputs_go_beside_the_checkout_and_the_run_line_names_the_folder_itself(tmp_path):
    """The table routes outputs to `$WAMF_OUT`; the run line writes the folder itself, outside the checkout,
    in every word that names it: `WAMF_OUT=... MLFLOW_TRACKING_URI=file:$WAMF_OUT/mlruns` as one shell
    word would be quoted whole, no assignment at all."""
    import shlex

    from wamf_tui.detect.launch import parse_launch
    from wamf_tui.model import InitState
    from wamf_tui.propose.run_line import run_command

    root, a, rows = changes(tmp_path, {"train.py": MLFLOW_JOB})
    assert ["--output_dir=$WAMF_OUT"] in [c.flags for c in rows]
    launch = parse_launch("python train.py", exists={"train.py"}.__contains__)
    state = InitState(repo_path=str(root), contract_path=str(root / "contract.md"), script="train.py",
                      launch=launch, analysis=a, changes=rows)
    words = shlex.split(run_command(state))
    out = f"{root}.wamf-bench"
    assert f"--output_dir={out}" in words and f"WAMF_OUT={out}" in words
    assert f"MLFLOW_TRACKING_URI=file:{out}/mlruns" in words and not any("$" in w for w in words)
    assert not out.startswith(f"{root}/")


PLAIN_LIGHTNING = """\
import pytorch_lightning as pl
import torch

model = Net()
trainer = pl.Trainer(gpus=1, precision=32{more})
trainer.fit(model, loader)
"""


def test_a_lightning_trainer_built_in_code_keeps_the_logger_and_checkpoints_it_is_not_given(tmp_path):
    """ControlNet's `pl.Trainer(gpus=1, precision=32, callbacks=[logger])`: Lightning's default logger and
    epoch-end ModelCheckpoint, both in lightning_logs/ of the folder it runs in, are facts of the job; a
    Trainer given `logger=False, enable_checkpointing=False, default_root_dir=...` (or `**kwargs`) has none."""
    _, a, rows = changes(tmp_path / "a", {"train.py": PLAIN_LIGHTNING.format(more="")})
    line = PLAIN_LIGHTNING.splitlines().index("trainer = pl.Trainer(gpus=1, precision=32{more})") + 1
    assert [(t.name, t.line) for t in a.trackers] == [("Lightning's default logger (lightning_logs/)", line)]
    assert [(c.name, c.line) for c in a.checkpoints] == [("Lightning's default ModelCheckpoint (each epoch's end)",
                                                          line)]
    assert "'lightning_logs'" in {o.name for o in a.output_dirs}
    save = next(c for c in rows if c.kind == "save")  # at an epoch's end, past the wrapper's cap
    assert (save.off, save.sites, save.how) == (True, [f"train.py:{line}"], "WAMF_MAX_STEPS (wrapper)")
    for more in (", logger=False, enable_checkpointing=False, default_root_dir='/tmp/x'", ", **kwargs"):
        _, a, _ = changes(tmp_path / str(len(more)), {"train.py": PLAIN_LIGHTNING.format(more=more)})
        assert not a.trackers and not [c for c in a.checkpoints if c.name.startswith("Lightning's")]
        assert "'lightning_logs'" not in {o.name for o in a.output_dirs}


@pytest.mark.parametrize("pin", ["transformers==4.2.1", "transformers>=4.0,<4.3", "transformers[torch] <= 4.2.1"])
def test_an_hf_job_pinned_to_an_old_transformers_gets_that_releases_flags(tmp_path, pin):
    """SimCSE pins transformers 4.2.1: no `--report_to`, `--save_strategy` or `--eval_strategy` yet, and bools
    are bare switches (`--do_eval False` is an unused word its parser refuses). The run line turns wandb off by
    its variable, puts saves past the cap, keeps TensorBoard's folder out of the checkout and drops the docs'
    `--do_eval` instead of saying False."""
    from wamf_tui.detect.launch import parse_launch
    from wamf_tui.model import InitState
    from wamf_tui.propose.run_line import run_command

    root, a, _ = changes(tmp_path, {"train.py": HF_JOB, "requirements.txt": f"torch\n{pin}\n"})
    assert "--report_to" not in a.flags and "--save_strategy" not in a.flags and "--eval_strategy" not in a.flags
    assert a.flags["--fp16"] == "False" and "--no_remove_unused_columns" in a.flags
    launch = parse_launch("python train.py --data_path d.json --fp16 --evaluation_strategy steps --do_eval",
                          exists={"train.py"}.__contains__)
    state = InitState(repo_path=str(root), contract_path=str(root / "contract.md"), script="train.py",
                      launch=launch, analysis=a)
    state = state.model_copy(update={"changes": propose(a, 30, "speed", launch.args)})
    words = run_command(state).split()
    assert words[:2] == ["CUDA_VISIBLE_DEVICES=0", "WANDB_DISABLED=true"]  # one process: one GPU (no DataParallel)
    assert "--do_eval" not in words and "--fp16" in words
    assert {"--max_steps=30", "--save_steps=1000000000", f"--output_dir={root}.wamf-bench"} <= set(words)
    assert words[words.index("--evaluation_strategy") + 1] == "no"
    assert any(w.startswith("--logging_dir=") and w.split("=", 1)[1].startswith(f"{root}.wamf-bench") for w in words)
    assert check_run(run_command(state), root, a).problems == []
    modern = check_run("python train.py --data_path d --report_to none --do_eval False", root, a)
    assert any(w.startswith("--report_to is not a field") for w in modern.warnings)


def test_an_hf_job_pinned_to_a_recent_transformers_keeps_todays_switches(tmp_path):
    root, a, rows = changes(tmp_path, {"train.py": HF_JOB, "requirements.txt": "transformers==4.40.2\n"})
    assert "--report_to" in a.flags and "--evaluation_strategy" in a.flags and "--eval_strategy" not in a.flags
    flags = [w for c in rows for w in c.flags]
    assert {"--report_to", "--save_strategy", "--evaluation_strategy"} <= {w.split("=")[0] for w in flags}
    assert "--do_eval" in flags and "False" in flags


def test_the_transformers_installed_in_the_jobs_environment_wins_over_the_repos_pin(tmp_path):
    """The run imports what its environment holds: a repo pinned to 4.2.1 in an environment of 4.40.2 gets
    4.40's flags, read the same in the app's reading child; another activate line than the one detected is
    another environment, whose versions are unread."""
    from wamf_tui.detect.environment import installed
    from wamf_tui.model import EnvFacts, PackageVersion
    from wamf_tui.read.isolated import analyze_in_child

    env = EnvFacts(kind="venv", activate="source .venv/bin/activate", python="/x/bin/python",
                   packages=[PackageVersion(name="transformers", version="4.40.2")])
    assert installed(env, "source .venv/bin/activate") == {"transformers": "4.40.2"}
    assert installed(env, "conda activate other") == {}
    root = make_repo(tmp_path, {"train.py": HF_JOB, "requirements.txt": "transformers==4.2.1\n"})
    old = analyze_script(root / "train.py", root)
    assert "--report_to" not in old.flags
    for a in (analyze_script(root / "train.py", root, installed={"transformers": "4.40.2"}),
              analyze_in_child(root / "train.py", root, installed={"transformers": "4.40.2"})):
        assert "--report_to" in a.flags and "--evaluation_strategy" in a.flags and "--eval_strategy" not in a.flags


def test_an_eval_whose_interval_the_code_computes_may_run_in_the_timed_steps(tmp_path):
    """OpenRLHF's `if step % self.strategy.accumulated_gradient == 0:` around its eval: a number the reading
    cannot see is never said to be past the cap; the row says it may run, and the trial may see it."""
    body = ("        global_step += 1\n        if global_step % (len(loader) // 4) == 0:\n"
            "            evaluate(model, val_loader)")
    root, a, rows = changes(tmp_path, {"train.py": COUNTED.format(body=body)})
    row = next(c for c in rows if c.kind == "eval")
    assert not row.off and row.how == "no switch read", row
    assert "runs every (len(loader) // 4) steps, a number not read" in row.what
    assert row.exclusion is not None and "so it may be timed" in row.exclusion


def test_a_trl_trainer_reports_its_use_to_the_hub_unless_telemetry_is_off(tmp_path):
    """TRL's trainers send a usage report to the Hub as each is built: an upload the run line switches off by
    huggingface_hub's own variable (never HF_HUB_OFFLINE, which would stop the model's download too)."""
    body = ("from trl import SFTConfig, SFTTrainer\nargs = SFTConfig(output_dir='out')\n"
            "trainer = SFTTrainer(model=model, args=args)\ntrainer.train()\n")
    root, a, rows = changes(tmp_path, {"train.py": body})
    row = next(c for c in rows if c.kind == "upload")
    assert (row.env, row.off, row.enabled, row.sites) == (["HF_HUB_DISABLE_TELEMETRY=1"], True, True, ["train.py:3"])
    plain = body.replace("from trl import SFTConfig, SFTTrainer", "from transformers import Trainer as SFTTrainer, "
                         "TrainingArguments as SFTConfig")
    root, a, rows = changes(tmp_path / "plain", {"train.py": plain})
    assert not [c for c in rows if c.kind == "upload"]


BREAKS = """\
import argparse
import torch

p = argparse.ArgumentParser()
p.add_argument("--max_steps", type=int, default=None)
p.add_argument("--max_tokens", type=int, default=3000000000000)
p.add_argument("--micro_batch_size", type=int, default=4)
args = p.parse_args()


def fit(loader):
    tokens_per_device = args.max_tokens // world_size
    max_iters = tokens_per_device // (args.micro_batch_size * 2048)
    iter_num = 0
    for batch in loader:
        if iter_num >= max_iters:
            break
        loss = model(batch).sum()
        loss.backward()
        optimizer.step()
        iter_num += 1


fit(loader)
"""


@pytest.mark.parametrize(("bound", "capped_by"), [("tokens_per_device // (args.micro_batch_size * 2048)", "wrapper"),
                                                  ("args.max_steps", "--max_steps=30")])
def test_a_loop_that_breaks_on_a_bound_it_computes_is_capped_by_the_wrapper(tmp_path, bound, capped_by):
    """litgpt's pretrain: `if iter_num >= max_iters: break`, `max_iters` computed from `--train.max_tokens`;
    its `--train.max_steps` only warns. No step flag stops that loop: the wrapper caps it. A bound computed from
    the step flag itself is capped by that flag."""
    body = BREAKS.replace("tokens_per_device // (args.micro_batch_size * 2048)", bound)
    root, a, rows = changes(tmp_path, {"train.py": body})
    assert a.loop_bound_local == "max_iters"
    assert (rows[0].env == ["WAMF_MAX_STEPS=30"]) is (capped_by == "wrapper")
    assert ("--max_steps=30" in rows[0].flags) is (capped_by != "wrapper")
