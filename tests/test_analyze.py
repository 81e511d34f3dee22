"""The analyzer on fixture scripts in each style, asserted line by line; and the wrapper for real."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import hypothesmith
import pytest
from conftest import git, make_repo
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from wamf_tui.infra import children
from wamf_tui.propose.benchmark import propose
from wamf_tui.propose.validate import check_run
from wamf_tui.propose.wrapper import WRAPPER
from wamf_tui.read.analyze import analyze_script
from wamf_tui.read.isolated import AnalysisFailed, analyze_in_child

RAW = """\
import argparse
import torch
import wandb

p = argparse.ArgumentParser()
p.add_argument("--max-steps", type=int, default=5000)
p.add_argument("--seed", type=int, default=1)
p.add_argument("--output-dir", default="outputs")
p.add_argument("--no-wandb", action="store_true")
args = p.parse_args()
torch.manual_seed(args.seed)
model = torch.nn.Linear(4, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
if not args.no_wandb:
    wandb.init(project="x")
for step in range(args.max_steps):
    out = model(torch.randn(2, 4))
    loss = out.pow(2).mean()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if step % 1000 == 0:
        torch.save(model.state_dict(), args.output_dir + "/ckpt.pt")
"""

HF = """\
from transformers import HfArgumentParser, Trainer, TrainingArguments

def main():
    args = TrainingArguments(
        output_dir="out",
        max_steps=1000,
        report_to="wandb",
        save_strategy="steps",
        eval_strategy="steps",
        push_to_hub=True,
        seed=42,
    )
    trainer = Trainer(model=None, args=args)
    trainer.train()
"""

LIGHTNING = """\
import lightning as L
import torch

class Lit(L.LightningModule):
    def training_step(self, batch, idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self(x), y)

L.seed_everything(0)
trainer = L.Trainer(max_steps=500, logger=True, enable_checkpointing=True, default_root_dir="runs")
trainer.fit(Lit())
"""

CONFIGURATOR = """\
import torch
max_iters = 600000
eval_interval = 2000
wandb_log = False
out_dir = 'out'
exec(open('configurator.py').read())
if wandb_log:
    import wandb
    wandb.init(project='owt')
for it in range(max_iters):
    logits, loss = model(X, Y)
    loss.backward()
    optimizer.step()
"""

INFERENCE = """\
import torch
model = load()
with torch.no_grad():
    ids = model.generate(prompt, max_new_tokens=50)
"""


def lines(path: Path, needle: str) -> int:
    return next(i for i, s in enumerate(path.read_text().splitlines(), 1) if needle in s)


def repo_with(tmp_path: Path, files: dict[str, str]) -> Path:
    return make_repo(tmp_path / "r", files)


def test_raw_loop_with_argparse(tmp_path):
    root = repo_with(tmp_path, {"train.py": RAW})
    a = analyze_script(root / "train.py")
    f = root / "train.py"
    assert a.kind == "training" and a.config_system == "argparse" and not a.partial
    roles = {x.role: x.line for x in a.anchors}
    assert roles["forward"] == lines(f, "out = model(")
    assert roles["loss"] == lines(f, "loss = out.pow")
    assert roles["backward"] == lines(f, "loss.backward()")
    assert roles["grad_clip"] == lines(f, "clip_grad_norm_")
    assert roles["optimizer_step"] == lines(f, "opt.step()")
    assert [(t.name, t.line, t.off_switch) for t in a.trackers] == [
        ("wandb", lines(f, "wandb.init"), "--no-wandb (given)")]  # `if not args.no_wandb:`: off when given
    assert [(c.line, c.off_switch) for c in a.checkpoints] == [(lines(f, "torch.save"), None)]
    assert [(s.name, s.default) for s in a.step_controls] == [("--max-steps", "5000")]
    assert ("--output-dir", "--output-dir") in [(o.name, o.off_switch) for o in a.output_dirs]
    assert a.seeds[0].off_switch == "--seed" and a.seeds[0].file == "train.py"
    hows = [c.how for c in propose(a)]
    assert "--max-steps=30" in hows and "--seed=0" in hows and "--output-dir=$WAMF_OUT" in hows


def test_a_trainer_subclass_resumed_or_not_runs_the_loop_on_the_plain_call(tmp_path):
    """LLaVA's `trainer = LLaVATrainer(...)` (a subclass of the HF Trainer, whatever its name starts with), and
    `if <checkpoints>: trainer.train(resume_from_checkpoint=True) else: trainer.train()`: the loss is read at
    the plain call, the path a fresh run takes."""
    body = HF.replace("from transformers import", "from transformers import Trainer as Base,").replace(
        "trainer = Trainer(", "trainer = LLaVATrainer(").replace(
        "    trainer.train()\n", "    if glob('out/checkpoint-*'):\n"
        "        trainer.train(resume_from_checkpoint=True)\n    else:\n        trainer.train()\n")
    root = repo_with(tmp_path, {"train.py": body.replace("\n\ndef main", "\n\nclass LLaVATrainer(Base):\n"
                                                                        "    pass\n\ndef main")})
    a = analyze_script(root / "train.py")
    roles = {x.role: x for x in a.anchors}
    assert a.kind == "training" and roles["loss"].line == roles["grad_clip"].line == lines(
        root / "train.py", "        trainer.train()")


def test_a_package_init_that_re_exports_and_the_trainer_class_cost_no_depth(tmp_path):
    """LLaMA-Factory's shape: the entry calls a runner, the runner `from pkg.stages import run_sft` (a package
    whose `__init__` only re-exports it from `.workflow`), and the workflow builds a Trainer subclass from
    `.trainer`. The `__init__` is no step further from the entry, nor the module of the Trainer the job
    trains with: both are read, where the import depth alone would stop at the `__init__`."""
    root = repo_with(tmp_path, {
        "train.py": "from pkg.runner import main\n\nif __name__ == '__main__':\n    main()\n",
        "pkg/__init__.py": "",
        "pkg/runner.py": "from pkg.stages import run_sft\n\n\ndef main():\n    run_sft()\n",
        "pkg/stages/__init__.py": "from .workflow import run_sft\n",
        "pkg/stages/workflow.py": "from transformers import HfArgumentParser, TrainingArguments\n\n"
                                  "from .trainer import SftTrainer\n\n\ndef run_sft():\n"
                                  "    (args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"
                                  "    trainer = SftTrainer(model=None, args=args)\n    trainer.train()\n"
                                  "    trainer.save_model()\n",
        "pkg/stages/trainer.py": "from transformers import Seq2SeqTrainer\n\n\nclass SftTrainer(Seq2SeqTrainer):\n"
                                 "    def compute_loss(self, model, inputs, *args, **kwargs):\n"
                                 "        return super().compute_loss(model, inputs, *args, **kwargs)\n",
        "pkg/stages/unused.py": "import torch\n\ntorch.save({}, 'never.pt')\n",
    })
    a = analyze_script(root / "train.py")
    assert a.files == ["train.py", "pkg/runner.py", "pkg/stages/__init__.py", "pkg/stages/workflow.py",
                       "pkg/stages/trainer.py"]
    assert a.config_system == "hf" and a.kind == "training"
    assert [(c.name, c.file, c.line) for c in a.checkpoints] == [("save_model", "pkg/stages/workflow.py", 10)]
    assert {x.role: (x.file, x.line) for x in a.anchors}["loss"] == ("pkg/stages/workflow.py", 9)


def test_the_trainer_module_the_entry_builds_is_never_read_as_the_entry(tmp_path):
    """The entry's own Trainer subclass, imported from a package, is read one import deep like any module:
    the entry's facts (which module it runs as) stay the entry's."""
    root = repo_with(tmp_path, {
        "train.py": "from transformers import TrainingArguments\n\nfrom pkg.trainer import SftTrainer\n\n"
                    "if __name__ == '__main__':\n    SftTrainer(model=None, args=TrainingArguments('o')).train()\n",
        "pkg/__init__.py": "",
        "pkg/trainer.py": "from transformers import Trainer\n\n\nclass SftTrainer(Trainer):\n    pass\n",
    })
    a = analyze_script(root / "train.py")
    assert a.files == ["train.py", "pkg/trainer.py"] and a.module is None


def test_the_repos_own_subclass_of_hfargumentparser_is_one(tmp_path):
    """open-instruct's `ArgumentParserPlus(HfArgumentParser)` in its utils: the entry's flags are its
    dataclasses' fields, as with the base class (a field that uploads by default among them)."""
    root = repo_with(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/utils.py": "from transformers import HfArgumentParser\n\n\nclass ArgumentParserPlus(HfArgumentParser):\n"
                        "    pass\n",
        "train.py": "from dataclasses import dataclass\n\nimport torch\n\n"
                    "from pkg.utils import ArgumentParserPlus\n\n\n"
                    "@dataclass\nclass Args:\n    push_to_hub: bool = True\n    max_train_steps: int = 1000\n\n\n"
                    "if __name__ == '__main__':\n"
                    "    (args,) = ArgumentParserPlus((Args,)).parse_args_into_dataclasses()\n",
    })
    a = analyze_script(root / "train.py")
    assert a.config_system == "hf"
    assert {k: v for k, v in a.flags.items() if k in ("--push_to_hub", "--max_train_steps")} == {
        "--push_to_hub": "True", "--max_train_steps": "1000"}


