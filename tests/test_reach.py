"""Only what the job reaches: saves, evals and uploads in functions nothing on the job's path calls are
left out; anything that may be called (from code read as text only, by a framework, from a module that
does not parse) is kept. Each case is a small repo written here, read by the real analyzer."""

from __future__ import annotations

import textwrap
from pathlib import Path

from wamf_tui.propose.benchmark import propose
from wamf_tui.read.analyze import analyze_script

TRAIN = """\
import torch
from pkg import util

def train(model, loader, optimizer):
    for step, batch in enumerate(loader):
        loss = model(batch)
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            util.save_ckpt(model)

if __name__ == "__main__":
    train(model, loader, optimizer)
"""

UTIL = """\
import torch

def save_ckpt(model):
    torch.save(model.state_dict(), "ckpt.pt")

def export_all(model):
    torch.save(model, "all.pt")

def prepare():
    torch.save([], "data.pt")

if __name__ == "__main__":
    prepare()
    torch.save([], "main.pt")
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def saves(root: Path, entry: str = "train.py") -> list[str]:
    a = analyze_script(root / entry, root)
    return sorted(f"{f.file}:{f.line}" for f in a.checkpoints)


def test_a_function_nothing_calls_and_an_imported_modules_main_block_are_left_out(tmp_path):
    root = write(tmp_path, {"train.py": TRAIN, "pkg/__init__.py": "", "pkg/util.py": UTIL})
    # not export_all (never called), not its __main__ block's saves; save_ckpt's, where the entry calls it
    assert saves(root) == ["train.py:10"]


def test_the_rows_and_the_imported_modules_row_count_only_what_is_reached(tmp_path):
    root = write(tmp_path, {"train.py": TRAIN, "pkg/__init__.py": "", "pkg/util.py": UTIL})
    a = analyze_script(root / "train.py", root)
    rows = [c.what for c in propose(a, 30)]
    assert "save_ckpt (train.py:10) still runs once, at step 0 (step % 100 == 0 is true at 0)" in rows
    assert not any("save call(s) in imported modules" in r for r in rows)


def test_a_module_calling_its_own_function_does_not_reach_anothers_of_the_same_name(tmp_path):
    entry = TRAIN.replace("util.save_ckpt(model)", "export_all(model)") + \
        "\ndef export_all(model):\n    print('mine')\n"
    root = write(tmp_path, {"train.py": entry, "pkg/__init__.py": "", "pkg/util.py": UTIL})
    assert saves(root) == []
    imported = entry.replace("from pkg import util", "from pkg.util import export_all").replace(
        "\ndef export_all(model):\n    print('mine')\n", "")
    write(tmp_path, {"train.py": imported})
    assert saves(root) == ["train.py:10"]  # the bare name now means the imported function: its save, at the call


def test_a_save_inside_the_jobs_own_save_call_is_that_saves_row(tmp_path):
    """`ckpt.save_checkpoint(model)` in the loop writes through the checkpointer's `torch.save`: that one runs
    when, and only when, the call does, so the call's row stands for it. A library save the job calls itself
    (`ckpt.dump`) stays, and so does one a module read only as text may call."""
    train = TRAIN.replace("util.save_ckpt(model)", "ckpt.save_checkpoint(model)").replace(
        "from pkg import util", "from pkg import ckpt") + "    ckpt.dump(model)\n"
    lib = "import torch\n\ndef save_checkpoint(m):\n    _write(m)\n\ndef _write(m):\n    torch.save(m, 'c.pt')\n\n" \
          "def dump(m):\n    torch.save(m, 'd.pt')\n"
    deep = {"pkg/__init__.py": "", "pkg/ckpt.py": lib, "pkg/a.py": "from pkg import b\n",
            "pkg/b.py": "from pkg import c\n", "pkg/c.py": "from pkg import d\n"}  # d: past the depth read
    train = train.replace("from pkg import ckpt", "from pkg import ckpt, a")
    # code read only as text calls `save_checkpoint` too: a save as well, which the call's row does not cover
    # but which writes through `_write` all the same
    root = write(tmp_path, {"train.py": train, **deep, "pkg/d.py": "from pkg import ckpt\nckpt.save_checkpoint(0)\n"})
    assert saves(root) == ["pkg/ckpt.py:10", "train.py:10"]
    rows = [c.what for c in propose(analyze_script(root / "train.py", root), 30)]
    assert "1 save call(s) in imported modules (pkg/ckpt.py)" in rows
    # `_write` itself called from code read only as text: it may run on its own
    root = write(tmp_path / "b", {"train.py": train, **deep, "pkg/d.py": "from pkg.ckpt import _write\n_write(0)\n"})
    assert saves(root) == ["pkg/ckpt.py:10", "pkg/ckpt.py:7", "train.py:10"]


def test_a_name_a_module_read_as_text_only_defines_is_no_call(tmp_path):
    """Past the depth read, `def export_all(...)` of another module's own is a definition, not a call: the
    unused `export_all` of the module read stays unreached. A call there (`export_all(m)`) reaches it."""
    deep = {"pkg/__init__.py": "", "pkg/util.py": UTIL, "pkg/a.py": "from pkg import b\n",
            "pkg/b.py": "from pkg import c\n", "pkg/c.py": "from pkg import d\n"}
    train = TRAIN.replace("from pkg import util", "from pkg import util, a")
    root = write(tmp_path / "def", {"train.py": train, **deep, "pkg/d.py": "def export_all(m):\n    return m\n"})
    assert saves(root) == ["train.py:10"]
    call = "from pkg import util\nutil.export_all(0)\n"
    root = write(tmp_path / "call", {"train.py": train, **deep, "pkg/d.py": call})
    assert saves(root) == ["pkg/util.py:7", "train.py:10"]


def test_a_function_called_only_from_a_module_read_as_text_is_kept(tmp_path):
    """train -> a (read) -> b (past the depth read for facts) -> a.write_optimizer: b calls back into a."""
    root = write(tmp_path, {
        "train.py": TRAIN.replace("util.save_ckpt(model)", "util.checkpoint(model)"),
        "pkg/__init__.py": "",
        "pkg/util.py": "from pkg import io\nfrom pkg.opt import write_optimizer\n\ndef checkpoint(m):\n"
                       "    io.save(m)\n",
        "pkg/io.py": "from pkg import deep\n\ndef save(m):\n    deep.save(m)\n",
        "pkg/deep.py": "from pkg.opt import write_optimizer\n\ndef save(m):\n    write_optimizer(m)\n",
        "pkg/opt.py": "import torch\n\ndef write_optimizer(m):\n    torch.save(m, 'opt.pt')\n\n"
                      "def unused(m):\n    torch.save(m, 'never.pt')\n",
    })
    assert saves(root) == ["pkg/opt.py:4"]


def test_methods_a_framework_calls_are_kept_and_a_plain_classs_uncalled_method_is_not(tmp_path):
    root = write(tmp_path, {"train.py": """\
