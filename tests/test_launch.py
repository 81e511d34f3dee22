"""The job is a command: found where the repo writes it, read as a shell would, fixed to give the
entry what it needs, and refused when the job's parser would refuse it. One fixture repo per idiom."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_repo

from wamf_tui import answers, flow
from wamf_tui.detect.launch import console_scripts, parse_launch
from wamf_tui.detect.run import detect_all
from wamf_tui.detect.scripts import scan_scripts
from wamf_tui.detect.shell import commands_in, shell_defaults
from wamf_tui.model import GpuFacts, HardwareFacts, Step
from wamf_tui.propose import proposals
from wamf_tui.propose.run_line import wrapper_path
from wamf_tui.propose.validate import check_run
from wamf_tui.read.analyze import analyze_script
from wamf_tui.session import store as session

TRAIN = "import torch\nfor step in range(100):\n    loss = model(x)\n    loss.backward()\n    optimizer.step()\n"
ARGPARSE = "import argparse\np = argparse.ArgumentParser()\n{args}args = p.parse_args()\n"
WAMF = str(Path(sys.executable).parent / "wamf-tui")


def walk(tmp_path: Path, files: dict[str, str], data: dict | None = None, gpus: int = 0):
    """Detect a fixture repo and walk the flow on its proposals (and `data`), as `--answers` does."""
    root = make_repo(tmp_path / "job", files)
    detected = detect_all(root)
    if gpus:
        detected.hardware = HardwareFacts(host="gpu01", nvml=True, gpus=[
            GpuFacts(index=i, name="H100", memory_used_mib=0, memory_total_mib=81559, utilization=0)
            for i in range(gpus)])
    state = session.new_state(root, None, None).model_copy(update={"detected": detected})
    state, refused = answers.fill(state, data or {})
    return root, state, refused


def run_of(root: Path, state) -> str:
    return state.run.replace(str(root), "ROOT")


BENCH = "WAMF_MAX_STEPS=30 WAMF_SEED=0 WAMF_OUT=ROOT.wamf-bench"


def test_a_readme_in_a_subfolder_runs_from_its_folder_with_its_launcher(tmp_path):
    root, state, refused = walk(tmp_path, {
        "examples/x/README.md": "Train:\n\n```bash\naccelerate launch --mixed_precision=fp16 train_x.py \\\n"
                                "  --dataset_name foo\n```\n",
        "examples/x/train_x.py": ARGPARSE.format(args="p.add_argument('--dataset_name', required=True)\n") + TRAIN,
    })
    assert refused == []
    assert state.command == "cd examples/x && accelerate launch --mixed_precision=fp16 train_x.py --dataset_name foo"
    assert state.script == "examples/x/train_x.py"
    assert run_of(root, state) == (f"cd examples/x && {BENCH} accelerate launch --mixed_precision=fp16 "
                                   "ROOT/wamf_bench.py train_x.py --dataset_name foo")


def test_a_cd_inside_a_snippet_and_the_scripts_own_folder(tmp_path):
    exists = {"examples/x/train_x.py", "train.py"}.__contains__
    got = parse_launch("cd examples/x && python train_x.py", exists=exists)
    assert (got.command, got.path, got.cwd) == ("cd examples/x && python train_x.py", "examples/x/train_x.py",
                                                "examples/x")
    got = parse_launch('cd "$(dirname "$0")/.." && python train.py', where="scripts", exists=exists)
    assert (got.command, got.path) == ("python train.py", "train.py")



def test_oldpwd_names_the_folder_the_line_left():
    """The benchmark's run from a folder outside the checkout names the checkout's files by `$OLDPWD`: read
    back, the entry is the checkout's file and the line prints as written; from a folder inside, as a path."""
    exists = {"projects/char/train.py", "conf/one.yaml"}.__contains__
    line = ('mkdir -p /x/job.wamf-bench && cd /x/job.wamf-bench && PYTHONPATH="$OLDPWD" accelerate launch '
            '--config_file "$OLDPWD"/conf/one.yaml "$OLDPWD"/projects/char/train.py --data "$OLDPWD"/conf')
    got = parse_launch(line, exists=exists)
    assert (got.path, got.cwd, got.script, got.env) == ("projects/char/train.py", "/x/job.wamf-bench",
                                                        "$OLDPWD/projects/char/train.py", ["PYTHONPATH=$OLDPWD"])
    assert got.command == line.split(" && ", 1)[1]
    inside = parse_launch('cd projects && cd char && python "$OLDPWD"/../conf/one.yaml.py', exists=exists)
    assert inside is not None and inside.script == "../../conf/one.yaml.py"
    back = parse_launch('cd projects/char && cd ../.. && python "$OLDPWD"/train.py', exists=exists)
    assert (back.path, back.script) == ("projects/char/train.py", "projects/char/train.py")

def test_a_shell_script_gives_its_defaults_and_drops_its_own_arguments(tmp_path):
    root, state, refused = walk(tmp_path, {
        "scripts/train.sh": 'NGPU=${NGPU:-4}\ntorchrun --nproc_per_node=$NGPU train.py --lr 3e-4 "$@"\n',
        "train.py": ARGPARSE.format(args="p.add_argument('--lr')\n") + TRAIN,
    })
    assert state.command == "torchrun --nproc_per_node=4 train.py --lr 3e-4"
    assert run_of(root, state) == f"{BENCH} torchrun --nproc_per_node=4 ROOT/wamf_bench.py train.py --lr 3e-4"


def test_a_quoted_readme_command_with_capitals_for_what_the_reader_fills_in():
    """stylegan2's README: `> python -m torch.distributed.launch --nproc_per_node=N_GPU --master_port=PORT train.py
    --batch BATCH_SIZE LMDB_PATH`, a markdown quote, not a code block. The capitals naming a path, size, count or
    port are the reader's to fill: left out and said. A prose quote is no command; a yacs key (`OUTPUT_DIR /out`),
    a variable (`${NGPU}`) and other capitals stay the command's own."""
    readme = ("# x\n\n> Note: python is needed\n\n> python -m torch.distributed.launch --nproc_per_node=N_GPU "
              "--master_port=PORT train.py --batch BATCH_SIZE LMDB_PATH\n")
    assert commands_in("README.md", readme) == [(5, readme.splitlines()[4].lstrip("> "))]
    got = parse_launch(commands_in("README.md", readme)[0][1], "README.md:5", "", {}, {}, {"train.py"}.__contains__)
    assert (got.path, got.args, got.left_out) == ("train.py", [], ["--batch BATCH_SIZE", "LMDB_PATH"])
    assert got.unresolved == ["N_GPU", "PORT", "BATCH_SIZE", "LMDB_PATH"]
    kept = parse_launch("python train.py --config-file a.yaml OUTPUT_DIR /out MODE ALL", "README.md:1", "", {}, {},
                        {"train.py"}.__contains__)
    assert kept.args == ["--config-file", "a.yaml", "OUTPUT_DIR", "/out", "MODE", "ALL"] and kept.unresolved == []
    assert parse_launch("NGPU=2; torchrun --nproc_per_node=${NGPU} train.py", "README.md:1").nproc_per_node == 2


def test_a_relative_import_that_runs_at_import_makes_the_entry_a_module(tmp_path):
    """`from .utils import x` at the top of pkg/train.py fails when it runs as a file: it runs as a module. One
    inside a function (SimCSE's copied `if self.deepspeed: from .integrations import ...`) fails only if that
    branch runs, and is no reason to."""
    top = "from .utils import x\n" + TRAIN
    inner = TRAIN + "\ndef setup(deepspeed):\n    if deepspeed:\n        from .integrations import y\n"
    for body, needed in ((top, True), (inner, False)):
        root = make_repo(tmp_path / str(needed), {"pkg/__init__.py": "", "pkg/utils.py": "x = 1\n",
                                                  "pkg/train.py": body})
        needs = [n.code for n in analyze_script(root / "pkg/train.py", root).needs]
        assert ("package" in needs) is needed


def test_a_variable_the_script_never_sets_is_never_pasted_in():
    got = parse_launch("torchrun --nproc_per_node ${NGPU:-4} train.py --data $DATA --x 1 $EXTRA",
                       exists={"train.py"}.__contains__)
    assert got.command == "torchrun --nproc_per_node 4 train.py --x 1"
    assert got.unresolved == ["DATA", "EXTRA"] and got.nproc_per_node == 4
    assert shell_defaults("NGPU=${NGPU:-8}\nexport LR=3e-4\nA=$LR\n") == {"NGPU": "8", "LR": "3e-4", "A": "3e-4"}


def test_sbatch_files_give_srun_and_its_options(tmp_path):
    root = make_repo(tmp_path / "r", {
        "launch.sbatch": "#!/bin/bash\n#SBATCH -N 2\nsrun -N 2 --ntasks-per-node=8 python scripts/pretrain.py \\\n"
                         "  --cfg a\n",
        "scripts/pretrain.py": TRAIN,
    })
    top = scan_scripts(root).candidates[0]
    assert top.path == "scripts/pretrain.py"
    assert top.launch.command == "srun -N 2 --ntasks-per-node=8 python scripts/pretrain.py --cfg a"
    assert (top.launch.launcher, top.launch.nnodes, top.launch.nproc_per_node) == ("srun python", 2, 8)


@pytest.mark.parametrize(("command", "launcher", "entry"), [
    ("python -m torch.distributed.run --standalone --nproc_per_node 2 train.py", "torchrun", "train.py"),
    ("deepspeed --num_gpus 8 train.py --deepspeed ds.json", "deepspeed", "train.py"),
    ("CUDA_VISIBLE_DEVICES=0,1 python -u train.py", "python", "train.py"),
    ("torchrun --nproc_per_node=2 -m pkg.train --x 1", "torchrun", "pkg/train.py"),
    ("mpirun -np 4 python train.py", "mpirun python", "train.py"),
])
def test_launchers_and_their_options(command, launcher, entry):
    got = parse_launch(command, exists={"train.py", "pkg/train.py"}.__contains__)
    assert (got.launcher, got.path, got.command) == (launcher, entry, command)


def test_not_a_job():
    exists = {"train.py"}.__contains__
    assert parse_launch("pip install -e .", exists=exists) is None
    assert parse_launch("python setup.py install", exists=exists).path is None


def test_a_console_script_runs_as_the_repo_runs_it(tmp_path):
    root, state, refused = walk(tmp_path, {
        "pyproject.toml": '[project]\nname = "tool"\n[project.scripts]\ntool = "tool.cli:main"\n',
        "README.md": "```\ntool pretrain --data x\n```\n",
        "src/tool/__init__.py": "",
        "src/tool/cli.py": "import torch\ndef main():\n    loss.backward()\n    optimizer.step()\n",
    })
    assert state.command == "tool pretrain --data x" and state.script == "src/tool/cli.py"
    assert run_of(root, state) == f"{BENCH} python ROOT/wamf_bench.py --entry tool.cli:main tool pretrain --data x"
    assert "no __main__" not in flow.questions(state, Step.JOB)[-4].prompt
    assert console_scripts({"setup.py": "entry_points={'console_scripts': ['t2 = a.b:main']}",
                            "setup.cfg": "[options.entry_points]\nconsole_scripts =\n    t3 = c.d:run\n"}) == {
        "t3": "c.d:run", "t2": "a.b:main"}


