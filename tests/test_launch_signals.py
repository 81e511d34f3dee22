"""The launcher from the code: how the modules the entry reaches start their processes, read as typed
signals (`read.launch`), the fewest processes a check enforces (`read.fewest`), and the run line built
and checked against them. One fixture job per signal, each written here."""

from __future__ import annotations

import ast

import pytest
from test_launch import BENCH, TRAIN, run_of, walk

from wamf_tui.propose import proposals
from wamf_tui.propose.validate import check_run
from wamf_tui.read.analyze import analyze_script
from wamf_tui.read.launch import process_signals, starts

MIN_GPUS = ("import sys, torch\nfrom torch.distributed import init_process_group\n"
            "def enough(min_gpus: int = 4) -> bool:\n"
            "    count = torch.cuda.device_count()\n"
            "    return torch.cuda.is_available() and count >= min_gpus\n"
            "def main():\n"
            "    init_process_group(backend='nccl')\n" + TRAIN.replace("\n", "\n    ").replace("import torch", "")
            + "\nif __name__ == '__main__':\n"
            "    least = 2\n"
            "    if not enough(min_gpus=least):\n"
            "        print('needs more GPUs')\n"
            "        sys.exit()\n"
            "    main()\n")


def signals(text: str, entry: bool = True):
    return process_signals(ast.parse(text), "train.py", text, entry)


@pytest.mark.parametrize("gpus, n", [(0, 2), (1, 2), (4, 4)])
def test_a_job_that_exits_below_two_gpus_gets_two_processes_at_least(tmp_path, gpus, n):
    root, state, refused = walk(tmp_path, {"train.py": MIN_GPUS}, gpus=gpus)
    assert run_of(root, state) == f"{BENCH} torchrun --standalone --nproc_per_node={n} ROOT/wamf_bench.py train.py"
    notes = proposals.run_notes(state)
    assert "the code exits below 2 processes (train.py:16)" in notes
    assert ("run it on a node with at least 2" in notes) == (gpus < 2)


@pytest.mark.parametrize("check, n", [
    ("assert torch.cuda.device_count() >= 2", 2),
    ("if torch.cuda.device_count() < 4:\n    raise SystemExit('need 4')", 4),
    ("world_size = int(os.environ['WORLD_SIZE'])\nif world_size <= 2:\n    sys.exit(1)", 3),
    ("if 8 > dist.get_world_size():\n    raise RuntimeError()", 8),
    ("if torch.cuda.device_count() < 2:\n    print('slow')", None),  # warns, goes on
    ("assert torch.cuda.device_count() <= 8", None),  # a ceiling, not a floor
])
def test_each_way_of_stopping_below_a_count(check, n):
    found = [s.count for s in signals(f"import os, sys, torch\n{check}\n") if s.kind == "fewest"]
    assert found == ([n] if n else [])


def test_a_torchrun_count_from_the_docs_is_raised_to_what_the_code_enforces(tmp_path):
    root, state, refused = walk(tmp_path, {"train.py": MIN_GPUS,
                                           "README.md": "```\ntorchrun --nproc_per_node=1 train.py\n```\n"})
    assert state.command == "torchrun --nproc_per_node=1 train.py"
    assert run_of(root, state) == f"{BENCH} torchrun --nproc_per_node=2 ROOT/wamf_bench.py train.py"


def test_check_refuses_fewer_processes_than_the_code_runs_with(tmp_path):
    root, state, refused = walk(tmp_path, {"train.py": MIN_GPUS})
    verdict = check_run("torchrun --nproc_per_node=1 train.py", root)
    assert any("the code exits below 2 (train.py:16" in p for p in verdict.problems)
    assert not any("exits below" in p for p in check_run("torchrun --nproc_per_node=2 train.py", root).problems)


def test_rank_variables_read_in_a_module_beside_the_entry_get_torchrun(tmp_path):
    trainer = "import os\nclass Trainer:\n    def __init__(self):\n        self.rank = int(os.environ['RANK'])\n"
    root, state, refused = walk(tmp_path, {"train.py": "from trainer import Trainer\nt = Trainer()\n" + TRAIN,
                                           "trainer.py": trainer})
    assert run_of(root, state) == f"{BENCH} torchrun --standalone --nproc_per_node=1 ROOT/wamf_bench.py train.py"
    assert "reads os.environ['RANK'] with no default (trainer.py:4)" in proposals.run_notes(state)


@pytest.mark.parametrize(("built", "launcher"), [
    ("Accelerator()", "accelerate launch"),
    # the code sets its precision: one process under plain python is the job as its authors run it (lerobot)
    ("Accelerator(mixed_precision='bf16')", "python"),
    ("Accelerator(**kwargs)", "python"),
])
def test_an_accelerator_built_in_an_imported_module_gets_accelerate_launch_unless_it_sets_its_precision(
        tmp_path, built, launcher):
    engine = ("from accelerate import Accelerator\ndef make():\n"
              f"    kwargs: dict = {{'mixed_precision': 'bf16', 'cpu': False}}\n    return {built}\n")
    root, state, refused = walk(tmp_path, {"train.py": "from engine import make\nacc = make()\n" + TRAIN,
                                           "engine.py": engine, "README.md": "```\npython train.py\n```\n"})
    assert run_of(root, state) == f"{BENCH} {launcher} ROOT/wamf_bench.py train.py"


