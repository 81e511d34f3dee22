"""`check --repo`: a run line held against the job's code. One fixture per rule, each able to fail."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_repo

from wamf_tui.propose.validate import check_run
from wamf_tui.propose.wrapper import WRAPPER
from wamf_tui.wording import system_label

WAMF = str(Path(sys.executable).parent / "wamf-tui")
LOOP = "for step in range(10):\n    loss = model(x)\n    loss.backward()\n    opt.step()\n"
ARGS = ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr', type=float, default=1e-3)\n"
        "p.add_argument('--learning_steps', type=int, default=5)\np.add_argument('--compile', action='store_true')\n"
        "args = p.parse_args()\n")
CONFIGURATOR = "batch_size = 12\nmax_iters = 5000\nexec(open('configurator.py').read())\n"


def problems(tmp_path: Path, files: dict[str, str], run: str) -> list[str]:
    root = make_repo(tmp_path / "job", files)
    return check_run(run, root).problems


@pytest.mark.parametrize(("run", "expected"), [
    ("python train.py --lr 3e-4 --compile", []),
    ("python train.py --learning_s 7", []),  # an unambiguous prefix, as argparse takes it
    ("python train.py --lr=3e-4 --max_steps 30", ["--max_steps is not an option of train.py"]),
    ("python train.py --l 1", ["--l is not an option of train.py (could be --lr, --learning_steps)"]),
])
def test_argparse_flags_must_exist(tmp_path, run, expected):
    assert problems(tmp_path, {"train.py": ARGS + LOOP}, run) == expected


@pytest.mark.parametrize(("run", "expected"), [
    ("python train.py --max_iters=30 --batch_size=12", []),
    ("python train.py --max_iters 30", ["--max_iters: the configurator takes --key=value only"]),
    ("python train.py --master_process=x", ["--master_process is not a setting of train.py"]),
])
def test_an_exec_configurator_takes_its_globals_as_key_value(tmp_path, run, expected):
    files = {"train.py": CONFIGURATOR + LOOP, "configurator.py": "# --key=value\n"}
    assert problems(tmp_path, files, run) == expected


ABSL = ("from absl import app, flags\nFLAGS = flags.FLAGS\nflags.DEFINE_integer('max_steps', 1000, 'Steps.')\n"
        "flags.DEFINE_bool('use_wandb', False, 'Log.')\nflags.mark_flag_as_required('data_dir')\n"
        "flags.DEFINE_string('data_dir', None, 'Data.')\ndef main(argv):\n    " + LOOP.replace("\n", "\n    ")[:-4]
        + "if __name__ == '__main__':\n    app.run(main)\n")
CLICK = ("import click\n@click.command()\n@click.argument('data')\n@click.option('--max-steps', '-n', default=9)\n"
         "@click.option('--wandb/--no-wandb', default=False)\n@click.option('--model', required=True)\n"
         "def main(data, max_steps, wandb, model):\n"
         + "    " + LOOP.replace("\n", "\n    ")[:-4] + "if __name__ == '__main__':\n    main()\n")


@pytest.mark.parametrize(("source", "run", "expected"), [
    (ABSL, "python train.py --data_dir=/d --max_steps=30 --nouse_wandb", []),
    (ABSL, "python train.py --data_dir=/d --max-steps=30", ["--max-steps is not an option of train.py (absl)"]),
    (ABSL, "python train.py --max_steps=30", ["train.py requires --data_dir"]),
    (CLICK, "python train.py /d --max-steps=30 --no-wandb --model m", []),
    (CLICK, "python train.py /d --max_steps 30 --model m", ["--max_steps is not an option of train.py (click)"]),
    (CLICK, "python train.py --model m", ["train.py requires the positional argument data"]),
    (CLICK, "python train.py /d", ["train.py requires --model"]),
])
def test_click_and_absl_refuse_options_they_do_not_define(tmp_path, source, run, expected):
    got = problems(tmp_path, {"train.py": source}, run)
    assert [p.split(";")[0] for p in got] == expected


def test_rank_variables_need_the_torchrun_family(tmp_path):
    files = {"train.py": "import os\nrank = int(os.environ['LOCAL_RANK'])\n" + LOOP}
    assert problems(tmp_path / "a", files, "torchrun --standalone --nproc_per_node=2 train.py") == []
    said = problems(tmp_path / "b", files, "python train.py")
    assert said == ["train.py reads LOCAL_RANK with no default (train.py:2); python sets no rank variables: "
                    "start it with torchrun"]


def test_required_inputs_and_a_missing_entry(tmp_path):
    files = {"train.py": ARGS.replace("default=1e-3", "required=True") + LOOP}
    assert problems(tmp_path / "a", files, "python train.py") == ["train.py requires --lr"]
    assert problems(tmp_path / "b", files, "python trian.py --lr 1") == ["trian.py is not a file of the repo"]
    assert problems(tmp_path / "c", files, "echo hi") == [
        "the run line starts no Python job (no python, launcher or console script)"]


def test_what_the_code_cannot_prove_is_a_warning(tmp_path):
    root = make_repo(tmp_path / "job", {"train.py": ARGS.replace("p.parse_args()", "p.parse_known_args()[0]")
                                        + LOOP})
    verdict = check_run("python train.py --anything 1", root)
    assert verdict.problems == []
    assert verdict.warnings == ["--anything: not declared, and train.py reads its flags with parse_known_args "
                                "(unknown flags pass)"]


def test_the_job_behind_the_wrapper_is_checked(tmp_path):
    root = make_repo(tmp_path / "job", {"train.py": ARGS + LOOP})
    wrapper = tmp_path / "wamf_bench.py"
    wrapper.write_text(WRAPPER)
    assert check_run(f"WAMF_MAX_STEPS=30 python {wrapper} train.py --lr 1", root).problems == []
    assert check_run(f"python {wrapper} train.py --nope 1", root).problems == ["--nope is not an option of train.py"]
    wrapper.unlink()
    assert check_run(f"python {wrapper} train.py", root).problems == [
        f"the benchmark wrapper {wrapper} does not exist"]


def contract_with(run: str) -> str:
    from wamf_tui.contract import render as contract
    from wamf_tui.model import InitState

    state = InitState(reader="MLSys engineer", repo="/r (main @ abc)", activate="source .venv/bin/activate",
                      run=run, node="gpu01")
    return contract.render(state, contract.load_template(None))


def check_repo(tmp_path: Path, root: Path, good: str, bad: str) -> tuple[subprocess.CompletedProcess, Path]:
    """`wamf-tui check --repo` on a contract with the `good` run line (it must pass) and one with `bad`: the
    latter's result, and its contract."""
    good_md, bad_md = tmp_path / "good.md", tmp_path / "bad.md"
    good_md.write_text(contract_with(good))
    bad_md.write_text(contract_with(bad))
    ok = subprocess.run([WAMF, "check", str(good_md), "--repo", str(root)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout
    return subprocess.run([WAMF, "check", str(bad_md), "--repo", str(root)], capture_output=True, text=True), bad_md


def test_check_repo_on_the_command_line(tmp_path):
    root = make_repo(tmp_path / "job", {"train.py": ARGS + LOOP})
    no, bad = check_repo(tmp_path, root, "python train.py --lr 3e-4", "python train.py --max_steps 30")
    assert no.returncode == 1
    assert f"{bad}:" in no.stdout and "run: --max_steps is not an option of train.py" in no.stdout
    plain = subprocess.run([WAMF, "check", str(bad)], capture_output=True, text=True)
    assert plain.returncode == 0  # without --repo only the downstream rules apply


def test_check_repo_reads_a_console_subcommands_recipe_as_the_app_does(tmp_path):
    """`tool run recipe --bogus 1`: the console script from pyproject.toml, and the recipe its `run` subcommand
    names among the repo's scripts, so the flags are held against the recipe's parser, as the app held them."""
    dispatcher = ("import sys\nimport argparse\n\ndef main():\n    p = argparse.ArgumentParser()\n"
                  "    sub = p.add_subparsers()\n    r = sub.add_parser('run')\n    r.add_argument('recipe')\n"
                  "    p.parse_known_args()\n")
    root = make_repo(tmp_path / "job", {
        "pyproject.toml": '[project]\nname = "tool"\n[project.scripts]\ntool = "pkg.cli:main"\n',
        "pkg/__init__.py": "", "pkg/cli.py": dispatcher, "recipes/recipe.py": ARGS + LOOP})
    no, _ = check_repo(tmp_path, root, "tool run recipe --lr 3e-4", "tool run recipe --bogus 1")
    assert "run: --bogus is not an option of recipe.py" in no.stdout and no.returncode == 1


def test_yes_writes_no_contract_whose_run_line_fails(tmp_path):
    root = make_repo(tmp_path / "job", {"train.py": ARGS + LOOP})
    answers = tmp_path / "a.json"
    answers.write_text(json.dumps({"reader": "MLSys engineer", "run": "python train.py --max_steps 30"}))
    out = subprocess.run([WAMF, str(root), "--answers", str(answers), "--yes"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 1 and "run: --max_steps is not an option of train.py" in out.stderr
    assert not (root / "contract.md").exists()


@pytest.mark.parametrize(("library", "call", "flag"), [
    ("from jsonargparse import CLI", "CLI(main)", "--out_dir"),
    ("import fire", "fire.Fire(main)", "--out_dir"),
    ("import typer", "typer.run(main)", "--out-dir"),
    ("import tyro", "tyro.cli(main)", "--out-dir"),
])
def test_a_cli_made_from_a_functions_parameters_has_those_flags(tmp_path, library, call, flag):
    from wamf_tui.propose.benchmark import propose
    from wamf_tui.read.analyze import analyze_script

    body = (f"{library}\nimport torch\n\ndef main(data_dir: str = 'data', out_dir: str = 'out', max_iters: int = 600,"
            " seed: int = 1337):\n    for i in range(max_iters):\n        loss = model(x)\n        loss.backward()\n"
            f"        opt.step()\n\nif __name__ == '__main__':\n    {call}\n")
    root = make_repo(tmp_path / "job", {"train.py": body})
    a = analyze_script(root / "train.py", root)
    rows = {c.what: c.how for c in propose(a)}
    steps = flag.replace("out-dir", "max-iters").replace("out_dir", "max_iters")
    assert rows["total steps cut to 30 (was 600)"] == f"{steps}=30"
    assert rows["all outputs into one folder"] == f"{flag}=$WAMF_OUT"
    assert rows["seeds pinned"] == flag.replace("out", "seed").replace("_dir", "").replace("-dir", "") + "=0"
    ok = check_run(f"python train.py {flag}=runs/x {steps}=30", root, a)
    assert ok.problems == [] and ok.warnings == []
    typo = check_run(f"python train.py {flag}s=runs/x", root, a)
    said = (f"{flag}s is not among the parameters (or dataclass fields) train.py's {system_label(a.config_system)} "
            "is made from")
    assert (typo.problems, typo.warnings) == ([said], [])  # fire too: "Could not consume arg"


def test_a_fire_function_with_kwargs_takes_any_flag_so_none_is_proven(tmp_path):
    """`fire.Fire(main)` over `main(**kwargs)`: an unknown name is taken (and may be ignored), so a flag it
    does not name is said, not refused, and the app adds none it cannot prove."""
    from wamf_tui.read.analyze import analyze_script
    from wamf_tui.read.settings import accepts

    body = ("import fire\nimport torch\n\ndef main(max_iters: int = 600, **kwargs):\n"
            "    for i in range(max_iters):\n        loss = model(x)\n        loss.backward()\n        opt.step()\n\n"
            "if __name__ == '__main__':\n    fire.Fire(main)\n")
    root = make_repo(tmp_path / "job", {"train.py": body})
    a = analyze_script(root / "train.py", root)
    assert (accepts(a, "--max_iters=3"), accepts(a, "--report_to none")) == ("proven", "unknown")
    typo = check_run("python train.py --max_iterz=3", root, a)
    assert typo.problems == [] and typo.warnings == [
        "--max_iterz is not among the parameters (or dataclass fields) train.py's fire is made from"]


TYRO = """\
import dataclasses
import torch
import tyro

@dataclasses.dataclass
class Optim:
    lr: float = 3e-4
    weight_decay: float = 0.1

@dataclasses.dataclass
class Config:
    max_steps: int = 1000
    out_dir: str = "out"
    optim: Optim = dataclasses.field(default_factory=Optim)

def main(cfg: Config):
    for step in range(cfg.max_steps):
        loss = model(x)
        loss.backward()
        opt.step()

if __name__ == "__main__":
    {call}
"""


@pytest.mark.parametrize(("call", "group"), [("main(tyro.cli(Config))", ""), ("tyro.cli(main)", "cfg.")])
def test_a_tyro_config_is_read_as_nested_groups(tmp_path, call, group):
    """`tyro.cli(Config)`: its fields are the flags, a dataclass-typed field a group (`--optim.weight-decay`);
    `tyro.cli(main)` with `cfg: Config` puts them under `--cfg.`."""
    from wamf_tui.propose.benchmark import propose
    from wamf_tui.read.analyze import analyze_script

    root = make_repo(tmp_path / "job", {"train.py": TYRO.replace("{call}", call)})
    a = analyze_script(root / "train.py", root)
    assert [f for c in propose(a) for f in c.flags] == [f"--{group}max-steps=30", f"--{group}out-dir=$WAMF_OUT"]
    assert check_run(f"python train.py --{group}optim.weight-decay 0.05", root, a).problems == []
    said = check_run(f"python train.py --{group}optim.decay 0.05", root, a).problems
    assert said == [f"--{group}optim.decay is not among the parameters (or dataclass fields) train.py's tyro is "
                    "made from"]


@pytest.mark.parametrize("importing", ["from pkg.args import EvalArgs, TrainArgs",
                                       "from .args import EvalArgs, TrainArgs"])
def test_a_functions_dataclass_groups_are_read_from_the_module_it_imports_them_from(tmp_path, importing):
    """jsonargparse's `CLI(setup)` with `train: TrainArgs = TrainArgs(save_interval=1000)`, the class in another
    module of the repo: `--train.*` and `--eval.*` are the flags, the instance's keywords their defaults."""
    from wamf_tui.propose.benchmark import propose
    from wamf_tui.read.analyze import analyze_script

    args = ("from dataclasses import dataclass\n\n@dataclass\nclass TrainArgs:\n    save_interval: int = 5\n"
            "    max_steps: int | None = None\n\n@dataclass\nclass EvalArgs:\n    interval: int = 600\n")
    entry = (f"{importing}\nfrom jsonargparse import CLI\nimport torch\n\n"
             "def setup(out_dir: str = 'out', train: TrainArgs = TrainArgs(save_interval=1000, max_steps=600),\n"
             "          eval: EvalArgs = EvalArgs()):\n    for step in range(train.max_steps):\n"
             "        loss = model(x)\n        loss.backward()\n        opt.step()\n"
             "        if step % train.save_interval == 0:\n            torch.save(model, 'ckpt.pt')\n\n"
             "if __name__ == '__main__':\n    CLI(setup)\n")
    root = make_repo(tmp_path / "job", {"pkg/__init__.py": "", "pkg/args.py": args, "pkg/pretrain.py": entry})
    a = analyze_script(root / "pkg/pretrain.py", root)
    assert {f: a.flags.get(f) for f in ("--train.save_interval", "--train.max_steps", "--eval.interval")} == {
        "--train.save_interval": "1000", "--train.max_steps": "600", "--eval.interval": "600"}
    rows = {c.what: c.how for c in propose(a)}
    assert rows["total steps cut to 30 (was 600)"] == "--train.max_steps=30"
    # the save's interval is the group's flag; `step % n == 0` still fires at step 0
    assert rows["torch.save (pkg/pretrain.py:12) still runs once, at step 0 (step % train.save_interval == 0 is true "
                "at 0)"] == "--train.save_interval=1000000000"
    assert check_run("python -m pkg.pretrain --train.max_steps=30 --eval.interval=9", root, a).problems == []
    assert check_run("python -m pkg.pretrain --train.max_step=30", root, a).problems == [
        "--train.max_step is not among the parameters (or dataclass fields) pretrain.py's jsonargparse CLI is made "
        "from"]


ONMT_OPTS = ("def train_opts(parser):\n    group = parser.add_argument_group('Model')\n"
             "    group.add('-layers', '--layers', type=int, default=2)\n"
             "    group.add('-train_steps', '--train_steps', type=int, default=100000)\n")
ONMT_TRAIN = ("import configargparse\nfrom opts import train_opts\n\n\ndef main():\n"
              "    parser = configargparse.ArgumentParser()\n    train_opts(parser)\n"
              "    opt, unknown = parser.parse_known_args()\n{use}    train(opt)\n\n\n"
              "if __name__ == '__main__':\n    main()\n")


@pytest.mark.parametrize(("use", "run", "expected"), [
    ("", "python train.py -layers 2 -train_steps 30", []),
    ("", "python train.py -layers 2 -rnn_size 200", ["-rnn_size is not an option of train.py"]),
    ("", "python train.py --rnn_size=200", ["--rnn_size is not an option of train.py"]),
    ("    rest(unknown)\n", "python train.py -layers 2 -rnn_size 200", []),  # the rest goes on: not refused
])
def test_configargparse_groups_declare_options_and_an_unread_rest_drops_unknown_flags(tmp_path, use, run, expected):
    """OpenNMT-py: options declared with configargparse's `group.add('-x', '--x')` in a module the entry imports,
    parsed with `opt, unknown = parse_known_args()` and `unknown` never read: an old docs command's `-rnn_size`
    is dropped silently, so it is refused, not taken on the docs' word. Where the rest is handed on, it may be
    another parser's."""
    files = {"opts.py": ONMT_OPTS, "train.py": ONMT_TRAIN.format(use=use) + "def train(opt):\n" +
             "\n".join("    " + line for line in LOOP.splitlines()) + "\n"}
    assert problems(tmp_path, files, run) == expected


ACCELERATED = ("import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator()\n"
               "model, opt = accelerator.prepare(torch.nn.Linear(2, 1), torch.optim.SGD([], lr=0.1))\n"
               "for step in range(10):\n    loss = model(x).sum()\n    accelerator.backward(loss)\n    opt.step()\n")


@pytest.mark.parametrize("run", ["python -m pkg.train", "python pkg/train.py"])
def test_an_accelerator_run_by_python_alone_is_refused_as_module_or_script(tmp_path, run):
    """`python -m` runs an `Accelerator` as one fp32 process just as `python` does: both are refused."""
    got = problems(tmp_path, {"pkg/__init__.py": "", "pkg/train.py": ACCELERATED}, run)
    assert any("use accelerate launch" in p for p in got), got
    assert problems(tmp_path / "b", {"pkg/__init__.py": "", "pkg/train.py": ACCELERATED},
                    "accelerate launch -m pkg.train") == []


def test_a_config_file_the_run_line_names_must_be_there(tmp_path):
    """OpenNMT-py's quickstart runs `-config toy_en_de.yaml`, a file the user writes from the page: a run line
    naming it, or a folder path the repo lacks, is refused with the file's name; a bare name the repo holds
    elsewhere the job may find itself (yolov5's `--data coco.yaml`)."""
    from wamf_tui.model import LaunchCommand

    root = make_repo(tmp_path / "r", {"train.py": "import argparse\np = argparse.ArgumentParser()\n"
                                      "p.add_argument('--config')\np.parse_args()\n", "data/coco.yaml": "a: 1\n"})
    job = LaunchCommand(command="python train.py --config toy.yaml", launcher="python", script="train.py",
                        path="train.py", args=["--config", "toy.yaml"], absent=["toy.yaml"])
    assert check_run("python train.py --config toy.yaml", root, job=job).problems == [
        "toy.yaml: named by the run line but not in the repo; give its path"]
    assert check_run("python train.py --config conf/x.yaml", root).problems == [
        "conf/x.yaml: named by the run line but not in the repo; give its path"]
    assert check_run("python train.py --config coco.yaml", root).problems == []
    assert check_run("python train.py --config data/coco.yaml", root).problems == []


DATA_ARGS = ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--input_bin', default='')\n"
             "p.add_argument('--dump_bin', default='')\nargs = p.parse_args()\n")


def test_data_the_run_line_names_by_a_relative_path_that_matches_nothing_is_refused(tmp_path):
    files = {"train.py": DATA_ARGS + LOOP}
    said = problems(tmp_path / "a", files, "python train.py --input_bin 'data/shards/train_*.bin'")
    assert said == ["data/shards/train_*.bin: named by the run line but not in the repo; give its path"]
    there = {**files, "data/shards/train_000.bin": "x"}
    assert problems(tmp_path / "b", there, "python train.py --input_bin 'data/shards/train_*.bin'") == []
    assert problems(tmp_path / "c", files, "python train.py --dump_bin runs/x/acts.bin") == []  # an output