INLINE_EVAL = """\
import torch

model = torch.nn.Linear(4, 4)
teacher = torch.nn.Linear(4, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(1000):
    if step % 250 == 0:
        model.eval()
        with torch.no_grad():
            val = model(torch.randn(2, 4)).sum()
        model.train()
    with torch.no_grad():
        target = teacher(torch.randn(2, 4))
    loss = (model(torch.randn(2, 4)) - target).pow(2).mean()
    loss.backward()
    opt.step()
"""


def test_the_model_run_under_no_grad_every_n_steps_inside_the_loop_is_an_eval(tmp_path):
    """build-nanogpt's validation, HellaSwag and sampling are written inline, `if step % 250 == 0 or last_step:`
    around a `with torch.no_grad():` forward: each an eval where it is written. A teacher's forward under
    no_grad on every step is part of the step, no eval."""
    root = repo_with(tmp_path, {"train.py": INLINE_EVAL})
    a = analyze_script(root / "train.py")
    assert [(e.name, e.line) for e in a.evals] == [("model under no_grad", lines(root / "train.py", "val = model("))]


@pytest.mark.parametrize(("parse", "flags_only"), [
    ("(args,) = parser.parse_args_into_dataclasses()", True),
    ("(args, rest) = parser.parse_args_into_dataclasses(return_remaining_strings=True)", False),
    ("(args,) = parser.parse_yaml_file(sys.argv[1]) if sys.argv[1].endswith('.yaml') "
     "else parser.parse_args_into_dataclasses()", False)])