import torch
from transformers import Trainer

class MyTrainer(Trainer):
    def _save_checkpoint(self, model, trial):
        torch.save(model, "hf.pt")

class Loop:
    def run(self):
        for batch in loader:
            loss = model(batch)
            loss.backward()
            optimizer.step()

    def validation_step(self):
        torch.save(model, "never.pt")

    def __del__(self):
        torch.save(model, "at-exit.pt")

MyTrainer(model=model)
Loop().run()
"""})
    assert saves(root) == ["train.py:19", "train.py:6"]


def test_nothing_is_left_out_when_a_module_does_not_parse_or_the_step_is_not_reached(tmp_path):
    root = write(tmp_path, {"train.py": TRAIN, "pkg/__init__.py": "", "pkg/util.py": UTIL,
                            "pkg/broken.py": "def (:\n"})
    write(tmp_path, {"train.py": TRAIN.replace("from pkg import util", "from pkg import util, broken")})
    assert saves(root) == ["pkg/util.py:10", "pkg/util.py:14", "pkg/util.py:7", "train.py:10"]
    write(tmp_path, {"train.py": TRAIN.split("if __name__")[0]})  # run by something the code does not show
    assert saves(root) == ["pkg/util.py:10", "pkg/util.py:14", "pkg/util.py:7", "train.py:10"]


def test_a_class_named_only_in_a_hydra_config_is_reached(tmp_path):
    root = write(tmp_path, {
        "train.py": 'import hydra\nfrom pkg import lit\n\n@hydra.main(config_path="configs", config_name="train")\n'
                    "def main(cfg):\n    for b in loader:\n        loss = model(b)\n        loss.backward()\n"
                    "        optimizer.step()\n\nif __name__ == '__main__':\n    main()\n",
        "configs/train.yaml": "model:\n  _target_: pkg.lit.Saver\n",
        "pkg/__init__.py": "",
        "pkg/lit.py": "import torch\n\nclass Saver:\n    def __init__(self):\n        torch.save(1, 'x.pt')\n\n"
                      "class Unused:\n    def __init__(self):\n        torch.save(2, 'y.pt')\n",
    })
    assert saves(root) == ["pkg/lit.py:5"]


HELPER = """\
import argparse
import torch
p = argparse.ArgumentParser()
p.add_argument("--save_every", type=int, default=100)
args = p.parse_args()