DISPATCHERS = {  # the idioms a console script's subcommand table is written in
    "dict": "from jsonargparse import CLI\nfrom tool.pretrain import setup as pretrain_fn\n"
            "from tool.generate import main as generate_fn\n"
            "def main():\n    CLI({'generate': generate_fn, 'pretrain': pretrain_fn})\n",
    "argparse": "import argparse\nfrom tool import pretrain, generate\ndef main():\n"
                "    p = argparse.ArgumentParser()\n    sub = p.add_subparsers()\n"
                "    g = sub.add_parser('generate')\n    g.set_defaults(func=generate.main)\n"
                "    t = sub.add_parser('pretrain')\n    t.set_defaults(func=pretrain.main)\n"
                "    a = p.parse_args()\n    a.func(a)\n",
    "click": "import click\n@click.group()\ndef cli():\n    pass\n"
             "@cli.command()\ndef generate():\n    from tool.generate import main\n    main()\n"
             "@cli.command('pretrain')\ndef run_pretraining():\n    from tool.pretrain import main as m\n    m()\n"
             "def main():\n    cli()\n",
    "beside": "import click\nfrom tool.util import launch\n@click.group()\ndef cli():\n    pass\n"
              "@cli.command()\ndef pretrain():\n    launch('pretrain')\ndef main():\n    cli()\n",
    "compare": "import sys\nfrom tool import generate\nimport tool.pretrain\ndef main():\n"
               "    if sys.argv[1] == 'generate':\n        generate.main()\n"
               "    elif sys.argv[1] == 'pretrain':\n        tool.pretrain.main()\n",
}


@pytest.mark.parametrize("idiom", sorted(DISPATCHERS))
def test_a_console_subcommand_is_read_in_the_module_it_runs(tmp_path, idiom):
    """`tool pretrain` trains in `tool/pretrain.py`: the analysis reads that module, the command stays."""
    root, state, refused = walk(tmp_path, {
        "pyproject.toml": '[project]\nname = "tool"\nscripts.tool = "tool.cli:main"\n',
        "README.md": "```\ntool pretrain --data x\n```\n",
        "src/tool/__init__.py": "",
        "src/tool/cli.py": DISPATCHERS[idiom],
        "src/tool/util.py": "import subprocess\ndef launch(x):\n    subprocess.run(x)\n",
        "src/tool/generate.py": "import torch\ndef main():\n    model.generate()\n",
        "src/tool/pretrain.py": "import argparse, torch\ndef main():\n    p = argparse.ArgumentParser()\n"
                                "    p.add_argument('--data', required=True)\n    p.parse_args()\n"
                                + TRAIN.replace("\n", "\n    ").split("\n", 1)[1],
    })
    assert (state.command, state.script) == ("tool pretrain --data x", "src/tool/pretrain.py")
    assert run_of(root, state) == f"{BENCH} python ROOT/wamf_bench.py --entry tool.cli:main tool pretrain --data x"
    assert (state.analysis.script, state.analysis.kind) == ("src/tool/pretrain.py", "training")
    verdict = check_run(state.run, root, state.analysis, state.detected.scripts.consoles, writing=wrapper_path(state))
    assert verdict.problems == [] and not any("was not read" in w for w in verdict.warnings)
    assert proposals.read_command(state, "tool pretrain --data y").path == "src/tool/pretrain.py"
    without = check_run(state.run.replace(" --data x", ""), root, state.analysis, state.detected.scripts.consoles,
                        writing=wrapper_path(state))
    assert any("--data" in p for p in without.problems), without  # the subcommand's own parser, read
    # on the app's event loop no file is read: the subcommand's module is the one detection found
    seen = frozenset(c.path for c in state.detected.scripts.candidates)
    ui = check_run(state.run, root, state.analysis, state.detected.scripts.consoles, writing=wrapper_path(state),
                   read=False, seen=seen, job=state.launch)
    assert ui.problems == [] and not any("was not read" in w for w in ui.warnings)
    blind = check_run(state.run, root, state.analysis, state.detected.scripts.consoles, writing=wrapper_path(state),
                      read=False, seen=seen)
    assert any("src/tool/cli.py was not read" in w for w in blind.warnings)


def test_a_run_subcommand_naming_a_script_runs_that_script(tmp_path):
    """`tune run full_finetune --config c` runs `recipes/full_finetune.py`; `tune cp full_finetune .` runs nothing."""
    root, state, refused = walk(tmp_path, {
        "pyproject.toml": '[project]\nname = "tool"\n[project.scripts]\ntune = "tool.cli:main"\n',
        "README.md": "```\ntune cp full_finetune .\ntune run full_finetune --config c.yaml\n```\n",
        "tool/__init__.py": "",
        "tool/cli.py": "import runpy, sys\ndef main():\n    runpy.run_path(sys.argv[2])\n",
        "recipes/full_finetune.py": TRAIN,
    })
    assert (state.command, state.script) == ("tune run full_finetune --config c.yaml", "recipes/full_finetune.py")
    launches = {launch.command: launch.path for launch in state.detected.scripts.launches}
    assert launches["tune cp full_finetune ."] == "tool/cli.py"

def test_a_module_of_a_package_runs_with_python_m(tmp_path):
    root, state, refused = walk(tmp_path, {"pkg/__init__.py": "", "pkg/model.py": "x = 1\n",
                                           "pkg/train.py": "from .model import x\n" + TRAIN})
    assert state.script == "pkg/train.py"
    assert run_of(root, state) == f"{BENCH} python ROOT/wamf_bench.py -m pkg.train"
    assert "python -m pkg.train" in proposals.run_notes(state)


def test_no_main_is_said_at_the_run_question(tmp_path):
    root, state, refused = walk(tmp_path, {"train.py": "import torch\ndef main():\n    loss.backward()\n"})
    assert "train.py has no __main__ and calls nothing" in proposals.run_notes(state)


@pytest.mark.parametrize("gpus", [0, 2])
def test_rank_variables_get_torchrun_one_process_per_gpu(tmp_path, gpus):
    root, state, refused = walk(tmp_path, {"train.py": "import os\nrank = int(os.environ['LOCAL_RANK'])\n" + TRAIN},
                                gpus=gpus)
    n = max(gpus, 1)
    assert run_of(root, state) == f"{BENCH} torchrun --standalone --nproc_per_node={n} ROOT/wamf_bench.py train.py"
    assert "reads LOCAL_RANK with no default (train.py:2)" in proposals.run_notes(state)


def test_ranks_read_with_a_default_need_no_launcher(tmp_path):
    body = "import os\nddp = int(os.environ.get('RANK', -1)) != -1\nif ddp:\n    init_process_group()\n" + TRAIN
    root, state, refused = walk(tmp_path, {"train.py": body})
    assert run_of(root, state) == f"{BENCH} python ROOT/wamf_bench.py train.py"


DIST = ("import os\nfrom train_utils import setup\nsetup()\n" + TRAIN, "import os\n"
        "def _from_launcher():\n    return int(os.environ['WORLD_SIZE'])\n"
        "def setup():\n    if all(k in os.environ for k in ['RANK', 'WORLD_SIZE']):\n        _from_launcher()\n{also}")


@pytest.mark.parametrize(("also", "launcher"), [("", "python"), ("    _from_launcher()\n", "torchrun")])
def test_a_private_helper_called_only_under_a_check_of_the_variables_is_optional(tmp_path, also, launcher):
    """fairseq reads `WORLD_SIZE` with no default in a module-private helper that it calls only when the rank
    variables are set: plain python runs (and fairseq spawns its own ranks). The same helper also called
    unconditionally needs a rank launcher."""
    entry, utils = DIST
    root, state, refused = walk(tmp_path, {"train.py": entry, "train_utils.py": utils.format(also=also)})
    assert run_of(root, state).split(" ")[len(BENCH.split(" "))] == launcher


def test_an_accelerator_job_started_with_python_gets_accelerate_launch(tmp_path):
    body = ("from accelerate import Accelerator, DeepSpeedPlugin\n"
            "acc = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2))\n" + TRAIN)
    root, state, refused = walk(tmp_path, {"train.py": body, "README.md": "```\npython train.py\n```\n"})
    assert state.command == "python train.py"
    assert run_of(root, state) == f"{BENCH} accelerate launch ROOT/wamf_bench.py train.py"


def test_an_accelerator_given_its_precision_runs_as_its_docs_start_it(tmp_path):
    """`Accelerator(mixed_precision=args.mixed_precision)` under the README's plain `python train.py` (k-diffusion):
    one process at the job's own precision; `accelerate launch` would take the process count from the user's
    accelerate config instead."""
    body = ("import accelerate\nacc = accelerate.Accelerator(gradient_accumulation_steps=1, mixed_precision='bf16')\n"
            + TRAIN)
    root, state, refused = walk(tmp_path, {"train.py": body, "README.md": "```\npython train.py\n```\n"})
    assert state.analysis is not None and not [n for n in state.analysis.needs if n.code == "accelerate"]
    assert run_of(root, state) == f"{BENCH} python ROOT/wamf_bench.py train.py"


REQUIRED = {
    "option": (ARGPARSE.format(args="p.add_argument('--dataset_name', required=True)\n"), "--dataset_name"),
    "positional": (ARGPARSE.format(args="p.add_argument('data_dir')\np.add_argument('x', nargs='?')\n"),
                   "the positional argument data_dir"),
    "dataclass": ("from dataclasses import dataclass, field\nfrom transformers import HfArgumentParser\n"
                  "@dataclass\nclass ModelArguments:\n    model_name_or_path: str = field(metadata={'help': 'x'})\n"
                  "    revision: str = 'main'\n    cache: str = field(default=None)\n"
                  "parser = HfArgumentParser((ModelArguments,))\n", "--model_name_or_path"),
}


@pytest.mark.parametrize("kind", list(REQUIRED))
def test_a_required_input_left_out_is_refused_with_its_name(tmp_path, kind):
    body, name = REQUIRED[kind]
    root, state, refused = walk(tmp_path, {"train.py": body + TRAIN})
    assert refused == [f"run: Your script will not start without {name}; please add it to the command."]
    assert f"it requires {name}" in proposals.run_notes(state)


def test_hydra_required_values(tmp_path):
    body = ("import hydra\n@hydra.main(config_path='conf', config_name='train')\ndef main(cfg):\n"
            "    loss = model(x)\n    loss.backward()\nif __name__ == '__main__':\n    main()\n")
    root, state, refused = walk(tmp_path, {"train.py": body, "conf/train.yaml": "data:\n  path: ???\nlr: 0.1\n"})
    assert refused == ["run: Your script will not start without data.path=...; please add it to the command."]
    root, state, refused = walk(tmp_path / "again", {"train.py": body, "conf/train.yaml": "data:\n  path: ???\n"},
                                {"command": "python train.py data.path=/data"})
    assert refused == [] and "data.path=/data" in state.run