def test_an_hfargumentparser_that_reads_flags_only_refuses_a_positional_word(tmp_path, parse, flags_only):
    """open-instruct's scripts give finetune.py a YAML file, which its parse_args_into_dataclasses() refuses (no
    file parse, no leftovers kept); an entry that parses a YAML it is given, or keeps leftovers, takes it."""
    entry = ("import sys\nfrom dataclasses import dataclass\n\nimport torch\n"
             "from transformers import HfArgumentParser\n\n\n@dataclass\nclass Args:\n    lr: float = 0.1\n\n\n"
             "parser = HfArgumentParser((Args,))\n" + parse + "\n")
    root = repo_with(tmp_path, {"train.py": entry, "conf.yaml": "lr: 0.2\n"})
    a = analyze_script(root / "train.py")
    assert (a.config_system, a.flags_only) == ("hf", flags_only)
    refused = [p for p in check_run("python train.py conf.yaml", root, a).problems if "reads flags only" in p]
    assert bool(refused) is flags_only
    assert not [p for p in check_run("python train.py --lr 0.2", root, a).problems if "reads flags only" in p]


def test_hf_trainer_vocabulary(tmp_path):
    root = repo_with(tmp_path, {"run_clm.py": HF})
    a = analyze_script(root / "run_clm.py")
    f = root / "run_clm.py"
    assert a.kind == "training"
    roles = {x.role: x for x in a.anchors}  # the library runs the loop: its log callback sees each step
    assert roles["loss"].line == lines(f, "trainer.train()") and "TrainerCallback.on_log" in roles["loss"].text
    assert f"the Trainer of line {lines(f, 'trainer = Trainer(')}" in roles["grad_clip"].text
    assert [(t.name, t.line, t.off_switch) for t in a.trackers] == [("report_to", lines(f, "report_to"),
                                                                      "--report_to none")]
    assert a.checkpoints[0].off_switch == "--save_strategy no"
    assert a.evals[0].off_switch == "--eval_strategy no"
    assert a.uploads[0].name == "push_to_hub"
    assert [s.name for s in a.step_controls] == ["max_steps"]


def test_lightning_vocabulary(tmp_path):
    root = repo_with(tmp_path, {"fit.py": LIGHTNING})
    a = analyze_script(root / "fit.py")
    f = root / "fit.py"
    assert a.kind == "training"
    assert {x.role: x.line for x in a.anchors}["loss"] == lines(f, "return torch.nn.functional.mse_loss")
    assert [t.name for t in a.trackers] == ["logger"]
    assert [c.name for c in a.checkpoints] == ["enable_checkpointing"]
    assert [o.name for o in a.output_dirs] == ["default_root_dir"]
    assert a.seeds[0].name.endswith("seed_everything")


def test_configurator_script(tmp_path):
    root = repo_with(tmp_path, {"train.py": CONFIGURATOR, "configurator.py": "# reads --key=value\n"})
    a = analyze_script(root / "train.py")
    f = root / "train.py"
    assert a.config_system == "configurator"
    assert [(t.line, t.off_switch) for t in a.trackers] == [(lines(f, "wandb.init"), "--wandb_log=...")]
    assert {x.role: x.line for x in a.anchors}["forward"] == lines(f, "logits, loss = model")
    assert "--max_iters=30" in [c.how for c in propose(a)]


def test_inference_script(tmp_path):
    root = repo_with(tmp_path, {"generate.py": INFERENCE})
    a = analyze_script(root / "generate.py")
    assert a.kind == "inference"
    assert {x.role: x.line for x in a.anchors}["forward"] == 4


def test_trainer_split_across_modules(tmp_path):
    trainer = "class Trainer:\n    def run(self, model, opt, batch):\n        loss = model(batch)\n" \
              "        loss.backward()\n        opt.step()\n"
    root = repo_with(tmp_path, {"train.py": "from src.mylib.trainer import Trainer\nTrainer().run()\n",
                                "src/mylib/__init__.py": "", "src/mylib/trainer.py": trainer})
    a = analyze_script(root / "train.py")
    roles = {x.role: (x.file, x.line) for x in a.anchors}
    assert roles["backward"] == ("src/mylib/trainer.py", 4)
    assert roles["optimizer_step"] == ("src/mylib/trainer.py", 5)
    assert a.kind == "training"


def test_bad_sources_give_partial_results(tmp_path):
    cases = {
        "syntax.py": b"import torch\nloss.backward(\nx = = 1\n",
        "latin1.py": "# caf\xe9\nloss = model(x)\nloss.backward()\n".encode("latin-1"),
        "empty.py": b"",
        "binary.py": b"\x00\x01\x02ELF",
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        a = analyze_script(tmp_path / name, tmp_path)
        assert a.notes, name
    assert analyze_script(tmp_path / "syntax.py", tmp_path).partial
    assert analyze_script(tmp_path / "syntax.py", tmp_path).anchors[0].role == "backward"
    assert analyze_script(tmp_path / "latin1.py", tmp_path).kind == "training"
    big = tmp_path / "big.py"
    big.write_text("# " + "x" * 3_000_000 + "\n")  # ~3 MB, past the 2 MB read (one comment: quick to parse)
    assert analyze_script(big, tmp_path).partial


def test_the_collector_pause_ends_with_the_analysis(tmp_path):
    """The analyzer pauses the cyclic GC while it reads; the app's other threads need it back."""
    import gc

    (tmp_path / "ok.py").write_text("loss = model(x)\nloss.backward()\n")
    (tmp_path / "bad.py").write_text("loss.backward(\n")
    for name in ("ok.py", "bad.py"):
        assert gc.isenabled()
        analyze_script(tmp_path / name, tmp_path)
        assert gc.isenabled(), name
    gc.disable()
    try:
        analyze_script(tmp_path / "ok.py", tmp_path)
        assert not gc.isenabled()  # a caller's own pause is left as it was
    finally:
        gc.enable()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=400))