FABRIC = ("import lightning as L\nfabric = L.Fabric(accelerator='cuda', devices=2, strategy='ddp')\n"
          "{launch}\n" + TRAIN)


def test_a_fabric_whose_launch_is_commented_out_needs_a_rank_launcher(tmp_path):
    root, state, refused = walk(tmp_path, {"train.py": FABRIC.format(launch="# fabric.launch()")})
    assert run_of(root, state) == f"{BENCH} torchrun --standalone --nproc_per_node=1 ROOT/wamf_bench.py train.py"
    assert "its launch() is commented out (train.py:3)" in proposals.run_notes(state)


def test_a_fabric_that_launches_itself_runs_with_python(tmp_path):
    root, state, refused = walk(tmp_path, {"train.py": FABRIC.format(launch="fabric.launch()")})
    assert run_of(root, state) == f"{BENCH} python ROOT/wamf_bench.py train.py"
    verdict = starts(state.analysis.processes)
    assert (verdict.launcher, verdict.spawns.kind, verdict.spawns.line) == ("python", "fabric_launch", 3)


def test_deepspeed_initialize_needs_a_rank_launcher(tmp_path):
    body = "import deepspeed\nengine, opt, _, _ = deepspeed.initialize(model=model, config='ds.json')\n" + TRAIN
    root, state, refused = walk(tmp_path, {"train.py": body})
    assert run_of(root, state) == f"{BENCH} torchrun --standalone --nproc_per_node=1 ROOT/wamf_bench.py train.py"


SPAWN = ("import torch.multiprocessing as mp\nimport torch.distributed as dist\n"
         "def worker(rank, world_size):\n"
         "    dist.init_process_group('nccl', rank=rank, world_size=world_size)\n"
         "    dist.init_process_group('gloo')\n" + TRAIN.replace("\n", "\n    ").replace("import torch", "")
         + "\nif __name__ == '__main__':\n    mp.spawn(worker, args=(2,), nprocs=2)\n")


def test_a_job_that_spawns_its_own_ranks_runs_with_python(tmp_path):
    root, state, refused = walk(tmp_path, {"train.py": SPAWN})
    assert run_of(root, state) == f"{BENCH} python ROOT/wamf_bench.py train.py"
    assert not [n for n in state.analysis.needs if n.code == "ranks"]


def test_a_rank_launcher_around_a_spawning_job_is_asked(tmp_path):
    root, state, refused = walk(tmp_path, {"train.py": SPAWN})
    doubts = check_run("torchrun --nproc_per_node=4 train.py", root).warnings
    assert any("each spawns its own ranks (train.py:13" in d for d in doubts)
    assert not any("spawns" in d for d in check_run("python train.py", root).warnings)


def test_a_lightning_trainer_starts_its_own_ranks():
    text = "from lightning import Trainer\ntrainer = Trainer(devices=4, strategy='ddp')\ntrainer.fit(model)\n"
    verdict = starts(signals(text))
    assert (verdict.launcher, verdict.spawns.kind, verdict.spawns.line) == ("python", "lightning", 2)
    hf = "from transformers import Trainer\ntrainer = Trainer(model=model)\n"
    assert starts(signals(hf)).spawns is None  # HF's Trainer is one process under python


@pytest.mark.parametrize("text, guard", [
    ("if args.distributed:\n    dist.init_process_group('nccl')\n", "args.distributed"),
    ("def setup(ddp):\n    if not ddp:\n        return\n    dist.init_process_group('nccl')\n", "not (not ddp)"),
    ("rank = int(os.environ['RANK']) if 'RANK' in os.environ else 0\n", "'RANK' in os.environ"),
    ("if torch.cuda.device_count() < 2:\n    sys.exit(1)\ndist.init_process_group('nccl')\n", None),
])
def test_each_signal_carries_the_condition_it_runs_under(text, guard):
    found = [s for s in signals(text) if s.kind in ("process_group", "rank_env")]
    assert [s.guard for s in found] == [guard]


def test_a_guarded_start_needs_no_launcher():
    text = "import os\nif 'RANK' in os.environ:\n    rank = int(os.environ['RANK'])\n    init_process_group()\n"
    assert starts(signals(text)).launcher == "python"
    assert starts(signals("import os\nrank = int(os.environ['RANK'])\n")).launcher == "rank launcher"


def test_an_imported_modules_main_block_never_runs():
    text = "import os\nif __name__ == '__main__':\n    rank = os.environ['RANK']\n"
    assert [s.kind for s in signals(text, entry=True)] == ["rank_env"]
    assert signals(text, entry=False) == []


def test_the_analysis_carries_the_signals(tmp_path):
    root = tmp_path / "job"
    root.mkdir()
    (root / "train.py").write_text(MIN_GPUS)
    a = analyze_script(root / "train.py", root)
    assert [(s.kind, s.line, s.count) for s in a.processes] == [("process_group", 7, None), ("fewest", 16, 2)]


def test_a_rank_variable_read_with_get_counts_only_where_its_none_would_fail():
    """torchtune's `local_rank = os.environ.get("LOCAL_RANK")` then `if local_rank is not None:` runs as one
    process; `int(os.environ.get("RANK"))` fails without a launcher."""
    checked = "import os\nlocal_rank = os.environ.get('LOCAL_RANK')\nif local_rank is not None:\n    x = 1\n"
    assert [s.kind for s in signals(checked)] == []
    assert [s.kind for s in signals("import os\nrank = int(os.environ.get('RANK'))\n")] == ["rank_env"]