def test_a_required_input_given_in_the_command_passes(tmp_path):
    body, _ = REQUIRED["option"]
    root, state, refused = walk(tmp_path, {"train.py": body + TRAIN},
                                {"command": "python train.py --dataset_n wikitext"})  # argparse takes prefixes
    assert refused == [] and "--dataset_n wikitext" in state.run


def test_yes_refuses_a_missing_required_input_with_exit_2(tmp_path):
    body, _ = REQUIRED["option"]
    root = make_repo(tmp_path / "job", {"train.py": body + TRAIN})
    (tmp_path / "a.json").write_text(json.dumps({"reader": "MLSys engineer"}))
    out = subprocess.run([WAMF, str(root), "--answers", str(tmp_path / "a.json"), "--yes"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert "--dataset_name" in out.stderr and "Traceback" not in out.stderr
    assert not (root / "contract.md").exists()


def test_yes_never_says_a_person_confirmed(tmp_path):
    root = make_repo(tmp_path / "job", {"train.py": TRAIN})
    (tmp_path / "a.json").write_text(json.dumps({"reader": "MLSys engineer"}))
    out = subprocess.run([WAMF, str(root), "--answers", str(tmp_path / "a.json"), "--yes"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    text = (root / "contract.md").read_text()
    assert "Not confirmed by a person: the answers file supplied the answers" in text
    assert "User confirmed" not in text
    assert "wamf-tui: warning: " in out.stderr  # no GPU on this machine: said on stderr too


def test_the_guarantee_question_says_what_detection_knows_is_wrong(tmp_path):
    root, state, _ = walk(tmp_path, {"train.py": TRAIN})
    state = flow.go(state, Step.JOB, "guarantees")
    q = flow.current(state)
    assert "no NVIDIA GPU visible" in q.prompt or "NVML" in q.prompt
    assert [o.value for o in q.options] == ["recheck", "node", "anyway"]
    assert flow.answer(state, "recheck")[1].action == "recheck"
    state, out = flow.answer(state, "node")
    assert out.action == "stay" and flow.current(state).key == "node"


def test_the_training_script_outranks_generate_download_and_infer(tmp_path):
    main = "import torch\nif __name__ == '__main__':\n    model(x)\n"
    root = make_repo(tmp_path / "r", {"generate.py": main, "download_data.py": main, "infer.py": main,
                                      "sample.py": main, "scripts/prepare_dataset.py": main,
                                      "model/trainer.py": "import torch\ndef fit():\n    loss.backward()\n"
                                                          "    optimizer.step()\n"})
    paths = [c.path for c in scan_scripts(root).candidates]
    assert paths[0] == "model/trainer.py", paths
    assert set(paths) >= {"generate.py", "download_data.py", "infer.py", "sample.py"}  # every one reachable


def test_placeholders_a_readme_leaves_are_left_out_and_said():
    got = parse_launch('torchrun --master_port=<your_port> --nproc_per_node=4 train.py --model <your model path> '
                       '--prompt "a photo of <new1> dog" --data [folder with images] --x 1',
                       exists={"train.py"}.__contains__)
    assert got.command == "torchrun --nproc_per_node=4 train.py --prompt 'a photo of <new1> dog' --x 1"
    assert got.unresolved == ["<your_port>", "<your model path>", "[folder with images]"]
    assert got.left_out == ["--model <your model path>", "--data [folder with images]"]  # the entry's, not torchrun's
    prose = parse_launch("python train.py --data_dir path/to/images --out=/path/to/out --lr 1 --vocab my/path/to/v",
                         exists={"train.py"}.__contains__)
    assert prose.left_out == ["--data_dir path/to/images", "--out /path/to/out"]
    assert prose.args == ["--lr", "1", "--vocab", "my/path/to/v"]
    override = parse_launch("python train.py data.path=ImageNet:root=<PATH/TO/DATASET> lr=1",
                            exists={"train.py"}.__contains__)  # an override the reader completes: not dropped
    assert (override.left_out, override.args) == (["data.path=ImageNet:root=<PATH/TO/DATASET>"], ["lr=1"])



def test_a_shell_scripts_cd_lines_hold_for_the_commands_after_them(tmp_path):
    """A script runs top-down in one folder; a README is copied a block at a time, so its bare `cd` does not carry."""
    root = make_repo(tmp_path / "job", {"scripts/run.sh": "#!/bin/bash\ncd ..\ncd examples\npython train.py --lr 1\n",
                                        "README.md": "```\ncd examples\n```\n```\npython train.py --lr 2\n```\n",
                                        "examples/train.py": TRAIN, "train.py": TRAIN})
    got = {launch.source: (launch.command, launch.path) for launch in scan_scripts(root).launches}
    assert got["scripts/run.sh:4"] == ("cd examples && python train.py --lr 1", "examples/train.py")
    assert got["README.md:5"] == ("python train.py --lr 2", "train.py")


def test_a_docs_cd_holds_to_the_end_of_its_block_and_a_script_may_run_by_its_shebang(tmp_path):
    """detectron2's GETTING_STARTED: `cd tools/` then `./train_net.py --num-gpus 8 --config-file ../configs/x.yaml`
    in one block; the next block starts back at the root."""
    guide = ("```\ncd tools/\n./train.py --num-gpus 8 \\\n  --config-file ../configs/x.yaml\n```\n"
             "```\n./train.py --eval\n```\n"
             "```\ncd $HOME/project\npython tools/train.py --lr 1\n```\n")  # the reader's checkout: its root
    root = make_repo(tmp_path / "job", {"GETTING_STARTED.md": guide, "tools/train.py": TRAIN,
                                        "configs/x.yaml": "a: 1\n"})
    got = {launch.source: (launch.command, launch.path) for launch in scan_scripts(root).launches}
    assert got["GETTING_STARTED.md:3"] == (
        "cd tools && python ./train.py --num-gpus 8 --config-file ../configs/x.yaml", "tools/train.py")
    assert "GETTING_STARTED.md:7" not in got  # `./train.py` from the root names no file
    assert got["GETTING_STARTED.md:11"] == ("python tools/train.py --lr 1", "tools/train.py")


def test_a_command_naming_a_config_the_repo_lacks_is_not_the_one_proposed(tmp_path):
    """A benchmark page compares with another project's line (`--config-file configs/e2e_x.yaml`, which this repo
    does not hold): the guide's line whose config exists is proposed, launcher or not."""
    docs = "```\npython -m torch.distributed.launch --nproc_per_node=8 train.py --config-file configs/old.yaml\n```\n"
    root = make_repo(tmp_path / "job", {"docs/benchmarks.md": docs, "GETTING_STARTED.md":
                                        "```\npython train.py --config-file configs/x.yaml\n```\n",
                                        "train.py": TRAIN, "configs/x.yaml": "a: 1\n"})
    launches = {launch.source: launch for launch in scan_scripts(root).launches}
    assert launches["docs/benchmarks.md:2"].absent == ["configs/old.yaml"]
    assert launches["GETTING_STARTED.md:2"].absent == []
    top = next(c for c in scan_scripts(root).candidates if c.path == "train.py")
    assert top.launch is not None and top.launch.command == "python train.py --config-file configs/x.yaml"


def test_the_repos_own_readme_outranks_an_extensions(tmp_path):
    """An extension's README that launches its own trainer three times does not outrank the job the repo's
    front page starts."""
    ext = "```\npython train.py --a 1\npython train.py --a 2\npython train.py --a 3\n```\n"
    root = make_repo(tmp_path / "job", {"README.md": "```\npython core/train.py\n```\n", "core/train.py": TRAIN,
                                        "ext/fast/README.md": ext, "ext/fast/train.py": TRAIN})
    assert [c.path for c in scan_scripts(root).candidates][:2] == ["core/train.py", "ext/fast/train.py"]

SUBMITIT = {  # a launcher that queues the job on Slurm: the module it queues trains, under torchrun
    "pkg/__init__.py": "",
    "pkg/submit.py": "import argparse\nimport submitit\ndef get_args_parser(parents):\n"
                     "    p = argparse.ArgumentParser(parents=parents)\n    p.add_argument('--nodes', default=1)\n"
                     "    p.add_argument('--use-volta32', action='store_true')\n    return p\n"
                     "def submit_jobs(task, args):\n    ex = submitit.AutoExecutor(folder=args.out)\n"
                     "    ex.submit(task(args))\n",
    "pkg/train.py": "import argparse, torch\ndef get_args_parser():\n    p = argparse.ArgumentParser(add_help=False)\n"
                    "    p.add_argument('--config-file')\n    p.add_argument('opts', nargs='*')\n    return p\n"
                    "def main(args):\n" + TRAIN.replace("\n", "\n    ").split("\n", 1)[1]
                    + "\nif __name__ == '__main__':\n    main(get_args_parser().parse_args())\n",
    "run/train.py": "from pkg.submit import get_args_parser, submit_jobs\nfrom pkg.train import get_args_parser as t\n"
                    "class Trainer:\n    def __call__(self):\n        from pkg.train import main\n"
                    "        main(self.args)\n"
                    "if __name__ == '__main__':\n    submit_jobs(Trainer, get_args_parser([t()]).parse_args())\n",
    "README.md": "```\npython run/train.py --nodes 4 --config-file c.yaml data.path=<PATH/TO/DATA>\n```\n",
}


def test_a_submitit_launcher_runs_the_module_it_queues_here(tmp_path):
    """The README's command queues a Slurm job: on this node it trains nothing. The run line runs the module it
    queues with torchrun, without the submitter's own options; the docs' placeholder is asked for."""
    root, state, refused = walk(tmp_path, SUBMITIT)
    assert refused and "data.path=<PATH/TO/DATA>" in refused[0]
    command = "python run/train.py --nodes 4 --use-volta32 --config-file c.yaml data.path=/d"
    root, state, refused = walk(tmp_path / "2", SUBMITIT, {"command": command})
    assert refused == []
    assert run_of(root, state) == f"{BENCH} torchrun --standalone --nproc_per_node=1 ROOT/wamf_bench.py -m pkg.train " \
                                  "--config-file c.yaml data.path=/d"
    assert "queues the job on Slurm through submitit (submitit.AutoExecutor, pkg/submit.py:9)" in \
        proposals.run_notes(state)
    verdict = check_run(command, root, state.analysis, {})
    assert verdict.problems == ["train.py queues the job on Slurm through submitit (submitit.AutoExecutor, "
                                "pkg/submit.py:9), so it trains nothing on this node: run python -m pkg.train with "
                                "torchrun instead"]


def test_an_option_the_docs_leave_to_the_user_is_asked_for_never_dropped(tmp_path):
    """Without it the job runs on its parser's default (another model): the run line is refused until it is
    given, and --yes exits 2 naming it."""
    readme = "```\npython train.py --model_name_or_path <your_path_to_llama> --lr 2e-5\n```\n"
    files = {"README.md": readme, "train.py": "import argparse\np = argparse.ArgumentParser()\n"
             "p.add_argument('--model_name_or_path', default='facebook/opt-125m')\np.add_argument('--lr')\n" + TRAIN}
    root, state, refused = walk(tmp_path, files)
    assert refused and refused[0].startswith("run: README.md ") and "--model_name_or_path <your_path_to_llama>" in \
        refused[0]
    assert "add your value for --model_name_or_path <your_path_to_llama>" in flow.current(state).prompt
    assert flow.answer(state, flow.current(state).default + " --model_name_or_path /ckpt/llama")[1].error is None
    (tmp_path / "a.json").write_text(json.dumps({"reader": "MLSys engineer"}))
    out = subprocess.run([WAMF, str(root), "--answers", str(tmp_path / "a.json"), "--yes"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "--model_name_or_path <your_path_to_llama>" in out.stderr
    assert not (root / "contract.md").exists()


def test_variables_set_in_an_earlier_doc_block_are_the_ones_in_force(tmp_path):
    root = make_repo(tmp_path / "r", {
        "README.md": '```\nFLAGS="--size 64 --lr 1e-4"\n```\nthen\n```\npython train.py $FLAGS\n```\n'
                     'later, for CIFAR:\n```\nFLAGS="--size 32"\n```\n',
        "train.py": TRAIN})
    assert scan_scripts(root).candidates[0].launch.command == "python train.py --size 64 --lr 1e-4"


def test_a_variable_inside_a_word_stays_one_word():
    got = parse_launch('python train.py --out=$OUT $FLAGS --p "$OUT"', defaults={"OUT": "path to save",
                                                                               "FLAGS": "--a 1 --b 2"},
                       exists={"train.py"}.__contains__)
    assert got.args == ["--out=path to save", "--a", "1", "--b", "2", "--p", "path to save"]


def test_a_shell_arrays_words_are_the_commands_arguments(tmp_path):
    """Megatron's launch scripts: `ARGS=(` a flag a line `)` (a comment on a line ends there, a quoted value
    stays one word), `ARGS+=(...)`, then `torchrun ${DIST[@]} train.py "${ARGS[@]}"`; a `$1` the script leaves
    to its caller is said, never run."""
    script = ("#!/bin/bash\nCKPT=$1\nDIST=(--nproc_per_node 8)\nARGS=(\n    --num-layers 2\n"
              "    --backend auto # one of (flash/local)\n    --schedule \"0:16 2B:32\"\n    --save $CKPT\n)\n"
              "ARGS+=(--fp16)\ntorchrun ${DIST[@]} train.py \"${ARGS[@]}\" --lr 1\n")
    root = make_repo(tmp_path / "job", {"scripts/run.sh": script, "train.py": TRAIN})
    launch = next(x for x in scan_scripts(root).launches if x.source == "scripts/run.sh:11")
    assert (launch.launcher, launch.path, launch.nproc_per_node) == ("torchrun", "train.py", 8)
    assert launch.args == ["--num-layers", "2", "--backend", "auto", "--schedule", "0:16 2B:32", "--fp16", "--lr", "1"]
    assert launch.left_out == ["--save $1"]


def test_a_scripts_own_docstring_says_how_it_runs_when_no_doc_does(tmp_path):
    doc = ('"""Pretrain.\n\nUsage: python train.py [options]\n\nOn 4 GPUs:\n    $ torchrun --nproc_per_node=4 '
           'train.py \\\n        --lr 1e-3\n"""\n')
    scan = scan_scripts(make_repo(tmp_path / "r", {"train.py": doc + ARGPARSE.format(args="p.add_argument('--lr')\n")
                                                   + TRAIN}))
    launch = scan.candidates[0].launch
    assert launch is not None and launch.command == "torchrun --nproc_per_node=4 train.py --lr 1e-3"
    assert launch.source == "train.py:6" and "launched in train.py:6" in scan.candidates[0].reasons


def test_a_config_path_with_a_folder_is_looked_for_there_and_a_bare_name_anywhere(tmp_path):
    """OpenNMT-py's docs page runs `-config examples/wiki_103.yaml` from the root, where no such file is (it sits in
    `docs/source/examples/wiki_103/`): absent. yolov5's bare `--data coco.yaml` the job finds in `data/` itself."""
    root = make_repo(tmp_path / "r", {
        "README.md": ("```\npython train.py --config examples/lm.yaml\n```\n\n"
                      "```\npython train.py --data coco.yaml\n```\n"),
        "docs/examples/lm/lm.yaml": "a: 1\n", "data/coco.yaml": "b: 2\n", "train.py": TRAIN})
    launches = {launch.source: launch for launch in scan_scripts(root).launches}
    assert launches["README.md:2"].absent == ["examples/lm.yaml"]
    assert launches["README.md:6"].absent == []


def test_the_readmes_command_beats_a_docstrings_example_even_with_a_launcher(tmp_path):
    """yolov5: the README trains COCO from scratch with python; train.py's docstring shows a torch.distributed.run
    line on a 128-image sample. The README gives the job as its authors run it: it is the one proposed."""
    doc = ('"""Train.\n\n    $ python -m torch.distributed.run --nproc_per_node 4 train.py --data small.yaml\n"""\n')
    root = make_repo(tmp_path / "r", {"README.md": "```bash\npython train.py --data coco.yaml\n```\n",
                                      "train.py": doc + ARGPARSE.format(args="p.add_argument('--data')\n") + TRAIN})
    top = scan_scripts(root).candidates[0]
    assert top.launch is not None and top.launch.command == "python train.py --data coco.yaml"


def test_a_readme_template_and_a_cpu_example_are_not_the_proposed_command(tmp_path):
    """The docs' `experiment=experiment_name.yaml` is a template to fill in and `trainer=cpu` the CPU example:
    the command shown is the first concrete GPU one, whatever order the README gives them in."""
    readme = ("```bash\npython src/train.py experiment=experiment_name.yaml\n```\n"
              "```bash\npython src/train.py trainer=cpu\n```\n```bash\npython src/train.py --device cpu\n```\n"
              "```bash\npython src/train.py --data path/to/data\n```\n```bash\npython src/train.py trainer=gpu\n```\n")
    root = make_repo(tmp_path / "r", {"README.md": readme, "src/train.py": "import torch\nloss.backward()\n"})
    top = scan_scripts(root).candidates[0]
    assert top.launch is not None and top.launch.command == "python src/train.py trainer=gpu"


def test_a_flag_named_like_a_template_is_no_template(tmp_path):
    """`--exp_name tulu3` is a flag and its value: only values are templates (`--data your_data`). The
    README's main recipe, whose flags include `--exp_name`, stays the proposal over a later small example."""
    readme = ("```bash\npython train.py --exp_name tulu3 --model_name llama\n```\n"
              "```bash\npython train.py small.yaml\n```\n```bash\npython train.py --data your_data\n```\n")
    root = make_repo(tmp_path / "r", {"README.md": readme, "small.yaml": "lr: 1\n",
                                      "train.py": "import torch\nloss.backward()\n"})
    top = scan_scripts(root).candidates[0]
    assert top.launch is not None and top.launch.command == "python train.py --exp_name tulu3 --model_name llama"


def test_a_dispatchers_function_cli_gives_the_subcommands_flags(tmp_path):
    """`tool pretrain` where the dispatcher is jsonargparse's `CLI({"pretrain": setup})`: the flags are the
    parameters of `setup` in tool/pretrain.py (a dataclass group from tool/args.py), though the module has no
    parser of its own; a helper of the package that wraps another CLI does not change that."""
    setup = ("import torch\nfrom tool.args import TrainArgs\nfrom tool.util import CLI\n\n"
             "def setup(data: str = 'x', out_dir: str = 'out', train: TrainArgs = TrainArgs(save_interval=100)):\n"
             "    for step in range(10):\n        loss = model(x)\n        loss.backward()\n        optimizer.step()\n"
             "        if step % train.save_interval == 0:\n            torch.save(model, out_dir)\n")
    root, state, refused = walk(tmp_path, {
        "pyproject.toml": '[project]\nname = "tool"\nscripts.tool = "tool.cli:main"\n',
        "README.md": "```\ntool pretrain --data x\n```\n",
        "src/tool/__init__.py": "",
        "src/tool/cli.py": DISPATCHERS["dict"],
        "src/tool/args.py": "from dataclasses import dataclass\n@dataclass\nclass TrainArgs:\n"
                            "    save_interval: int = 5\n",
        "src/tool/util.py": "import lightning\ndef CLI(*args, **kwargs):\n    from jsonargparse import CLI\n"
                            "    return CLI(*args, **kwargs)\n",
        "src/tool/generate.py": "import torch\ndef main():\n    model.generate()\n",
        "src/tool/pretrain.py": setup,
    })
    assert (state.launch.function, state.launch.function_cli) == ("setup", "jsonargparse")
    a = state.analysis
    assert a.config_system == "jsonargparse" and a.flags["--train.save_interval"] == "100"
    on = [f for c in state.changes if c.enabled for f in c.flags]
    assert "--train.save_interval=1000000000" in on and "--out_dir=$WAMF_OUT" in on
    consoles, writing = state.detected.scripts.consoles, wrapper_path(state)
    assert check_run(state.run, root, a, consoles, writing=writing).problems == []
    assert check_run(state.run + " --train.save_every=3", root, a, consoles, writing=writing).problems == [
        "--train.save_every is not among the parameters (or dataclass fields) pretrain.py's jsonargparse CLI is "
        "made from"]
    # read again from the run line alone (as `check --repo` does): the same flags
    assert check_run(state.run + " --train.save_every=3", root, None, consoles, writing=writing).problems == [
        "--train.save_every is not among the parameters (or dataclass fields) pretrain.py's jsonargparse CLI is "
        "made from"]


def test_a_braced_variable_is_the_scripts_own_not_a_placeholder():
    """`--module ${MODULE}` with `MODULE=${MODULE:-"llama3"}` set above is llama3; only a bare `{step}` (no `$`)
    is a placeholder the docs leave to the reader. A default with a comment after it is still a default."""
    known = shell_defaults('MODULE=${MODULE:-"llama3"}\nDATA=${4:-"MOCK"}     # Data prefix, or "MOCK"\n')
    assert known == {"MODULE": "llama3", "DATA": "MOCK"}
    got = parse_launch("torchrun -m pkg.train --module ${MODULE} --data $DATA --out {step}", defaults=known,
                       exists={"pkg/train.py"}.__contains__)
    assert got.args == ["--module", "llama3", "--data", "MOCK"] and got.unresolved == ["{step}"]


def test_the_shells_own_folder_is_where_the_command_runs():
    got = parse_launch('torchrun train.py --cache "${PWD}/cache"', exists={"train.py"}.__contains__)
    assert got.args == ["--cache", "./cache"] and not got.unresolved


def test_a_scripts_if_runs_the_branch_its_values_choose(tmp_path):
    """run_train.sh: `if [ -n "$COMM_MODE" ]` (empty by default) holds a one-step debug launch; the `else` is the
    job. An array built under a test of `$TOKENIZER == "MOCK"` takes the branch its default picks. A test the
    text cannot decide (`-f`) reads both ways, as before."""
    script = ('#!/bin/bash\nCOMM_MODE=${COMM_MODE:-""}\nTOK=${1:-"MOCK"}\nARGS=()\n'
              'if [[ "$TOK" == "MOCK" ]] || [[ -z "$TOK" ]]; then\n    ARGS+=(--mock-data)\nelse\n'
              '    ARGS+=(--data "$TOK")\nfi\nif [ -f extra.txt ]; then\n    ARGS+=(--extra)\nfi\n'
              'USE_X=${USE_X:-1}\nif [ "$USE_X" -eq 0 ]; then\n    ARGS+=(--no-x)\nfi\n'
              'if [ -n "$COMM_MODE" ]; then\n    if [ -z "$TOK" ]; then echo none; fi\n'
              '    python -m pkg.train --debug ${ARGS[@]} --steps 1\n'
              'elif [ "$COMM_MODE" = "x" ]; then\n    python -m pkg.train --x\nelse\n'
              '    torchrun --nproc_per_node=8 -m pkg.train ${ARGS[@]}\nfi\n')
    root = make_repo(tmp_path / "job", {"run.sh": script, "pkg/train.py": TRAIN, "pkg/__init__.py": ""})
    launches = [x for x in scan_scripts(root).launches if x.source.startswith("run.sh")]
    assert [(x.launcher, x.args) for x in launches] == [("torchrun", ["--mock-data", "--extra"])]


def test_an_arrays_elements_split_where_its_use_is_bare(tmp_path):
    """`ARGS=("--fp8-format hybrid")` used bare as `${ARGS[@]}` is two words, as the shell passes them; quoted,
    one. An array inside another (`ALL+=("${A[@]}")`) gives its elements. `uv run` runs the environment's
    python, which the app finds on its own."""
    script = ('#!/bin/bash\nA=(--x 1)\nALL=(--y)\nALL+=("${A[@]}")\nF=("--fp8-format hybrid")\n'
              'uv run torchrun train.py ${F[@]} "${F[@]}" ${ALL[@]}\n')
    root = make_repo(tmp_path / "job", {"run.sh": script, "train.py": TRAIN})
    launch = next(x for x in scan_scripts(root).launches if x.source == "run.sh:6")
    assert (launch.launcher, launch.args) == (
        "torchrun", ["--fp8-format", "hybrid", "--fp8-format hybrid", "--y", "--x", "1"])


def test_a_launch_script_beats_a_docs_page_that_shows_one_flag(tmp_path):
    """A guide's `torchrun pretrain.py --sharding no_shard` illustrates a flag; the repo's launch script gives the
    whole job. The README's own command still comes first among equals."""
    files = {"docs/guide.md": "```bash\ntorchrun --nproc_per_node=8 pretrain.py --sharding no_shard\n```\n",
             "examples/run.sh": "torchrun --nproc_per_node 8 pretrain.py --layers 32 --hidden 4096 --mock-data\n",
             "pretrain.py": TRAIN}
    top = scan_scripts(make_repo(tmp_path / "a", files)).candidates[0]
    assert top.launch.source == "examples/run.sh:1"
    readme = {**files, "README.md": "```bash\ntorchrun --nproc_per_node=8 pretrain.py --layers 2\n```\n"}
    top = scan_scripts(make_repo(tmp_path / "b", readme)).candidates[0]
    assert top.launch.source == "README.md:2"


def test_a_save_folder_the_command_gives_is_dropped_with_its_value(tmp_path):
    """The launch script gives `--save ckpts --tensorboard-dir tb`, and the code saves and logs only when they are
    set (default None): the benchmark's run line drops both, each with its value, and keeps the rest; a store_true
    switch the command gives (`--fp16`) is not dropped, as it can change the training."""
    train = ARGPARSE.format(args="p.add_argument('--save')\np.add_argument('--tensorboard-dir')\n"
                                 "p.add_argument('--steps', type=int, default=1000)\n"
                                 "p.add_argument('--fp16', action='store_true')\n") + (
        "from torch.utils.tensorboard import SummaryWriter\nimport torch\n"
        "if args.tensorboard_dir:\n    tb = SummaryWriter(args.tensorboard_dir)\n"
        "for step in range(args.steps):\n    loss = model(x)\n    loss.backward()\n    optimizer.step()\n"
        "    if args.save and step % 100 == 0:\n        torch.save(model, args.save)\n")
    root, state, refused = walk(tmp_path, {
        "run.sh": "python train.py --save ckpts --fp16 --tensorboard-dir tb --steps 5000\n", "train.py": train})
    rows = {c.what: c.how for c in state.changes}
    assert rows["torch.save off (train.py:17)"] == "--save dropped from the run line (unset, as by default)"
    assert rows["tensorboard tracker off (train.py:11)"] == \
        "--tensorboard-dir dropped from the run line (unset, as by default)"
    assert run_of(root, state) == \
        "WAMF_SEED=0 WAMF_OUT=ROOT.wamf-bench python ROOT/wamf_bench.py train.py --fp16 --steps=30"


def test_a_step_flag_the_job_asserts_against_the_commands_own_drops_the_other(tmp_path):
    """Megatron's `if args.train_iters: assert args.train_samples is None` (and its sample-based schedule): the
    command trains by samples, so the benchmark's `--train-iters=30` goes with `--train-samples` and
    `--lr-warmup-samples` dropped; an assert under another setting's test says nothing about them."""
    train = ARGPARSE.format(args="p.add_argument('--train-iters', type=int)\np.add_argument('--train-samples', "
                                 "type=int)\np.add_argument('--lr-warmup-samples', type=int, default=0)\n"
                                 "p.add_argument('--lr', type=float)\n"
                                 "p.add_argument('--fp16', action='store_true')\n") + (
        "if args.train_iters and args.lr:\n    assert args.train_samples is None, 'iteration-based'\n"
        "    assert args.lr_warmup_samples == 0\nif args.fp16:\n    assert args.lr is None\n"
        "import torch\nfor it in range(args.train_iters or 10):\n    loss = model(x)\n    loss.backward()\n"
        "    optimizer.step()\n")
    root, state, refused = walk(tmp_path, {
        "run.sh": "python train.py --train-samples 90000 --lr-warmup-samples 10 --lr 1 --fp16\n", "train.py": train})
    step = state.changes[0]
    assert step.how == "--train-iters=30 (--train-samples, --lr-warmup-samples dropped: the job asserts they are " \
                       "unset with it)"
    assert run_of(root, state).endswith("train.py --lr 1 --fp16 --train-iters=30")


def test_a_docs_call_of_the_repos_launch_script_gives_the_launch_it_makes(tmp_path):
    """The README's `MODULE=llama3 CONFIG=llama3_8b ./run_train.sh --compile` runs the script's torchrun line with
    the caller's variables over its defaults and its arguments as `"$@"`; `bash scripts/run.sh ckpts` binds `$1`.
    A call with a template argument (`--module <name>`) is not followed."""
    script = ('#!/bin/bash\nNGPU=${NGPU:-"8"}\nMODULE=${MODULE:-"llama3"}\nCONFIG=${CONFIG:-"debugmodel"}\n'
              'torchrun --nproc_per_node=${NGPU} -m pkg.train --module ${MODULE} --config ${CONFIG} "$@"\n')
    other = 'OUT=${1:-"out"}\npython -m pkg.train --out "$OUT"\n'
    readme = ("```bash\nMODULE=llama3 CONFIG=llama3_8b ./run_train.sh --compile\n```\n"
              "```bash\nbash scripts/run.sh ckpts\n```\n```bash\n./run_train.sh --module <name>\n```\n")
    root = make_repo(tmp_path / "job", {"README.md": readme, "run_train.sh": script, "scripts/run.sh": other,
                                        "pkg/__init__.py": "", "pkg/train.py": TRAIN})
    scan = scan_scripts(root)
    got = [(x.source, x.args) for x in scan.launches if x.source.startswith("README")]
    assert got == [("README.md:2 via run_train.sh:5", ["--module", "llama3", "--config", "llama3_8b", "--compile"]),
                   ("README.md:5 via scripts/run.sh:2", ["--out", "ckpts"])]
    assert scan.candidates[0].launch.source == "README.md:2 via run_train.sh:5"


def test_a_thin_entrys_trainer_parser_in_the_module_it_calls_gives_the_switches(tmp_path):
    """LLaVA: `train_mem.py` only calls `train()` of `pkg/train.py`, whose HfArgumentParser takes a
    TrainingArguments subclass: the Trainer's switches are the job's, the eval's under the command's own
    (older) name, `--evaluation_strategy no`. A switch's word `no` is no flag to take out of the line (the
    command's own `--packing no` keeps its value)."""
    train = ("import transformers\nfrom dataclasses import dataclass, field\n\n@dataclass\nclass DataArguments:\n"
             "    data_path: str = field(default=None)\n    packing: str = 'yes'\n\n@dataclass\n"
             "class TrainingArguments(transformers.TrainingArguments):\n    model_max_length: int = 512\n\n"
             "def train():\n    parser = transformers.HfArgumentParser((DataArguments, TrainingArguments))\n"
             "    data_args, training_args = parser.parse_args_into_dataclasses()\n"
             "    trainer = transformers.Trainer(model=None, args=training_args)\n    trainer.train()\n")
    root, state, refused = walk(tmp_path, {
        "pkg/__init__.py": "", "pkg/train.py": train,
        "pkg/train_mem.py": "from pkg.train import train\n\nif __name__ == '__main__':\n    train()\n",
        "scripts/finetune.sh": 'deepspeed pkg/train_mem.py --data_path d.json --packing no --evaluation_strategy "no" '
                               '--save_strategy "steps" --save_steps 500 --report_to wandb\n'},
                                  {"script": "pkg/train_mem.py"})
    assert state.analysis.config_system == "hf_trainer"
    assert run_of(root, state) == ("PYTHONPATH=. deepspeed pkg/train_mem.py --data_path d.json --packing no "
                                   "--save_steps 500 --max_steps=30 "
                                   "--report_to none --save_strategy no --evaluation_strategy no "
                                   "--output_dir=ROOT.wamf-bench --seed=0")


def test_a_launched_script_ranks_over_the_module_it_runs(tmp_path):
    """LLaVA: `llava/train/train.py` trains and has a `__main__`, but every launch script runs `train_mem.py`,
    which imports it and calls `train()`: the launched script is the job."""
    root = make_repo(tmp_path / "r", {
        "llava/__init__.py": "", "llava/train/__init__.py": "",
        "llava/train/train.py": "import torch\n\ndef train():\n    loss.backward()\n\n"
                                "if __name__ == '__main__':\n    train()\n",
        "llava/train/train_mem.py": "from llava.train.train import train\n\nif __name__ == '__main__':\n    train()\n",
        "scripts/finetune.sh": "deepspeed llava/train/train_mem.py --deepspeed zero3.json\n"})
    top = scan_scripts(root).candidates
    assert [c.path for c in top[:2]] == ["llava/train/train_mem.py", "llava/train/train.py"]
    assert "run through llava/train/train_mem.py" in top[1].reasons


@pytest.mark.parametrize(("script", "runs"), [
    # nested in a branch that cannot run: dead, its `else` too
    ('if [ "$A" = 1 ]; then\nif [ "$B" = 2 ]; then\nx\nelse\ny\nfi\nfi\nz', ["z"]),
    # `&&`: both must hold; `||`: one is enough; `!` negates
    ('if [ "$A" = 1 ] && [ "$B" = 2 ]; then\nx\nfi\nif [ "$A" = 1 ] || [ "$B" = 2 ]; then\ny\nfi', ["y"]),
    ('if ! [ "$A" = 0 ]; then\nx\nfi', []),
    # an undecidable test (`-f`) reads both ways; an `elif` that surely holds after it leaves its `else` out
    ('if [ -f a ]; then\nx\nelif [ "$A" = 0 ]; then\ny\nelse\nz\nfi', ["x", "y"]),
    ('if [ -f a ] || [ "$A" = 1 ]; then\nx\nfi\nif [ -f a ] && [ "$A" = 1 ]; then\ny\nfi', ["x"]),
    ('if [ -f a ]; then\nx\nelif [ "$A" = 1 ]; then\ny\nelse\nz\nfi', ["x", "z"]),
    # an elif after a branch that ran never runs; one after a false `if` does when its test holds
    ('if [ "$A" = 1 ]; then\nx\nelif [ "$B" == 2 ]; then\ny\nelif [ -z "$B" ]; then\nv\nelse\nz\nfi', ["y"]),
    ('if [ "$A" = 0 ]; then\nx\nelif [ "$B" == 2 ]; then\ny\nelse\nz\nfi', ["x"]),
    ('if [ "$B" != 2 ]\nthen\nx\nelse\ny\nfi', ["y"]),
    ('if [[ "$C" -ne 3 ]]; then\nx\nfi\nif [ "$C" -eq 3 ]; then y; fi', ["if [ \"$C\" -eq 3 ]; then y; fi"]),
])
def test_a_scripts_branches_as_the_shell_takes_them(script, runs):
    from wamf_tui.detect.shell import Branches

    branches, known = Branches(), {"A": "0", "B": "2", "C": "3"}
    assert [line for line in script.splitlines() if branches.read(line, known)] == runs


def test_a_call_of_a_script_by_sh_with_a_comment_binds_what_it_passes():
    from wamf_tui.detect.launch import script_call

    script, known = script_call("sh scripts/run.sh $OUT --x '1 2' # the full job", {"OUT": "ckpts"})
    assert (script, {k: v for k, v in known.items() if not k.startswith("@:")}) == (
        "scripts/run.sh", {**{str(i): "" for i in range(1, 10)}, "1": "ckpts", "2": "--x", "3": "1 2",
                           "@": "ckpts --x '1 2'"})
    assert (known["@:2"], known["@:4"]) == ("--x '1 2'", "")  # bash's `${@:2}`: from the second on
    assert script_call("python train.py --config run.sh", {}) is None and script_call("cat x.sh", {}) is None
    assert script_call("nohup bash run.sh a > log 2>&1", {})[1]["@"] == "a"  # the shell's redirections: not passed


def test_the_shells_redirections_pipes_and_a_launchers_separator_are_no_arguments(tmp_path):
    """DeepSpeed-Chat's `deepspeed main.py ... --output_dir $OUTPUT &> $OUTPUT/training.log`, a `2>&1 | tee log`,
    and nanochat's `torchrun -m scripts.base_train -- --depth=12`, whose `--` torchrun's parser drops: none of
    them is an argument of the job. `python x.py -- --a` keeps its `--`: python passes it on."""
    exists = {"main.py", "scripts/base_train.py"}.__contains__
    got = parse_launch("deepspeed main.py --deepspeed --output_dir o &> o/training.log", exists=exists)
    assert got.args == ["--deepspeed", "--output_dir", "o"]
    got = parse_launch("python main.py --a 1 >log 2>&1 | tee out.txt", exists=exists)
    assert got.args == ["--a", "1"]
    got = parse_launch("python main.py --version '>=1.0' --b", exists=exists)
    assert got.args == ["--version", ">=1.0", "--b"]
    got = parse_launch("torchrun --standalone -m scripts.base_train -- --depth=12", exists=exists)
    assert (got.module, got.args) == ("scripts.base_train", ["--depth=12"])
    assert parse_launch("python main.py -- --a", exists=exists).args == ["--", "--a"]


def test_an_empty_positional_takes_the_scripts_default():
    """A README's `bash train.sh` with no arguments: `${1:-"ckpts"}` is the default (`$1` is empty), as is a
    variable set to "" (`${A:-d}`); `${A-d}` keeps an empty A."""
    from wamf_tui.detect.launch import script_call

    _, passed = script_call("bash train.sh", {})
    assert shell_defaults('CKPT=${1:-"ckpts"}\nOUT=$2\nE=${EMPTY-x}\nF=${EMPTY:-y}\n', {**passed, "EMPTY": ""}) == {
        "CKPT": "ckpts", "OUT": "", "E": "", "F": "y"}


def test_composers_launcher_and_a_script_that_reads_its_config_from_argv(tmp_path):
    """llm-foundry: `composer train.py yamls/mpt-125m.yaml key=value` (MosaicML's launcher, which gives ranks),
    with `yaml_path, args_list = sys.argv[1], sys.argv[2:]`: without the YAML the script stops at an
    IndexError, so a run line that leaves it out is refused; one that checks `len(sys.argv)` is not."""
    got = parse_launch("composer -n 8 --master_port 7501 train.py yamls/mpt.yaml max_duration=10ba",
                       exists={"train.py"}.__contains__)
    assert (got.launcher, got.nproc_per_node, got.args) == ("composer", 8, ["yamls/mpt.yaml", "max_duration=10ba"])
    train = "import sys\nimport torch\nyaml_path, args_list = sys.argv[1], sys.argv[2:]\n" + TRAIN
    root = make_repo(tmp_path / "job", {"train.py": train, "yamls/mpt.yaml": "a: 1\n"})
    assert check_run("composer train.py", root).problems == ["train.py requires the positional argument yaml_path"]
    assert check_run("composer train.py yamls/mpt.yaml max_duration=10ba", root).problems == []
    (root / "train.py").write_text(train.replace("yaml_path,", "if len(sys.argv) < 2:\n    sys.exit(1)\nyaml_path,"))
    assert check_run("composer train.py", root).problems == []


def test_a_docs_command_ending_in_a_stray_backslash_ends_at_its_code_fence():
    from wamf_tui.detect.shell import commands_in

    text = ("```bash\naccelerate launch train.py \\\n--lr 1 \\\n--report_to wandb\\\n```\n\n"
            "**Next**\n```bash\ncompute_environment: LOCAL_MACHINE\n```\n")
    assert commands_in("docs/guide.md", text) == [(2, "accelerate launch train.py  --lr 1  --report_to wandb "),
                                                  (9, "compute_environment: LOCAL_MACHINE")]


def test_a_docs_two_commands_glued_by_stray_backslashes_are_two():
    """llm.c's scripts/README: `torchrun ... train_gpt2.py \\` then `python train_gpt2.py \\`: two ways to
    start the same job, not one command with `python train_gpt2.py` as its arguments; `srun ... \\` then
    `python x.py` stays one command."""
    from wamf_tui.detect.shell import commands_in

    text = "```bash\ntorchrun --nproc_per_node=8 train.py \\\npython train.py \\\n```\n"
    assert [c.split() for _, c in commands_in("docs/x.md", text)] == [
        ["torchrun", "--nproc_per_node=8", "train.py"], ["python", "train.py"]]
    slurm = "```bash\nsrun --ntasks=8 \\\npython train.py --lr 1\n```\n"
    assert [c.split() for _, c in commands_in("docs/x.md", slurm)] == [
        ["srun", "--ntasks=8", "python", "train.py", "--lr", "1"]]


def test_a_docs_command_written_a_flag_a_line_without_backslashes_is_one_command():
    """A guide that breaks a long command over lines with no backslashes ("write this in a single line"):
    each line that is only flags goes on the command above it; a comment or a blank line ends it."""
    from wamf_tui.detect.shell import commands_in

    text = ("```bash\naccelerate launch --num_cpu_threads_per_process 1 train.py \n --model=\"m.safetensors\" \n"
            " --network_module=networks.lora \n --fp16\n```\n\n```bash\n# --not-a-flag\n--help\n```\n"
            "```bash\npython eval.py\n\n--not-this\n```\n")
    assert [c.split() for _, c in commands_in("docs/guide.md", text)] == [
        ["accelerate", "launch", "--num_cpu_threads_per_process", "1", "train.py", '--model="m.safetensors"',
         "--network_module=networks.lora", "--fp16"],
        ["--help"], ["python", "eval.py"], ["--not-this"]]
    assert [c.split() for _, c in commands_in("train.sh", "python train.py\n--lr 1\n")] == [
        ["python", "train.py"], ["--lr", "1"]]  # a shell script runs each line: no joining there


def test_a_placeholder_quoted_whole_or_not_begun_by_a_latin_letter_is_a_hole():
    """`--model="<path to the model>"`, `<.ckpt or a folder>`, `<データ>`: values the reader fills in, left out
    and said; a placeholder inside a longer quoted value (`"a photo of <new1> cat"`) and a redirect stay."""
    launch = parse_launch('accelerate launch train.py --model="<.ckpt or dir>" --data="<データ>" --out <out dir> '
                          '--prompt "a photo of <new1> cat" < in.txt')
    assert launch is not None
    assert launch.args == ["--prompt", "a photo of <new1> cat"]
    assert launch.unresolved == ["<.ckpt or dir>", "<データ>", "<out dir>"]


def test_a_docs_command_with_its_middle_left_out_is_a_sketch_not_a_command():
    from wamf_tui.detect.shell import commands_in

    text = "```\naccelerate launch train.py ... --validation_split 0.1\npython train.py --tag a...b\n```\n"
    assert [c for _, c in commands_in("docs/x.md", text)] == ["python train.py --tag a...b"]


def test_a_readmes_html_pre_block_is_code():
    """BLIP's README: `<pre>python -m torch.distributed.run --nproc_per_node=8 train_caption.py </pre>` is its
    training command; a block over several lines is one too, its text HTML-unescaped; inline code is not."""
    from wamf_tui.detect.shell import commands_in

    text = ("Fine-tune:\n<pre>python -m torch.distributed.run --nproc_per_node=8 train_caption.py </pre> \n"
            "see <code>python x.py</code>\n<pre>\ntorchrun a.py \\\n  --x &lt;y&gt;\n</pre>\n")
    assert commands_in("README.md", text) == [
        (2, "python -m torch.distributed.run --nproc_per_node=8 train_caption.py"), (5, "torchrun a.py  --x <y>")]


def test_an_examples_input_path_this_machine_lacks_is_left_for_the_users_own():
    """open_clip's README: `--train-data '/data/cc12m/cc12m-train-{0000..2175}.tar' --imagenet-val
    /data/imagenet/validation/`, the authors' folders: left out and said (the user gives theirs); an output
    folder, a path that is here, and the user's own run line keep their words."""
    readme = ("torchrun --nproc_per_node 4 -m open_clip_train.main --train-data '/data/cc12m/shard-{0000..2175}.tar' "
              "--batch-size 320 --imagenet-val /data/imagenet/validation/ --logs /nonexistent/logs --init /tmp")
    launch = parse_launch(readme, "README.md:5")
    assert launch is not None
    assert launch.args == ["--batch-size", "320", "--logs", "/nonexistent/logs", "--init", "/tmp"]
    assert launch.unresolved == ["/data/cc12m/shard-{0000..2175}.tar", "/data/imagenet/validation/"]
    mine = parse_launch("python train.py --data=/nonexistent/x", "your answer")
    assert mine is not None and mine.args == ["--data=/nonexistent/x"]


def test_a_makefile_recipes_continued_lines_keep_their_dashes():
    """`@`/`-` prefix a recipe line; a continued line's `--policy.type=act` is a flag."""
    text = "train:\n\t@lerobot-train \\\n\t\t--policy.type=act \\\n\t\t--steps=4\n"
    assert [(n, c.split()) for n, c in commands_in("Makefile", text)] == [
        (2, ["lerobot-train", "--policy.type=act", "--steps=4"])]


def test_a_model_zoos_config_is_the_users_to_name(tmp_path):
    """mmpretrain documents `python tools/train.py configs/<model>/<x>.py` once per model, in each model's own
    README: no one config is the job, so the proposed command names none (the parser then asks for it); a
    repo whose docs show a few configs keeps the one its command names."""
    files = {f"configs/m{i}/README.md": f"```\npython tools/train.py configs/m{i}/m{i}_cifar.py\n```\n"
             for i in range(10)}
    files |= {f"configs/m{i}/m{i}_cifar.py": "model = dict()\n" for i in range(10)}
    root = make_repo(tmp_path / "zoo", {**files, "tools/train.py": TRAIN})
    top = next(c for c in scan_scripts(root).candidates if c.path == "tools/train.py")
    assert top.launch is not None and top.launch.args == [] and top.launch.command == "python tools/train.py"
    few = {k: v for k, v in files.items() if k.startswith(("configs/m1/", "configs/m2/"))}
    root = make_repo(tmp_path / "few", {**few, "tools/train.py": TRAIN})
    top = next(c for c in scan_scripts(root).candidates if c.path == "tools/train.py")
    assert top.launch is not None and top.launch.args[0].startswith("configs/m")


def test_an_mmengine_runner_trains_and_an_ops_test_script_is_no_entry(tmp_path):
    """mmpretrain: `tools/train.py` trains through `runner.train()`; `ops_dcnv3/test.py` (a CUDA op's check
    that calls backward) must not outrank it."""
    train = "import torch\nfrom mmengine.runner import Runner\n\nif __name__ == '__main__':\n" \
            "    runner = Runner.from_cfg(cfg)\n    runner.train()\n"
    root = make_repo(tmp_path / "r", {"tools/train.py": train, "README.md": "```\npython tools/train.py c.py\n```\n",
                                      "c.py": "model = dict()\n", "projects/ops/test.py": "import torch\n"
                                      "if __name__ == '__main__':\n    x.sum().backward()\n"})
    top = scan_scripts(root).candidates[0]
    assert top.path == "tools/train.py" and "trains" in top.reasons


def test_a_path_from_the_scripts_own_folder_is_written_from_the_commands_folder():
    """`PYTHONPATH=$(dirname $0)/..:$PYTHONPATH` in projects/dino/tools/slurm_train.sh: the reading's own
    marker for the repo root never reaches the command shown."""
    launch = parse_launch('PYTHONPATH="$(dirname $0)/..":$PYTHONPATH python tools/train.py --cfg $(dirname $0)/c.yaml',
                          "projects/dino/tools/slurm_train.sh:14", "projects/dino/tools", {}, {},
                          {"tools/train.py"}.__contains__)
    assert launch is not None and launch.env == ["PYTHONPATH=projects/dino:$PYTHONPATH"]
    assert launch.args == ["--cfg", "projects/dino/tools/c.yaml"] and "root" not in launch.command


def test_a_command_under_a_heading_for_another_machine_ranks_below_the_main_one_even_with_a_hole(tmp_path):
    root = make_repo(tmp_path / "r", {
        "README.md": "## Train\n```\ntorchrun --nproc_per_node=8 train.py {path_to_config}\n```\n"
                     "#### To run on Mac silicon devices:\nExample:\n```\npython train.py configs/tiny.yaml\n```\n",
        "configs/tiny.yaml": "size: 1\n", "train.py": TRAIN})
    launches = {x.source: x for x in scan_scripts(root).launches}
    assert launches["README.md:8"].other_machine == "To run on Mac silicon devices: / Example:"
    assert launches["README.md:3"].other_machine == ""
    top = scan_scripts(root).candidates[0].launch
    assert (top.launcher, top.left_out) == ("torchrun", ["{path_to_config}"])


def test_a_command_a_page_folds_away_in_details_ranks_below_its_plain_one(tmp_path):
    """torchtune's README reproduces a memory table's last row in a `<details>` block, first on the page and
    with every value set; the command in plain view further down is the job."""
    root = make_repo(tmp_path / "r", {
        "README.md": "## Memory\n<details>\n<summary>Command to reproduce final row.</summary>\n\n```\n"
                     "python train.py --config configs/big.yaml --packed --compile\n```\n</details>\n\n"
                     "## Training\n```\npython train.py --config configs/tiny.yaml\n```\n",
        "configs/big.yaml": "size: 2\n", "configs/tiny.yaml": "size: 1\n", "train.py": TRAIN})
    launches = {x.source: x for x in scan_scripts(root).launches}
    assert launches["README.md:6"].folded and not launches["README.md:12"].folded
    assert scan_scripts(root).candidates[0].launch.source == "README.md:12"
    # a page that folds every command (yolov5's README, its training under a `Training` summary) folds none away
    root = make_repo(tmp_path / "r2", {
        "README.md": "<details>\n<summary>Training</summary>\n\n```\npython train.py --config configs/big.yaml\n```\n"
                     "</details>\n", "docs/notes.md": "```\npython train.py --debug\n```\n",
        "configs/big.yaml": "size: 2\n", "train.py": TRAIN})
    assert not scan_scripts(root).launches[0].folded
    assert scan_scripts(root).candidates[0].launch.source == "README.md:5"


@pytest.mark.parametrize("folder", ["docs/legacy", "docs/deprecated", "archive"])
def test_a_command_from_an_older_versions_pages_ranks_below_a_current_page(tmp_path, folder):
    """`docs/source/legacy/FAQ.md` gives the job with an option its parser dropped since (`-rnn_size`): a
    current guide's command for the same script comes first, though the old one fills every value in."""
    root = make_repo(tmp_path / "r", {
        f"{folder}/FAQ.md": "```\npython train.py --save_model data/model --rnn_size 200\n```\n",
        "docs/guide.md": "```\npython train.py --config conf/{experiment}.yaml\n```\n",
        "conf/base.yaml": "size: 1\n", "train.py": TRAIN})
    top = scan_scripts(root).candidates[0].launch
    assert top.source == "docs/guide.md:2" and top.left_out == ["--config conf/{experiment}.yaml"]


def test_a_word_like_cpu_in_a_code_block_or_a_long_sentence_heads_nothing(tmp_path):
    root = make_repo(tmp_path / "r", {
        "README.md": "## Train\nThe loader keeps its buffers in CPU memory, so expect the first steps to be slow:\n"
                     "```\n# on cpu:\npython train.py --size 64\n```\n",
        "train.py": TRAIN})
    assert scan_scripts(root).launches[0].other_machine == ""


@pytest.mark.parametrize("line", ["python train.py --lr 3e-4  --batch=8", "torchrun\t--nproc_per_node=8 train.py\n",
                                  "a\u00a0b c", "python 'my script.py' --x \"a b\"", "python t.py # a comment",
                                  "X=$HOME/data python t.py ${ARGS}", "python t.py --p a\\ b"])
def test_a_commands_words_are_the_shells_with_or_without_quoting(line):
    import shlex

    from wamf_tui.detect.launch import _words

    assert _words(line) == shlex.split(line, comments=True)


FABRIC = ("import lightning as L\nfrom pathlib import Path\nfrom pytorch_lightning.loggers import WandbLogger\n"
          "out_dir = Path('out') / 'run'\nwandb_logger = WandbLogger()\n"
          "def main(devices: int = 1):\n    fabric = L.Fabric(devices=devices, loggers=[wandb_logger])\n"
          "    #fabric.launch()\n    out_dir.mkdir(parents=True, exist_ok=True)\n"
          + TRAIN.removeprefix("import torch\n").replace("\n", "\n    ")
          + "\nif __name__ == '__main__':\n    from jsonargparse import CLI\n    CLI(main)\n")


def test_fabrics_own_runner_is_the_launcher_one_node_of_a_multi_node_command(tmp_path):
    """A Fabric whose launch() is commented out needs a launcher that sets the rank variables; the docs' one is
    Lightning's own runner (`lightning run model`), given for two nodes: kept, on this node alone (the others
    would be waited for for ever). Its WandbLogger is switched off and its `out/` is made outside the checkout."""
    readme = ("```\nlightning run model --node-rank=0 --main-address=10.0.0.5 --accelerator=cuda --devices=8 "
              "--num-nodes=2 train.py --devices 8\n```\n")
    root, state, refused = walk(tmp_path, {"train.py": FABRIC, "README.md": readme})
    words = run_of(root, state).split()
    runner = words.index("lightning")
    assert words[runner:runner + 5] == ["lightning", "run", "model", "--accelerator=cuda", "--devices=8"]
    assert not any(w.startswith(("--node-rank", "--main-address", "--num-nodes")) for w in words)
    assert "WANDB_MODE=disabled" in words and words[:4] == ["mkdir", "-p", "ROOT.wamf-bench", "&&"]
    assert "the command joins 2 nodes" in proposals.run_notes(state)


def test_a_torchrun_command_for_several_nodes_runs_one_nodes_share(tmp_path):
    readme = "```\ntorchrun --nnodes=2 --node_rank=0 --master_addr=10.0.0.5 --nproc_per_node=8 train.py\n```\n"
    root, state, refused = walk(tmp_path, {"train.py": "import os\nrank = int(os.environ['RANK'])\n" + TRAIN,
                                           "README.md": readme})
    assert run_of(root, state) == f"{BENCH} torchrun --nproc_per_node=8 ROOT/wamf_bench.py train.py"


def test_a_command_read_from_a_here_document_into_a_variable_is_the_launch(tmp_path):
    """OpenRLHF's scripts: `read -r -d '' cmds <<EOF` over lines, then `deepspeed --module $cmds`; and a README's
    `$'User: {}\\nAssistant: '` is one word (bash's quoting), not a variable `$User` left to fill."""
    script = ("set -x\n\nread -r -d '' training_commands <<EOF\npkg.train \\\n   --ckpt.output_dir ./checkpoint/x \\\n"
              "   --template $'User: {}\\nAssistant: ' \\\n   --lr 5e-6\nEOF\n\nif [[ ${1} != \"slurm\" ]]; then\n"
              "    deepspeed --module $training_commands\nfi\n")
    body = ARGPARSE.format(args="p.add_argument('--ckpt.output_dir', default='./ckpt')\np.add_argument('--lr')\n"
                                "p.add_argument('--template')\n") + TRAIN
    root, state, refused = walk(tmp_path, {"pkg/__init__.py": "", "pkg/train.py": body,
                                           "examples/scripts/train.sh": script})
    launch = next(x for x in state.detected.scripts.launches if x.source == "examples/scripts/train.sh:11")
    assert launch.module == "pkg.train" and launch.unresolved == []
    assert launch.args == ["--ckpt.output_dir", "./checkpoint/x", "--template", "$'User: {}\\nAssistant: '", "--lr",
                           "5e-6"]
    words = state.run.split()
    assert "./checkpoint/x" not in words and f"--ckpt.output_dir={root}.wamf-bench" in words  # routed by its name
    said = subprocess.run(["bash", "-c", "printf %s " + state.run.split("--template ")[1].split(" --lr")[0]],
                          capture_output=True, text=True, check=True).stdout
    assert said == "User: {}\nAssistant: "


@pytest.mark.parametrize(("flag", "output"), [("--ckpt.output_dir", True), ("--ckpt.path", True),
                                              ("--data.path", False), ("--model.name_or_path", False)])
def test_a_dotted_option_groups_output_field_is_an_output_folder(tmp_path, flag, output):
    body = ARGPARSE.format(args=f"p.add_argument('{flag}', default='./x')\n") + TRAIN
    root = make_repo(tmp_path / "job", {"train.py": body})
    assert (flag in [o.off_switch for o in analyze_script(root / "train.py", root).output_dirs]) is output


def test_a_models_special_token_is_a_value_not_a_redirection():
    """open-r1's `--eos_token '<|im_end|>'`: no shell reads `<|` as a redirection, and the flag keeps its value;
    a real `< in.txt` and `2>/dev/null` are still the shell's."""
    launch = parse_launch("accelerate launch sft.py --eos_token '<|im_end|>' --lr 1 < in.txt 2>/dev/null",
                          exists=lambda p: True)
    assert launch is not None and launch.args == ["--eos_token", "<|im_end|>", "--lr", "1"]


def test_a_launch_the_scripts_own_comments_show_is_how_it_runs(tmp_path):
    """build-nanogpt: `# torchrun --standalone --nproc_per_node=8 train_gpt2.py` in a comment is its DDP launch
    (the README gives none); a comment's command for another file, or a synopsis, is not."""
    body = ("import os\n# simple launch:\n# python train_gpt2.py\n# DDP launch for e.g. 8 GPUs:\n"
            "# torchrun --standalone --nproc_per_node=8 train_gpt2.py\n# python other.py --lr 1\n"
            "# python train_gpt2.py [--lr LR]\nddp = int(os.environ.get('RANK', -1)) != -1\n" + TRAIN)
    root, state, refused = walk(tmp_path, {"train_gpt2.py": body})
    launches = {x.source: x.command for x in state.detected.scripts.launches}
    assert launches == {"train_gpt2.py:3": "python train_gpt2.py",
                        "train_gpt2.py:5": "torchrun --standalone --nproc_per_node=8 train_gpt2.py"}
    assert state.command == "torchrun --standalone --nproc_per_node=8 train_gpt2.py"


@pytest.mark.parametrize(("command", "gpus", "pinned"), [
    ("python train.py --data_path d.json", 8, True), ("python train.py --data_path d.json", 0, True),
    ("python train.py --data_path d.json", 1, False),
    ("CUDA_VISIBLE_DEVICES=3 python train.py --data_path d.json", 8, False),
    ("torchrun --nproc_per_node=2 train.py --data_path d.json", 8, False)])
def test_an_hf_trainer_job_in_one_process_is_pinned_to_one_gpu(tmp_path, command, gpus, pinned):
    """SimCSE's `python train.py`: transformers' Trainer in one process wraps the model in nn.DataParallel over
    every visible GPU, multiplying the docs' batch on a node with more (or one not seen yet): pinned to one GPU,
    and said; not where the node has one, the command pins the GPUs or starts one process per GPU, nor where
    the job places the model on the GPUs itself (`device_map`)."""
    from test_benchmark import HF_JOB

    root, state, refused = walk(tmp_path, {"train.py": HF_JOB, "README.md": f"```\n{command}\n```\n"}, gpus=gpus)
    assert state.command == command
    words = state.run.split()
    assert ("CUDA_VISIBLE_DEVICES=0" in words) is pinned and ("nn.DataParallel" in proposals.run_notes(state)) is pinned
    built = "    trainer = Trainer(model=model"
    placed = HF_JOB.replace(built, "    model = AutoModel.from_pretrained('x', device_map='auto')\n" + built)
    assert placed != HF_JOB
    root, state, refused = walk(tmp_path / "placed", {"train.py": placed, "README.md": f"```\n{command}\n```\n"},
                                gpus=gpus)
    assert "CUDA_VISIBLE_DEVICES=0" not in state.run.split() and state.analysis.config_system == "hf_trainer"


def test_a_tracker_under_a_dotted_groups_unset_flag_is_off_by_leaving_it_out(tmp_path):
    """OpenRLHF: `if args.logger.tensorboard_dir:` (default None) starts TensorBoard only when the flag is given:
    its switch is `--logger.tensorboard_dir`, left out, never the group's name `logger`."""
    body = ARGPARSE.format(args="p.add_argument('--logger.tensorboard_dir', default=None)\n") + (
        "from torch.utils.tensorboard import SummaryWriter\nif args.logger.tensorboard_dir:\n"
        "    writer = SummaryWriter(args.logger.tensorboard_dir)\n") + TRAIN
    root = make_repo(tmp_path / "job", {"train.py": body})
    [tracker] = analyze_script(root / "train.py", root).trackers
    assert (tracker.off_switch, tracker.unset) == ("--logger.tensorboard_dir", "--logger.tensorboard_dir")


@pytest.mark.parametrize(("gpus", "visible", "procs"), [(2, "0,1", 2), (4, "0,1,2,3", 4), (8, "4,5,6,7", 4)])
def test_a_docs_visible_devices_the_node_lacks_become_its_first_gpus(tmp_path, gpus, visible, procs):
    """TinyLlama's `CUDA_VISIBLE_DEVICES=4,5,6,7 torchrun --nproc_per_node=4`: on a node of fewer than eight GPUs
    CUDA would see too few (or none) for the ranks started; the same count from GPU 0, at most the node's."""
    readme = "```\nCUDA_VISIBLE_DEVICES=4,5,6,7 torchrun --nproc_per_node=4 train.py\n```\n"
    root, state, refused = walk(tmp_path, {"train.py": "import os\nrank = int(os.environ['RANK'])\n" + TRAIN,
                                           "README.md": readme}, gpus=gpus)
    words = run_of(root, state).split()
    assert f"CUDA_VISIBLE_DEVICES={visible}" in words and f"--nproc_per_node={procs}" in words
    assert ("names GPUs this node" in proposals.run_notes(state)) == (gpus < 8)


def test_a_flag_the_benchmark_overrides_takes_its_negative_value_with_it(tmp_path):
    """OpenRLHF's `--ckpt.save_steps -1 --ckpt.output_dir ./ckpt`: both are replaced; the `-1` is the save
    flag's value, never left behind as a stray word the parser refuses."""
    readme = "```\npython train.py --save_steps -1 --out_dir ./ckpt --eval_steps -1 --lr -.5e-3\n```\n"
    args = ("p.add_argument('--save_steps', type=int, default=100)\np.add_argument('--out_dir', default='out')\n"
            "p.add_argument('--eval_steps', type=int, default=100)\np.add_argument('--lr', type=float)\n")
    body = ARGPARSE.format(args=args) + TRAIN.replace(
        "    optimizer.step()\n", "    optimizer.step()\n    if step % args.save_steps == 0:\n"
                           "        torch.save(model.state_dict(), args.out_dir + '/m.pt')\n")
    root, state, refused = walk(tmp_path, {"train.py": body, "README.md": readme})
    words = run_of(root, state).split()
    assert "--save_steps" not in words and "--out_dir" not in words
    assert words.count("-1") == 1 and words[words.index("-1") - 1] == "--eval_steps"
    assert words[words.index("--lr") + 1] == "-.5e-3"


def test_a_scripts_arguments_from_the_nth_are_what_its_caller_passed_from_there(tmp_path):
    """BasicSR's `./scripts/dist_train.sh 8 options/x.yml` runs `train.py -opt $CONFIG --launcher pytorch ${@:3}`:
    `$1` and `$2` are bound, `${@:3}` is nothing more, never the whole list nor a stray `:3}`."""
    script = ("GPUS=$1\nCONFIG=$2\n\npython -m torch.distributed.launch --nproc_per_node=$GPUS \\\n"
              "    train.py -opt $CONFIG --launcher pytorch ${@:3}\n")
    root, state, refused = walk(tmp_path, {"train.py": ARGPARSE.format(
        args="p.add_argument('-opt')\np.add_argument('--launcher')\np.add_argument('--local_rank', type=int)\n")
        + TRAIN, "scripts/dist_train.sh": script, "options/x.yml": "a: 1\n",
        "README.md": "```\n./scripts/dist_train.sh 8 options/x.yml\n```\n"})
    assert state.command.endswith("train.py -opt options/x.yml --launcher pytorch"), state.command


def test_a_job_whose_step_the_reading_cannot_find_is_still_capped_by_the_wrapper(tmp_path):
    """BasicSR builds its model from a registry (`build_model(opt)`, then `model.optimize_parameters(step)`): no
    loss, backward or optimizer step is read. The wrapper counts the optimizer steps as they run, so the run is
    capped all the same, never a full-length run line; an inference job gets no such table."""
    body = ARGPARSE.format(args="p.add_argument('-opt')\n") + (
        "model = build_model(args.opt)\nfor step, data in enumerate(loader):\n    model.feed_data(data)\n"
        "    model.optimize_parameters(step)\n")
    root, state, refused = walk(tmp_path, {"train.py": body, "README.md": "```\npython train.py -opt x.yml\n```\n"})
    assert state.analysis is not None and state.analysis.kind == "unknown"
    assert state.changes[0].env == ["WAMF_MAX_STEPS=30"] and "WAMF_MAX_STEPS=30" in state.run.split()