def test_never_raises_on_arbitrary_text(tmp_path, text):
    p = tmp_path / "any.py"
    p.write_text(text, encoding="utf-8", errors="surrogateescape")
    analyze_script(p, tmp_path)


TRAINING_LINES = (
    "loss = model(x)\nloss.backward()\n", "optimizer.step()\n", "torch.save(model.state_dict(), args.out)\n",
    "if args.wandb:\n    wandb.init(project='p')\n", "for step in range(args.max_steps):\n    evaluate()\n",
    "torch.manual_seed(cfg.train.seed)\n", "@hydra.main(config_name='c')\ndef main(cfg):\n    print(cfg.a.b)\n",
)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(hypothesmith.from_grammar() | hypothesmith.from_node(), st.lists(st.sampled_from(TRAINING_LINES), max_size=4))
def test_valid_python_is_read_in_full(tmp_path, code, training):
    """Any valid Python, mixed with training vocabulary, parses and yields a full (not partial) result."""
    source = "\n".join([code, *training])
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        assume(False)  # the two pieces did not join into valid Python
    assume(source.strip())
    p = tmp_path / "valid.py"
    p.write_text(source, encoding="utf-8")
    a = analyze_script(p, tmp_path)
    assert not a.partial, a.notes
    if "loss.backward()" in training:
        assert a.kind == "training"


def test_never_executes_the_script(tmp_path):
    marker = tmp_path / "MARKER"
    body = f"open({str(marker)!r}, 'w').write('ran')\nimport helper\n"
    root = repo_with(tmp_path, {"train.py": body, "helper.py": body})
    analyze_script(root / "train.py")
    assert not marker.exists()


TINY = """\
import os
import torch
print("WANDB_MODE", os.environ.get("WANDB_MODE"))
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.randn(64, 8)
for step in range(1000):
    loss = model(data).pow(2).mean() + torch.randn(()) * 0.01
    print(f"loss {loss.item():.8f}")
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


@pytest.mark.slow  # runs a real job with CPU torch
def test_wrapper_stops_after_n_steps_pins_seeds_and_leaves_nothing(tmp_path):
    root = make_repo(tmp_path / "job", {"train.py": TINY})
    wrapper = tmp_path / "out" / "wamf_bench.py"  # next to the contract, outside the repo
    wrapper.parent.mkdir()
    wrapper.write_text(WRAPPER)
    before = git(root, "status", "--porcelain", "--ignored")
    env = {**os.environ, "WAMF_MAX_STEPS": "7", "WAMF_SEED": "3"}
    env.pop("WANDB_MODE", None)
    runs = [subprocess.run([sys.executable, str(wrapper), "train.py"], cwd=root, env=env, capture_output=True,
                           text=True, timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr[-2000:]
        assert "WANDB_MODE disabled" in r.stdout
        assert "wamf: stopped after 7 optimizer steps" in r.stderr
    losses = [[x for x in r.stdout.splitlines() if x.startswith("loss")] for r in runs]
    assert len(losses[0]) == 7
    assert losses[0] == losses[1]
    assert git(root, "status", "--porcelain", "--ignored") == before


@pytest.mark.slow  # runs a real job with CPU torch
@pytest.mark.parametrize("how", ["module", "console"])
def test_wrapper_runs_a_package_module_and_a_console_entry(tmp_path, how):
    """`python -m pkg.train` and a console script `tool = pkg.cli:main`, through the wrapper, with real torch."""
    cli = "import sys\n\ndef main():\n    assert sys.argv[1:] == ['--x', '1'], sys.argv\n    from . import train\n"
    root = make_repo(tmp_path / "job", {"pkg/__init__.py": "", "pkg/train.py": "from . import __name__ as _p\n" + TINY,
                                        "pkg/cli.py": cli})
    wrapper = tmp_path / "wamf_bench.py"
    wrapper.write_text(WRAPPER)
    entry = ["-m", "pkg.train"] if how == "module" else ["--entry", "pkg.cli:main", "tool", "--x", "1"]
    r = subprocess.run([sys.executable, str(wrapper), *entry], cwd=root, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "WAMF_MAX_STEPS": "3", "PYTHONPATH": str(root)})
    assert r.returncode == 0, r.stderr[-2000:]
    assert "wamf: stopped after 3 optimizer steps" in r.stderr
    assert len([x for x in r.stdout.splitlines() if x.startswith("loss")]) == 3


def test_demo_checkpoints_point_at_the_real_lines(tmp_path):
    from wamf_tui import demo_repo
    from wamf_tui.model import InitState
    from wamf_tui.propose import proposals

    root = demo_repo.make_demo(str(tmp_path))
    state = InitState(repo_path=str(root), script="train.py", analysis=analyze_script(root / "train.py", root))
    src = (root / "train.py").read_text().splitlines()
    where = {c.name: int(c.where.split(":")[1]) for c in proposals.checkpoints(state)}
    assert src[where["loss"] - 1].strip() == "loss = loss_fn(out, y)"
    assert "clip_grad_norm_" in src[where["grad norm"] - 1]
    assert src[where["model outputs"] - 1].strip() == "out = model(x)"


ACCELERATE = """\
from accelerate import Accelerator
accelerator = Accelerator(log_with="wandb")
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for batch in loader:
    outputs = model(**batch)
    loss = outputs.loss
    accelerator.backward(loss)
    optimizer.step()