class Loop:
    def run(self):
        self.step = 0
        while True:
            loss = model(next(data))
            loss.backward()
            opt.step()
            {site}
            self.step += 1

    def save(self):
        torch.save(model.state_dict(), "ckpt.pt")
        torch.save(opt.state_dict(), "opt.pt")

Loop().run()
"""


def rows(tmp_path: Path, files: dict[str, str]) -> list[str]:
    root = write(tmp_path, files)
    return [c.what for c in propose(analyze_script(root / "train.py", root), 30) if "save" in c.what]


def test_a_save_in_a_helper_is_read_where_the_helper_is_called(tmp_path):
    """Two saves in `save()` are one row at its call, under the call's condition: true at step 0 here."""
    site = "if self.step % args.save_every == 0:\n                self.save()"
    assert rows(tmp_path, {"train.py": HELPER.format(site=site)}) == [
        "save (train.py:15) still runs once, at step 0 (self.step % args.save_every == 0 is true at 0)"]


def test_a_helper_called_past_the_first_step_is_switched_off_by_the_calls_setting(tmp_path):
    site = "if self.step > 0 and self.step % args.save_every == 0:\n                self.save()"
    assert rows(tmp_path, {"train.py": HELPER.format(site=site)}) == ["save off (train.py:15)"]


def test_a_helper_stays_put_when_no_call_says_more_and_a_saving_helper_is_its_calls(tmp_path):
    plain = rows(tmp_path / "a", {"train.py": HELPER.format(site="self.save()")})
    assert plain == ["torch.save (train.py:18) has no switch: it runs whenever the job reaches it",
                     "torch.save (train.py:19) has no switch: it runs whenever the job reaches it"]
    named = HELPER.replace("def save(self):", "def save_checkpoint(self):").format(
        site="if self.step % args.save_every == 0:\n                self.save_checkpoint()")
    assert rows(tmp_path / "b", {"train.py": named}) == [
        "save_checkpoint (train.py:15) still runs once, at step 0 (self.step % args.save_every == 0 is true at 0)"]


def test_a_save_in_the_function_that_trains_is_never_moved_to_its_call(tmp_path):
    job = """\
import argparse
import torch
p = argparse.ArgumentParser()
p.add_argument("--do_train", action="store_true")
args = p.parse_args()

def train():
    for batch in data:
        loss = model(batch)
        loss.backward()
        opt.step()
    torch.save(model, "final.pt")

if args.do_train:
    train()
"""
    assert rows(tmp_path, {"train.py": job}) == [
        "torch.save off (train.py:12): it runs after the training loop (ends at line 11), and the step cap stops "
        "the job inside it"]


def test_a_save_its_own_setting_switches_off_stays_in_its_helper(tmp_path):
    flag = 'p.add_argument("--save_every", type=int, default=100)'
    job = HELPER.replace(flag, flag + '\np.add_argument("--keep", action="store_true")')
    job = job.replace('        torch.save(opt.state_dict(), "opt.pt")\n', "").replace(
        '        torch.save(model', '        if args.keep:\n            torch.save(model')
    site = "if self.step % args.save_every == 0:\n                self.save()"
    assert rows(tmp_path, {"train.py": job.format(site=site)}) == ["torch.save off (train.py:21)"]


CALLER = """\
import torch

def train(model):
    for batch in data:
        loss = model(batch)
        loss.backward()
        opt.step()

def main():
    torch.save(model, "init.pt")
    train(model)
    torch.save(model, "final.pt")

main()
"""


def test_a_save_after_the_call_that_trains_runs_after_training_and_one_before_it_does_not(tmp_path):
    assert rows(tmp_path, {"train.py": CALLER}) == [
        "torch.save (train.py:10) has no switch: it runs whenever the job reaches it",
        "torch.save off (train.py:12): it runs after training (the call at line 11 that runs the loop returns), "
        "and the step cap stops the job inside it"]


