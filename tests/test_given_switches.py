"""A switch the docs' command turns on (`--do_mmlu_eval`, `--use_ema`): one named for evaluation is dropped with
its eval, any other stays and its row says the feature runs, never that it is left out."""

from __future__ import annotations

from conftest import make_repo

from wamf_tui.propose.benchmark import propose
from wamf_tui.read.analyze import analyze_script

JOB = """\
import argparse
import torch
from transformers import Trainer


class MMLUEvalCallback:
    pass


p = argparse.ArgumentParser()
p.add_argument("--do_mmlu_eval", action="store_true")
p.add_argument("--use_ema", action="store_true")
args = p.parse_args()
model = torch.nn.Linear(4, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
trainer = Trainer(model=model)
if args.do_mmlu_eval:
    trainer.add_callback(MMLUEvalCallback)
loader = torch.utils.data.DataLoader(torch.randn(64, 4), batch_size=2)
for x in loader:
    loss = model(x).sum()
    loss.backward()
    opt.step()
    if args.use_ema:
        torch.save(model.state_dict(), "ema.pt")
"""


def test_an_eval_switch_the_command_gives_is_dropped_and_another_switch_runs_what_it_guards(tmp_path):
    root = make_repo(tmp_path / "job", {"train.py": JOB})
    command = ["--do_mmlu_eval", "--use_ema"]
    a = analyze_script(root / "train.py", root, command)
    assert [(e.name, e.unset) for e in a.evals if e.name == "MMLUEvalCallback"] == [("MMLUEvalCallback",
                                                                                     "--do_mmlu_eval")]
    rows = propose(a, 30, "speed", command)
    mmlu = next(c for c in rows if "MMLUEvalCallback" in c.what)
    assert mmlu.drop == ["--do_mmlu_eval"] and mmlu.off
    ema = next(c for c in rows if c.kind == "save" and c.sites == ["train.py:25"])
    assert not ema.off and ema.drop == [] and "left out" not in (ema.exclusion or "")  # it runs: said so