"""

HYDRA = """\
import hydra
from omegaconf import DictConfig

@hydra.main(config_path="conf", config_name="config")
def main(cfg: DictConfig):
    torch.manual_seed(cfg.seed)
    for step in range(cfg.max_steps):
        loss = model(batch)
        loss.backward()
        optimizer.step()
"""


def test_accelerate_loop_and_hydra_app(tmp_path):
    root = repo_with(tmp_path, {"acc.py": ACCELERATE, "app.py": HYDRA})
    a = analyze_script(root / "acc.py")
    roles = {x.role: x.line for x in a.anchors}
    assert roles["backward"] == 7 and roles["optimizer_step"] == 8 and roles["forward"] == 5
    assert [p.name for p in a.parallelism] == ["prepare"]
    h = analyze_script(root / "app.py")
    assert h.config_system == "hydra" and h.kind == "training"
    assert h.seeds[0].off_switch == "seed"


HYDRA_NESTED = """\
import hydra
import torch


@hydra.main(version_base=None, config_path="conf", config_name="train")
def main(cfg):
    torch.manual_seed(cfg.train.seed)
    for step in range(cfg.train.max_steps):
        loss = model(batch)
        loss.backward()
        optimizer.step()
    torch.save(model.state_dict(), cfg.paths.output_dir + "/last.pt")
"""

HYDRA_CONF = """\
# primary config
train:
  max_steps: 100000   # a day on 8 GPUs
  seed: 1234
paths:
  output_dir: outputs/${now:%Y-%m-%d}
defaults:
  - _self_
"""


def test_hydra_overrides_are_key_value_with_defaults_from_the_yaml(tmp_path):
    from wamf_tui.model import InitState
    from wamf_tui.propose.run_line import run_command

    root = repo_with(tmp_path, {"app.py": HYDRA_NESTED, "conf/train.yaml": HYDRA_CONF})
    a = analyze_script(root / "app.py")
    assert a.config_system == "hydra"
    assert [(c.name, c.line, c.default) for c in a.step_controls] == [("train.max_steps", 8, "100000")]
    assert [(s.line, s.off_switch) for s in a.seeds] == [(7, "train.seed")]
    assert [(o.name, o.off_switch) for o in a.output_dirs] == [("paths.output_dir", "paths.output_dir=..."),
                                                               ("hydra.run.dir", "hydra.run.dir=...")]
    changes = propose(a, steps=25)
    assert changes[0].what == "total steps cut to 25 (was 100000)" and changes[0].flags == ["train.max_steps=25"]
    state = InitState(repo_path=str(root), contract_path=str(root / "contract.md"), script="app.py", changes=changes)
    run = run_command(state)
    out = f"{root}.wamf-bench"  # beside the checkout, never in it
    for override in ("train.max_steps=25", "train.seed=0", f"hydra.run.dir={out}", f"paths.output_dir={out}"):
        assert override in run.split()
    assert " --" not in run  # no argparse-style flag reaches a Hydra app


def test_a_job_that_already_fits_is_left_whole(tmp_path):
    from wamf_tui.propose.cap import default_steps

    short = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--max_steps', type=int, default=20)\n" \
            "args = p.parse_args()\nfor s in range(args.max_steps):\n    loss = model(x)\n    loss.backward()\n" \
            "    optimizer.step()\n"
    root = repo_with(tmp_path, {"short.py": short, "long.py": short.replace("default=20", "default=20000")})
    a = analyze_script(root / "short.py")
    assert default_steps(a) is None
    first = propose(a, default_steps(a))[0]
    assert (first.what, first.flags, first.env) == ("whole job kept (was 20)", [], [])
    assert default_steps(analyze_script(root / "long.py")) == 30
    # the command sets the total: its default of 20 says nothing about a command asking for 18865
    assert default_steps(a, ["--max_steps", "18865"]) == 30 and default_steps(a, ["--max_steps=12"]) is None
    first = propose(a, 30, "speed", ["--max_steps", "18865"])[0]
    assert (first.what, first.flags) == ("total steps cut to 30 (was 18865)", ["--max_steps=30"])


def test_switched_off_checkpoints_and_evals_are_priced_with_the_scripts_numbers(tmp_path):
    nanogpt = ("import torch\nmax_iters = 600000\neval_interval = 2000\neval_iters = 200\n"
               "exec(open('configurator.py').read())\n"
               "for it in range(max_iters):\n    if it % eval_interval == 0:\n        losses = estimate_loss()\n"
               "    logits, loss = model(X, Y)\n    loss.backward()\n    optimizer.step()\n")
    root = repo_with(tmp_path, {"train.py": nanogpt, "configurator.py": "# reads --key=value\n"})
    evals = [c.exclusion for c in propose(analyze_script(root / "train.py")) if c.exclusion]
    # `it % eval_interval == 0` is true at step 0: the eval is not off, it runs once in every benchmark run
    assert evals == ["eval estimate_loss at train.py:8 still runs once, at step 0 (it % eval_interval == 0 is true "
                     "at 0) in every benchmark run, so it is timed; price: 200 eval batches (eval_iters) x 1/3 train "
                     "step / 2000 steps (eval_interval) = about 3.3% of train time"]

    from wamf_tui import demo_repo

    demo = demo_repo.make_demo(str(tmp_path))
    saves = [c.exclusion for c in propose(analyze_script(demo / "train.py")) if c.exclusion]
    # its loop counts from 1 (`range(1, args.steps + 1)`): `step % args.save_every == 0` is never true at the first
    assert saves == ["checkpoint at train.py:64 excluded; price: one save every 500 steps (--save-every default), "
                     "4 saves in the real job's 2000 steps; share of train time = save time / (500 x step time), "
                     "save time = bytes on disk / write bandwidth (to measure)",
                     # its validation loss, inline under `if step % args.eval_every == 0: with torch.no_grad():`
                     "eval model under no_grad at train.py:62 excluded; price: eval batches x 1/3 of a train step / "
                     "steps between evals; found every 200 (--eval-every), the rest is to measure"]


def test_the_app_reads_in_a_child_the_same_facts(tmp_path):
    """The app analyses in a child process (a long parse would hold the GIL and freeze the screen);
    what comes back must be what the analyzer finds in-process, and a failure a one-line message."""
    root = make_repo(tmp_path / "r", {"train.py": RAW})
    assert analyze_in_child(root / "train.py", root) == analyze_script(root / "train.py", root)
    with pytest.raises(AnalysisFailed, match="took over"):
        analyze_in_child(root / "train.py", root, timeout=0.001)
    with pytest.raises(AnalysisFailed, match="no such file"):
        analyze_in_child(root / "gone.py", root)


def test_quitting_stops_a_reader_still_running(tmp_path):
    """The app calls `stop_all` when it quits: a long read must end then, not when it is done."""
    import threading
    import time

    root = make_repo(tmp_path / "r", {"train.py": "import torch\n" + "loss = model(x)\nloss.backward()\n" * 60_000})
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            analyze_in_child(root / "train.py", root)
        except AnalysisFailed as e:
            outcome.append(e)

    reader = threading.Thread(target=read)
    reader.start()
    deadline = time.monotonic() + 30
    while not children._running and time.monotonic() < deadline:
        time.sleep(0.01)
    children.stop_all()
    reader.join(timeout=30)
    assert not reader.is_alive()
    assert outcome and "stopped" in str(outcome[0])
    assert not children._running


NESTED = """\
import torch