def test_a_tracker_a_class_starts_is_read_where_the_class_is_built(tmp_path):
    """The writer in a logger class's constructor, the class built under a config field no flag is known for
    (torchtitan): the row says when it logs, never "in every run"."""
    job = """\
import torch
from torch.utils.tensorboard import SummaryWriter

class TensorBoardLogger:
    def __init__(self, log_dir):
        self.writer = SummaryWriter(log_dir)

def build(config):
    if config.enable_tensorboard:
        return TensorBoardLogger(config.dir)

def main(config):
    logger = build(config)
    for batch in data:
        loss = model(batch)
        loss.backward()
        opt.step()

main(cfg)
"""
    root = write(tmp_path, {"train.py": job})
    a = analyze_script(root / "train.py", root)
    assert [(t.name, t.line) for t in a.trackers] == [("tensorboard", 10)]
    row = next(c for c in propose(a, 30) if "tensorboard" in c.what)
    assert row.what == "tensorboard tracker (train.py:10) has no switch: it logs when config.enable_tensorboard holds"


def test_past_its_bounds_the_walk_gives_up_and_keeps_every_save(tmp_path, monkeypatch):
    from wamf_tui.read import crawl

    root = write(tmp_path, {"train.py": TRAIN, "pkg/__init__.py": "from pkg import deep\n", "pkg/util.py": UTIL,
                            "pkg/deep.py": "from pkg import deeper\n", "pkg/deeper.py": "x = 1\n"})
    assert saves(root) == ["train.py:10"]
    monkeypatch.setattr(crawl, "REACH_ENTRIES", 2)
    assert saves(root) == ["pkg/util.py:10", "pkg/util.py:14", "pkg/util.py:7", "train.py:10"]
    monkeypatch.setattr(crawl, "REACH_ENTRIES", 10_000)
    monkeypatch.setattr(crawl, "REACH_BYTES", 5)
    assert len(saves(root)) == 4


ENGINE = """\
def step_loss(model, batch):
    loss = model(batch)
    loss.backward()
    return loss
"""

TRAINER = """\
import torch
from pkg import engine

class Trainer:
    def training_step(self, batch):
        loss = engine.step_loss(self.model, batch)
        self.optimizer.step()
        return loss

    def train(self):
        for self.iteration in range(1, self.cfg.steps + 1):
            self.training_step(next(self.data))
            if self.iteration % self.cfg.checkpoint_interval == 0:
                self.save_checkpoint()
        self.save_checkpoint()

    def save_checkpoint(self):
        torch.save(self.model.state_dict(), "ckpt.pt")
        self.post_save()

    def post_save(self):
        if self.cfg.eval_after_save:
            evaluate_checkpoint("ckpt.pt")
"""


def test_a_backward_in_a_helper_module_finds_its_loop_around_the_optimizer_step(tmp_path):
    """nanotron's shape: the backward sits in a helper with no loop (a gradient accumulator's), the optimizer
    step in the trainer's `training_step`, called from `train`'s loop. That loop is the training loop, so the
    trainer's saves are the job's own rows: the one in the loop under its interval, the one after it stopped by
    the wrapper's cap. The eval a save runs after itself is the save's, no row of its own."""
    root = write(tmp_path, {"run.py": "from pkg.trainer import Trainer\nTrainer().train()\n", "pkg/__init__.py": "",
                            "pkg/engine.py": ENGINE, "pkg/trainer.py": TRAINER})
    a = analyze_script(root / "run.py", root)
    got = {x.role: f"{x.file}:{x.line}" for x in a.anchors}
    assert (got["backward"], got["optimizer_step"]) == ("pkg/engine.py:3", "pkg/trainer.py:7")
    assert (a.train_loop.file, a.train_loop.start, a.train_loop.end) == ("pkg/trainer.py", 11, 14)
    rows = [c.what for c in propose(a, 30) if "save" in c.what or c.what.startswith("eval")]
    assert rows == [
        "save_checkpoint (pkg/trainer.py:14) has no switch: it runs when self.iteration % "
        "self.cfg.checkpoint_interval == 0 holds",
        "save_checkpoint off (pkg/trainer.py:15): it runs after the training loop (ends at line 14), and the step "
        "cap stops the job inside it"]


