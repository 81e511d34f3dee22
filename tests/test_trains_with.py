"""An entry that trains only under a switch that defaults to off (`if opt.train: trainer.fit(...)`): the run
line gives the switch, the check refuses a line without it, and no row is switched off by leaving it out."""

from __future__ import annotations

from conftest import make_repo

from wamf_tui.model import InitState
from wamf_tui.propose.benchmark import propose
from wamf_tui.propose.run_line import run_command
from wamf_tui.propose.validate import check_run
from wamf_tui.read.analyze import analyze_script

MAIN = """\
import argparse
import pytorch_lightning as pl


def get_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("-t", "--train", type=str2bool, const=True, default=False, nargs="?")
    parser.add_argument("--no-test", action="store_true")
    return parser


if __name__ == "__main__":
    opt = get_parser().parse_args()
    trainer = pl.Trainer(max_steps=1000)
    if opt.train:
        try:
            trainer.fit(model, data)
        except Exception:
            trainer.save_checkpoint("last.ckpt")
            raise
    if not opt.no_test:
        trainer.test(model, data)
"""


def state_of(root, a) -> InitState:
    state = InitState(repo_path=str(root), contract_path=str(root / "c.md"), script=a.script, analysis=a)
    return state.model_copy(update={"changes": propose(a, 30, "speed", [])})


def test_the_switch_training_runs_under_is_given_and_checked(tmp_path):
    root = make_repo(tmp_path / "job", {"main.py": MAIN})
    a = analyze_script(root / "main.py", root, [])
    need = next(n for n in a.needs if n.code == "trains_with")
    assert (need.words, need.spellings, need.line) == (["--train"], ["-t", "--train"], 17)
    assert "--train" in run_command(state_of(root, a)).split()
    assert not any(c.off_switch for c in a.checkpoints)  # leaving --train out is no way to skip the save
    assert check_run("python main.py --no-test", root, a).problems == [
        "main.py trains only with --train given (main.py:17): the command would train nothing"]
    assert check_run("python main.py -t --no-test", root, a).problems == []


def test_a_switch_that_takes_a_value_is_given_one_and_a_default_on_switch_is_no_need(tmp_path):
    typed = MAIN.replace('type=str2bool, const=True, default=False, nargs="?"', "type=bool, default=False")
    root = make_repo(tmp_path / "job", {"main.py": typed})
    a = analyze_script(root / "main.py", root, [])
    assert [n.words for n in a.needs if n.code == "trains_with"] == [["--train", "True"]]
    assert "--train True" in run_command(state_of(root, a))
    on = MAIN.replace("default=False", "default=True")
    root = make_repo(tmp_path / "on", {"main.py": on})
    assert not [n for n in analyze_script(root / "main.py", root, []).needs if n.code == "trains_with"]


HF = """\
from dataclasses import dataclass, field
from transformers import HfArgumentParser, Seq2SeqTrainer, Seq2SeqTrainingArguments


@dataclass
class DataArguments:
    train_file: str = field(default="train.json")


def main():
    parser = HfArgumentParser((DataArguments, Seq2SeqTrainingArguments))
    data_args, training_args = parser.parse_args_into_dataclasses()
    trainer = Seq2SeqTrainer(model=model, args=training_args)
    if training_args.do_train:
        trainer.train()
    if training_args.do_eval:
        trainer.evaluate()


if __name__ == "__main__":
    main()
"""


def test_an_hf_job_that_trains_only_with_do_train_is_given_it(tmp_path):
    """ChatGLM's ptuning/main.py: `if training_args.do_train: trainer.train()`, and TrainingArguments' do_train
    defaults to False: without `--do_train` the job evaluates or does nothing."""
    root = make_repo(tmp_path / "job", {"main.py": HF})
    a = analyze_script(root / "main.py", root, [])
    assert [(n.code, n.words, n.line) for n in a.needs] == [("trains_with", ["--do_train"], 15)]
    assert "--do_train" in run_command(state_of(root, a)).split()
    assert check_run("python main.py --output_dir o --do_train", root, a).problems == []


STEPS = """\
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(torch.randn(64, 4), batch_size=2)
    for x in loader:
        loss = model(x).sum()
        loss.backward()
        opt.step()
"""  # a training loop of a function, indented in it

DO_TRAIN = """\
import argparse
import torch

p = argparse.ArgumentParser()
p.add_argument("--do_train", type=bool, default=True)
p.add_argument("--do_eval", type=bool, default=True)
args = p.parse_args()
model = torch.nn.Linear(4, 4)


def train():
""" + STEPS + """

if args.do_train:
    train()
    torch.save(model.state_dict(), "state.pt")
if args.do_eval:
    torch.save(model.state_dict(), "eval.pt")
"""


def test_a_switch_that_also_guards_the_training_is_never_a_saves_way_off(tmp_path):
    root = make_repo(tmp_path / "job", {"train.py": DO_TRAIN})
    a = analyze_script(root / "train.py", root, [])
    offs = {c.line: c.off_switch for c in a.checkpoints}
    assert offs[22] is None  # `--do_train False` would switch the training off with the save
    assert offs[24] is not None and offs[24].startswith("--do_eval")  # a switch around the save alone
    assert "--do_train" not in run_command(state_of(root, a))


LATE_SEED = """\
import argparse
import torch

p = argparse.ArgumentParser()
p.add_argument("--seed", type=int, default=42)


def main():
    args = p.parse_args()
    model = torch.nn.Linear(4, 4)
    torch.manual_seed(args.seed)
""" + STEPS + """

main()
"""


def test_a_seed_call_after_the_model_is_built_is_joined_by_the_wrappers_seed(tmp_path):
    root = make_repo(tmp_path / "late", {"train.py": LATE_SEED})
    a = analyze_script(root / "train.py", root, [])
    seed = next(c for c in propose(a, 30, "speed", []) if c.what == "seeds pinned")
    assert (seed.flags, seed.env) == (["--seed=0"], ["WAMF_SEED=0"])  # the Linear's weights are drawn before it
    early = LATE_SEED.replace("    model = torch.nn.Linear(4, 4)\n    torch.manual_seed(args.seed)\n",
                              "    torch.manual_seed(args.seed)\n    model = torch.nn.Linear(4, 4)\n")
    root = make_repo(tmp_path / "early", {"train.py": early})
    seed = next(c for c in propose(analyze_script(root / "train.py", root, []), 30, "speed", [])
                if c.what == "seeds pinned")
    assert (seed.flags, seed.env) == (["--seed=0"], [])