class Both(torch.optim.Optimizer):
    '''An optimizer that steps two others: one step of the job, three optimizer.step calls.'''

    def __init__(self, a, b):
        self.inner = [a, b]
        super().__init__([p for o in (a, b) for g in o.param_groups for p in g["params"]], {})

    def step(self, closure=None):
        for o in self.inner:
            o.step()

w1, w2 = torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(2))
opt = Both(torch.optim.SGD([w1], lr=0.1), torch.optim.SGD([w2], lr=0.1))
for step in range(100):
    (w1.sum() + w2.sum()).backward()
    opt.step()
    print("step", step)
"""


@pytest.mark.slow  # runs a real job with CPU torch
@pytest.mark.slow  # runs a real job with CPU torch
def test_wrapper_caps_the_training_a_cli_starts_in_a_new_process(tmp_path):
    """axolotl's `train` starts `accelerate launch -m ...`: the steps are taken in a child Python process the
    wrapper never runs. The cap goes with the children (a sitecustomize on their path), stops the child cleanly,
    and leaves no file behind."""
    cli = "import subprocess, sys\nsys.exit(subprocess.call([sys.executable, 'train.py']))\n"
    root = make_repo(tmp_path / "job", {"train.py": TINY, "cli.py": cli})
    wrapper = tmp_path / "wamf_bench.py"
    wrapper.write_text(WRAPPER)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    r = subprocess.run([sys.executable, str(wrapper), "cli.py"], cwd=root, capture_output=True, text=True,
                       timeout=300, env={**os.environ, "WAMF_MAX_STEPS": "4", "TMPDIR": str(scratch)})
    assert r.returncode == 0, r.stderr[-2000:]
    assert len([x for x in r.stdout.splitlines() if x.startswith("loss")]) == 4
    assert "wamf: stopped after 4 optimizer steps" in r.stderr
    assert list(scratch.glob("wamf-*")) == []  # (torch keeps its own cache folder there)


def test_wrapper_counts_a_container_of_optimizers_once_per_step(tmp_path):
    """Measured with real torch: a cap of 5 must stop after 5 job steps, not after 5 optimizer.step calls."""
    root = make_repo(tmp_path / "job", {"train.py": NESTED})
    wrapper = tmp_path / "wamf_bench.py"
    wrapper.write_text(WRAPPER)
    r = subprocess.run([sys.executable, str(wrapper), "train.py"], cwd=root, capture_output=True, text=True,
                       timeout=300, env={**os.environ, "WAMF_MAX_STEPS": "5"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert "wamf: stopped after 5 optimizer steps" in r.stderr
    assert r.stdout.count("step ") == 4  # the 5th step is stopped inside opt.step(), before its print


IDIOMS = """\
import argparse, torch
from torch.nn.parallel import DistributedDataParallel as DDP
from accelerate import Accelerator
from pydantic import BaseModel, Field