HF_ENTRY = """\
import os
from dataclasses import dataclass

import torch
from accelerate import Accelerator
from transformers import HfArgumentParser

from pkg.hub import push_folder_to_hub


@dataclass
class Args:
    output_dir: str = "output/"
    push_to_hub: bool = True
    with_tracking: bool = False
    report_to: str = "all"


def main(args):
    os.makedirs(args.output_dir, exist_ok=True)
    kwargs = {}
    if args.with_tracking:
        kwargs["log_with"] = args.report_to
    accelerator = Accelerator(**kwargs)
    if args.with_tracking:
        accelerator.init_trackers("sft", vars(args))
    for batch in loader:
        loss = model(batch)
        accelerator.backward(loss)
        optimizer.step()
    if args.push_to_hub and accelerator.is_main_process:
        push_folder_to_hub(args.output_dir)


if __name__ == "__main__":
    (args,) = HfArgumentParser((Args,)).parse_args_into_dataclasses()
    main(args)
"""

HUB = """\
from huggingface_hub import HfApi


def push_folder_to_hub(folder):
    api = HfApi()
    if not api.repo_exists("me/model"):
        api.create_repo("me/model")
    api.upload_folder(folder_path=folder, repo_id="me/model")
"""


def test_an_upload_in_another_modules_helper_is_read_where_the_entry_calls_it(tmp_path):
    """open-instruct's `push_folder_to_hub` uploads in model_utils.py; the entry calls it under `if
    args.push_to_hub and ...:`, a dataclass field that defaults to True: the upload is that call, switched off
    by `--push_to_hub False`. Accelerate's trackers, named through a kwargs dict built under `if
    args.with_tracking:`, are started under the same test: the flag left out is their switch. The flags come
    from the dataclass the parser call at the end declares, after the code that tests them was read."""
    root = write(tmp_path, {"train.py": HF_ENTRY, "pkg/__init__.py": "", "pkg/hub.py": HUB})
    a = analyze_script(root / "train.py", root)
    call = HF_ENTRY.splitlines().index("        push_folder_to_hub(args.output_dir)") + 1
    assert [(u.name, u.file, u.line, u.off_switch) for u in a.uploads] == [
        ("push_folder_to_hub", "train.py", call, "--push_to_hub False")]
    assert [(t.name, t.off_switch) for t in a.trackers] == [("report_to", "--with_tracking")]
    assert "--output_dir" in {o.off_switch for o in a.output_dirs}
    alone = write(tmp_path / "alone", {"train.py": HF_ENTRY.replace("from pkg.hub import push_folder_to_hub\n",
                                                                   "from pkg.hub import other\n"),
                                       "pkg/__init__.py": "", "pkg/hub.py": HUB + "\n\ndef other():\n    pass\n"})
    assert {u.file for u in analyze_script(alone / "train.py", alone).uploads} == {"pkg/hub.py"}  # not its call


EARLY_RETURN = """\
import argparse
import torch

p = argparse.ArgumentParser()
p.add_argument("--skip_model_save", action="store_true")
p.add_argument("--save_every_checkpoint", action="store_true")
args = p.parse_args()


def save_checkpoint(name):
    if args.skip_model_save:
        return
    torch.save(model.state_dict(), name)


for step in range(1000):
    loss = model(x)
    loss.backward()
    optimizer.step()
    if step % 100 == 0 and args.save_every_checkpoint:
        save_checkpoint(f"model_step{step}.pkl")
save_checkpoint("model.pkl")
"""


def test_a_save_after_an_early_return_is_switched_off_by_its_test_and_its_calls_take_that_switch(tmp_path):
    """DomainBed's `save_checkpoint`: `if args.skip_model_save: return`, then the save. The save runs only
    when the flag is not given: its switch is the flag given, and the final unguarded `save_checkpoint(...)`
    call, the save's row, takes it; the periodic call keeps its own."""
    root = write(tmp_path, {"train.py": EARLY_RETURN})
    a = analyze_script(root / "train.py", root)
    final = EARLY_RETURN.splitlines().index('save_checkpoint("model.pkl")') + 1
    assert {(c.line, c.off_switch) for c in a.checkpoints} == {
        (final - 1, "--save_every_checkpoint"), (final, "--skip_model_save (given)")}
    off = next(c for c in propose(a, 30) if c.kind == "save" and f"train.py:{final}" in c.sites)
    assert off.enabled and off.flags == ["--skip_model_save"]


MISC = """\
import torch


def accuracy(network, loader):
    network.eval()
    with torch.no_grad():
        correct = sum((network(x).argmax(1) == y).sum().item() for x, y in loader)
    network.train()
    return correct


def count(network, loader):
    with torch.no_grad():
        return sum(len(x) for x, _ in loader)
"""