class Hub(BaseModel):
    push_id: str | None = Field(None, description="where to push")

p = argparse.ArgumentParser()
p.add_argument("--report_to", default="wandb,tensorboard")
args = p.parse_args()
accelerator = Accelerator(log_with=args.report_to)
net = build_net()
model = DDP(net)
scaler = torch.cuda.amp.GradScaler()
for iter_num in range(100):
    with torch.autocast("cuda"):
        loss = model(x)
    loss.backward()
    opt.step()
"""


def test_the_reader_knows_the_common_idioms_by_their_usual_names(tmp_path):
    """`DDP(...)`, an `Accelerator` (its precision the launcher's), `GradScaler()` and a bare `autocast(...)`,
    `opt.step()`, an accelerate tracker list, and a
    pydantic field's positional default: each a fact at its line."""
    root = repo_with(tmp_path, {"train.py": IDIOMS})
    a = analyze_script(root / "train.py")
    assert [(p.name, p.line) for p in a.parallelism] == [("DDP", 14)]
    assert [(p.kind, p.line) for p in a.precision] == [("framework", 12), ("scaler", 15), ("autocast", 17)]
    assert {x.role: x.line for x in a.anchors}["optimizer_step"] == 20
    assert sorted(t.name for t in a.trackers) == ["tensorboard", "wandb"]


def test_a_module_importing_omegaconf_does_not_make_an_argparse_job_an_omegaconf_one(tmp_path):
    """Megatron's parser is argparse; a module it imports uses OmegaConf for something else. The job's flags are
    still argparse's, and checked as such; a job whose entry reads OmegaConf first stays an OmegaConf one."""
    from wamf_tui.propose.validate import check_run

    train = ("import argparse\nfrom pkg import util\np = argparse.ArgumentParser()\np.add_argument('--lr')\n"
             "args = p.parse_args()\nfor b in data:\n    loss = model(b)\n    loss.backward()\n    opt.step()\n")
    root = repo_with(tmp_path, {"train.py": train, "pkg/__init__.py": "",
                                "pkg/util.py": "from omegaconf import OmegaConf\nC = OmegaConf.create({})\n"})
    a = analyze_script(root / "train.py", root)
    assert a.config_system == "argparse"
    assert check_run("python train.py --lr 1 --bogus 2", root, a).problems == ["--bogus is not an option of train.py"]
    first = repo_with(tmp_path / "o", {"train.py": "from omegaconf import OmegaConf\n" + train})
    assert analyze_script(first / "train.py", first).config_system == "omegaconf"


def test_a_parser_that_copies_another_parsers_actions_is_not_refused_a_flag(tmp_path):
    """`tune run` adds torchrun's actions to its own parser with `_add_action`: its options are only known
    when it runs, so a flag the code does not name is said, not refused."""
    from wamf_tui.propose.validate import check_run

    train = ("import argparse\nfrom torch.distributed.run import get_args_parser\np = argparse.ArgumentParser()\n"
             "for action in get_args_parser()._actions:\n    p._add_action(action)\np.add_argument('--lr')\n"
             "args = p.parse_args()\nfor b in data:\n    loss = model(b)\n    loss.backward()\n    opt.step()\n")
    root = repo_with(tmp_path, {"train.py": train})
    a = analyze_script(root / "train.py", root)
    verdict = check_run("python train.py --lr 1 --nproc_per_node 2", root, a)
    assert verdict.problems == [] and verdict.warnings == [  # --lr is declared: only --nproc_per_node is unproven
        "--nproc_per_node: not declared, and train.py copies options from another parser when it runs"]


def test_a_check_of_the_set_up_or_a_data_split_is_no_eval(tmp_path):
    """`validate_args`, `validate_tokenizer`, `_validate_scalar`, `get_eval_model` and `train_test_split` pass no
    model over data; `evaluate` does."""
    script = ("import torch\nfrom sklearn.model_selection import train_test_split\n\n"
              "def validate_args(a):\n    return a\n\ndef evaluate(model):\n    return model(torch.ones(2)).sum()\n\n"
              "model = torch.nn.Linear(2, 1)\nvalidate_args(None)\ntrain, val = train_test_split([1, 2, 3])\n"
              "validate_tokenizer = print\nvalidate_tokenizer('t')\nopt = torch.optim.SGD(model.parameters())\n"
              "_validate_scalar = get_eval_model = print\n_validate_scalar(1)\nget_eval_model(model)\n"
              "for _ in range(3):\n    model(torch.ones(2)).sum().backward()\n    opt.step()\n    evaluate(model)\n")
    root = make_repo(tmp_path / "job", {"train.py": script})
    a = analyze_script(root / "train.py", root)
    assert [(e.name, e.line) for e in a.evals] == [("evaluate", 22)]


def test_a_seed_made_from_the_seed_setting_is_switched_by_that_setting(tmp_path):
    """DiT: `seed = args.global_seed * dist.get_world_size() + rank; torch.manual_seed(seed)`: the flag is
    --global-seed, not the local name."""
    script = tmp_path / "train.py"
    script.write_text("import argparse, torch\n\ndef main(args):\n    rank = 0\n"
                      "    seed = args.global_seed * 8 + rank\n    torch.manual_seed(seed)\n\n"
                      "if __name__ == '__main__':\n    p = argparse.ArgumentParser()\n"
                      "    p.add_argument('--global-seed', type=int, default=0)\n    main(p.parse_args())\n")
    [seed] = analyze_script(script, tmp_path).seeds
    assert (seed.line, seed.off_switch) == (6, "global_seed")


def test_the_main_guard_is_no_switch(tmp_path):
    """cleanrl: `SummaryWriter(f"runs/{run_name}")` under `if __name__ == "__main__":` has no switch (it was said
    to be switched off by `__name__`)."""
    script = tmp_path / "train.py"
    script.write_text("import argparse\nfrom torch.utils.tensorboard import SummaryWriter\n\n"
                      "if __name__ == '__main__':\n    p = argparse.ArgumentParser()\n"
                      "    p.add_argument('--lr', type=float, default=0.1)\n    args = p.parse_args()\n"
                      "    writer = SummaryWriter(f'runs/{args.lr}')\n")
    [tracker] = analyze_script(script, tmp_path).trackers
    assert (tracker.line, tracker.off_switch) == (8, None)


SHARED_OPTS = {
    "pkg/__init__.py": "",
    "pkg/opts.py": ("def train_opts(parser):\n    parser.add_argument('--save_model', default='model')\n"
                    "    parser.add_argument('--train_steps', type=int, default=1000)\n\n\n"
                    "def translate_opts(parser):\n    parser.add_argument('--output', default='pred.txt')\n"),
    "pkg/train.py": ("import argparse, torch\nfrom pkg.opts import train_opts\n\n\ndef main():\n"
                     "    parser = argparse.ArgumentParser()\n    train_opts(parser)\n    opt = parser.parse_args()\n"
                     "    for step in range(opt.train_steps):\n        loss = model(x)\n        loss.backward()\n"
                     "        optimizer.step()\n\n\nif __name__ == '__main__':\n    main()\n"),
    "pkg/translate.py": ("import argparse\nfrom pkg.opts import translate_opts\n\n\ndef main():\n"
                         "    parser = argparse.ArgumentParser()\n    translate_opts(parser)\n"
                         "    parser.parse_args()\n\n\nif __name__ == '__main__':\n    main()\n"),
}


def test_options_another_entry_declares_in_a_shared_module_are_not_the_jobs(tmp_path):
    """OpenNMT-py: `train.py` and `translate.py` share `opts.py`; only `train_opts(parser)` builds the train
    entry's parser, so translate's `--output` is an option train.py refuses, even though the repo calls
    `translate_opts` elsewhere."""
    root = make_repo(tmp_path / "r", SHARED_OPTS)
    a = analyze_script(root / "pkg" / "train.py", root)
    assert set(a.flags) == {"--save_model", "--train_steps"}
    assert "--output" in analyze_script(root / "pkg" / "translate.py", root).flags  # that entry's own


def test_the_shared_walk_lists_every_node_in_ast_walks_order():
    import ast

    from wamf_tui.read.nodes import walk

    tree = ast.parse("def f(a, *b, k=1):\n    return [x async for x in a if x] or {k: b}\n"
                     "class C(f(1)):\n    y: int = 2\n")
    assert walk(tree) == list(ast.walk(tree)) and walk(tree) is walk(tree)  # made once per tree


HF_BRANCHES = """\
from dataclasses import dataclass, field

import torch
from transformers import HfArgumentParser


@dataclass
class Args:
    sequence_parallel_size: int = field(default=1, metadata={"help": "1 means off"})
    clip_grad_norm: float = -1


def main(args):
    for batch in loader:
        outputs = model(**batch)
        loss = outputs.loss
        if args.sequence_parallel_size > 1:
            parts = gather(loss)
            loss = sum(parts) / len(parts)
        loss.backward()
        if args.clip_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad_norm)
        optimizer.step()


if __name__ == "__main__":
    (args,) = HfArgumentParser((Args,)).parse_args_into_dataclasses()
    main(args)
"""


def test_an_hfargumentparsers_field_defaults_decide_which_branches_the_step_takes(tmp_path):
    """open-instruct's sequence-parallel loss (`if args.sequence_parallel_size > 1:`, default 1) and its clip
    (`args.clip_grad_norm > 0`, default -1) never run: the loss row is the model's own, and there is no clip
    row. Judged only where the command alone sets the fields (no config file parsed)."""
    root = repo_with(tmp_path, {"train.py": HF_BRANCHES})
    a = analyze_script(root / "train.py")
    rows = {x.role: x.line for x in a.anchors}
    assert rows["loss"] == lines(root / "train.py", "loss = outputs.loss") and "grad_clip" not in rows
    yaml = HF_BRANCHES.replace("parse_args_into_dataclasses()", "parse_yaml_file('conf.yaml')")
    (root / "train.py").write_text(yaml)
    rows = {x.role: x.line for x in analyze_script(root / "train.py").anchors}
    assert rows["loss"] == lines(root / "train.py", "loss = sum(parts)") and "grad_clip" in rows