EVALUATED = """\
import torch
from pkg import misc

for step in range(1000):
    loss = model(next(batches))
    loss.backward()
    optimizer.step()
    if step % 100 == 0:
        acc = misc.accuracy(model, val_loader)
        n = misc.count(model, val_loader)
"""


def test_a_function_that_evaluates_is_an_eval_where_it_is_called_whatever_its_name(tmp_path):
    """DomainBed's `misc.accuracy`: the model put in eval mode and run under no_grad, called every 100 steps
    from the entry: an eval at that call, under its condition. A no_grad count that never evaluates is none."""
    root = write(tmp_path, {"train.py": EVALUATED, "pkg/__init__.py": "", "pkg/misc.py": MISC})
    a = analyze_script(root / "train.py", root)
    call = EVALUATED.splitlines().index("        acc = misc.accuracy(model, val_loader)") + 1
    assert [(e.name, e.file, e.line, e.guard) for e in a.evals] == [("accuracy", "train.py", call, "step % 100 == 0")]


def test_an_early_return_above_the_training_is_no_switch(tmp_path):
    """EDM's `if opts.dry_run: return` before `training_loop(...)`: giving the flag would stop the whole job,
    so the save after it is never switched off by it."""
    entry = EARLY_RETURN.replace(
        'save_checkpoint("model.pkl")',
        'if args.skip_model_save:\n    return\ntrain_loop()\ntorch.save(model, "final.pt")',
    ).replace("import torch\n", "import torch\ndef train_loop():\n    pass\n", 1)
    root = write(tmp_path, {"train.py": f"def main():\n{textwrap.indent(entry, '    ')}\n"})
    a = analyze_script(root / "train.py", root)
    final = next(c for c in a.checkpoints if c.name == "torch.save" and "final.pt" in
                 (root / "train.py").read_text().splitlines()[c.line - 1])
    assert final.off_switch is None


CALLBACK = """\
import torch
from pytorch_lightning.callbacks import Callback


class ImageLogger(Callback):
    def __init__(self, every=300):
        self.every = every

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if batch_idx % self.every == 0:
            pl_module.eval()
            with torch.no_grad():
                pl_module.log_images(batch)
            pl_module.train()


class Timer(Callback):
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        with torch.no_grad():
            print(batch_idx)
"""

LIGHTNING_ENTRY = """\
import pytorch_lightning as pl
from pkg.logger import ImageLogger, Timer

logger = ImageLogger(every=300)
trainer = pl.Trainer(callbacks=[logger, Timer()], logger=False, enable_checkpointing=False)
trainer.fit(model, loader)
"""


def test_a_callback_whose_hooks_evaluate_is_an_eval_where_it_is_built(tmp_path):
    """ControlNet's `ImageLogger(Callback)` samples the model in eval mode without gradients every 300 batches:
    the framework calls its hook, so its eval is where the job builds it. A callback that only runs under
    no_grad (a timer) evaluates nothing."""
    root = write(tmp_path, {"train.py": LIGHTNING_ENTRY, "pkg/__init__.py": "", "pkg/logger.py": CALLBACK})
    a = analyze_script(root / "train.py", root)
    assert [(e.name, e.file, e.line) for e in a.evals] == [("ImageLogger", "train.py", 4)]


DECORATED = """\
import argparse
import torch
p = argparse.ArgumentParser()
p.add_argument("--demo-every", type=int, default=500)
args = p.parse_args()


def main():
    @torch.no_grad()
    @utils.eval_mode(model)
    def demo():
        sample(model)

    step = 0
    for batch in loader:
        loss = model(batch)
        loss.backward()
        optimizer.step()
        step += 1
        if step % args.demo_every == 0:
            demo()


main()
"""


def test_an_eval_made_by_a_decorator_is_read_where_its_function_is_called(tmp_path):
    """k-diffusion's `@K.utils.eval_mode(model_ema) def demo():` puts the model in eval mode when `demo()` is
    called (every `--demo-every` steps, counted up first), not where it is defined."""
    root = write(tmp_path, {"train.py": DECORATED})
    a = analyze_script(root / "train.py", root)
    call = DECORATED.splitlines().index("            demo()") + 1
    assert [(e.name, e.line, e.guard, e.off_switch) for e in a.evals] == [
        ("demo", call, "step % args.demo_every == 0", "--demo-every")]
