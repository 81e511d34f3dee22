"""Detection against real repos, real virtual environments, and NVML faked at the binding's edge."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
from conftest import git, make_repo
from fake_nvml import FakeNvml, gpu

from wamf_tui.detect.environment import detect_environment, locate
from wamf_tui.detect.hardware import detect_hardware, verdict
from wamf_tui.detect.project import find_recorder, find_test_command
from wamf_tui.detect.repo import detect_repo
from wamf_tui.detect.scripts import MAX_READ, scan_scripts
from wamf_tui.detect.summary import describe


def test_repo_states(tmp_path):
    assert not detect_repo(tmp_path).is_git
    clean = make_repo(tmp_path / "clean")
    facts = detect_repo(clean)
    assert facts.is_git and facts.branch == "main" and len(facts.sha) == 7 and not facts.dirty
    assert facts.subject == "first commit"

    (clean / "train.py").write_text("import torch  # edited\n")
    (clean / "new.py").write_text("")
    (clean / "staged.py").write_text("")
    git(clean, "add", "staged.py")
    facts = detect_repo(clean)
    assert facts.modified == ["train.py"] and facts.untracked == ["new.py"] and facts.staged == ["staged.py"]

    empty = make_repo(tmp_path / "empty", commit=False)
    assert detect_repo(empty).no_commits

    detached = make_repo(tmp_path / "detached")
    git(detached, "checkout", "-q", "--detach")
    assert detect_repo(detached).detached

    odd = make_repo(tmp_path / "wéird path with spaces")
    (odd / "ünïcode file.py").write_text("")
    facts = detect_repo(odd)
    assert facts.root == str(odd.resolve()) and facts.untracked == ["ünïcode file.py"]


def test_mid_rebase_and_worktree(tmp_path):
    root = make_repo(tmp_path / "r", {"a.txt": "1\n"})
    git(root, "checkout", "-q", "-b", "other")
    (root / "a.txt").write_text("2\n")
    git(root, "commit", "-qam", "other")
    git(root, "checkout", "-q", "main")
    (root / "a.txt").write_text("3\n")
    git(root, "commit", "-qam", "main")
    subprocess.run(["git", "rebase", "other"], cwd=root, capture_output=True)
    assert detect_repo(root).operation == "rebase"
    other = make_repo(tmp_path / "w")
    git(other, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "side")
    assert detect_repo(other).worktrees == [str((tmp_path / "wt").resolve())]
    linked = detect_repo(tmp_path / "wt")  # from inside the linked worktree: the main checkout is the other one
    assert linked.worktrees == [str(other.resolve())] and linked.branch == "side" and linked.sha == detect_repo(
        other).sha
    listed = subprocess.run(["git", "worktree", "list", "--porcelain"], cwd=other, capture_output=True, text=True)
    assert sorted(x.split(" ", 1)[1] for x in listed.stdout.splitlines() if x.startswith("worktree ")) == sorted(
        [str(other.resolve()), *detect_repo(other).worktrees])  # the same list git gives


def test_status_changes_nothing(tmp_path):
    root = make_repo(tmp_path / "r")
    index = root / ".git" / "index"
    before = index.stat().st_mtime_ns
    (root / "train.py").touch()
    detect_repo(root)
    assert index.stat().st_mtime_ns == before  # GIT_OPTIONAL_LOCKS=0: no index refresh


def make_venv(path: Path, packages: dict[str, str]) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    site = next(path.glob("lib/python*/site-packages"))
    for name, version in packages.items():
        dist = site / f"{name.replace('-', '_')}-{version}.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        files = []
        if name == "torch":
            (site / "torch").mkdir()
            (site / "torch" / "version.py").write_text("cuda: Optional[str] = '12.4'\n")
            files.append("torch/version.py,,")
        (dist / "RECORD").write_text("\n".join(files) + "\n")
    return path


def test_environment_versions_from_a_real_venv(tmp_path):
    root = make_repo(tmp_path / "r")
    make_venv(root / ".venv", {"torch": "2.5.1", "numpy": "2.1.0", "transformers": "4.46.0"})
    env = detect_environment(root, environ={"PATH": "/usr/bin"})
    assert env.kind == "venv" and env.activate == "source .venv/bin/activate"
    assert env.torch == "2.5.1" and env.torch_cuda == "12.4"
    assert {p.name: p.version for p in env.packages}["transformers"] == "4.46.0"
    assert env.python_version == ".".join(map(str, sys.version_info[:3]))


def test_versions_from_folder_names_of_every_layout(tmp_path):
    """Wheel dist-info (underscored names), old egg-info, odd casing."""
    root = make_repo(tmp_path / "r")
    make_venv(root / ".venv", {"flash-attn": "2.6.3", "nvidia-cudnn-cu12": "9.1.0.70"})
    site = next((root / ".venv").glob("lib/python*/site-packages"))
    (site / "apex-0.1-py3.11.egg-info").mkdir()
    (site / "Hydra_Core-1.3.2.dist-info").mkdir()
    (site / "unrelated-1.0.dist-info").mkdir()
    got = {p.name: p.version for p in detect_environment(root, environ={"PATH": "/usr/bin"}).packages}
    assert got == {"flash-attn": "2.6.3", "nvidia-cudnn-cu12": "9.1.0.70", "apex": "0.1", "hydra-core": "1.3.2"}


def test_environment_kinds(tmp_path):
    root = tmp_path
    assert locate(root, {"CONDA_DEFAULT_ENV": "llm", "CONDA_PREFIX": "/opt/conda/envs/llm"}).activate == \
        "conda activate llm"
    (root / "environment.yml").write_text("name: trainenv\n")
    assert locate(root, {}).activate == "conda activate trainenv"
    (root / "uv.lock").write_text("")
    assert locate(root, {}).kind == "uv"
    mods = locate(root, {"LOADEDMODULES": "cuda/12.4:gcc/12"})
    assert mods.activate.startswith("module load cuda/12.4 gcc/12; ")


def test_nvml_that_never_answers_is_a_message(monkeypatch):
    """NVML can hang for good on a node with a GPU in a bad state: a plain statement after the
    timeout, and no second call piled onto the stuck one."""
    import threading
    import time

    from wamf_tui.detect import hardware
    from wamf_tui.model import HardwareFacts

    release = threading.Event()

    class HungNvml(FakeNvml):
        def nvmlInit(self):
            self.calls += 1
            release.wait(30)

    hung = HungNvml([gpu()])
    monkeypatch.setitem(sys.modules, "pynvml", hung)
    try:
        t = time.monotonic()
        hw = hardware.read_gpus(HardwareFacts(host="h"), timeout=0.3)
        assert time.monotonic() - t < 2
        assert not hw.nvml and not hw.gpus
        assert hw.nvml_error.startswith("NVML did not answer within 0.3 s")
        again = hardware.read_gpus(HardwareFacts(host="h"), timeout=0.3)
        assert "did not answer" in again.nvml_error and hung.calls == 1  # the stuck call is not joined by more
    finally:
        release.set()
    hardware._nvml_call.join(5)
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([gpu()]))
    assert len(hardware.read_gpus(HardwareFacts(host="h")).gpus) == 1  # answering again


def test_nvml_cases(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([], fail_init=True))
    hw = detect_hardware({})
    assert not hw.gpus and "no NVIDIA GPU visible on this machine" in hw.nvml_error

    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([]))
    assert detect_hardware({}).nvml_error == "no NVIDIA GPU visible on this machine"

    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([gpu(), gpu()]))
    hw = detect_hardware({"SLURM_JOB_ID": "77", "SLURM_JOB_PARTITION": "a100"})
    assert [g.free for g in hw.gpus] == [True, True] and verdict(hw) == "all 2 GPU(s) free"
    assert hw.driver == "550.54.15" and hw.cuda_driver == "12.4" and hw.slurm == {"job": "77", "partition": "a100"}

    import os

    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([gpu(), gpu(used=40000, util=97, pids=[os.getpid()])]))
    hw = detect_hardware({})
    busy = hw.gpus[1]
    assert not busy.free and busy.processes[0].pid == os.getpid() and busy.processes[0].user
    assert verdict(hw).startswith("1 of 2 GPU(s) busy: ")

    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([gpu()], fail_after=0))
    hw = detect_hardware({})
    assert "NVML stopped answering (GPU is lost)" in hw.nvml_error
    assert any("NVML stopped answering" in text for _, text in describe(types.SimpleNamespace(
        repo=None, env=None, hardware=hw, scripts=None, tests=None, recorder=None)))


def test_script_ranking_and_launchers(tmp_path):
    root = make_repo(tmp_path / "proj", {
        "README.md": "# proj\n\n```bash\ntorchrun --nproc_per_node=8 scripts/pretrain.py --config big.yaml\n```\n",
        "scripts/pretrain.py": "import torch\nloss.backward()\nif __name__ == '__main__':\n    main()\n",
        "launch.sbatch": "#!/bin/bash\n#SBATCH -N 2\nsrun -N 2 --ntasks-per-node=8 python scripts/pretrain.py \\\n"
                         "  --config big.yaml\n",
        "Makefile": "train:\n\tpython tools/finetune.py --lr 1e-4\n",
        "tools/finetune.py": "import torch\n",
        "utils/helpers.py": "import torch\n",
        "tests/test_x.py": "import torch\n",
    })
    scan = scan_scripts(root)
    assert scan.candidates[0].path == "scripts/pretrain.py"
    assert scan.candidates[0].launch.launcher in ("torchrun", "srun python")
    launches = {(x.launcher, x.script, x.nproc_per_node, x.nnodes) for x in scan.launches}
    assert ("torchrun", "scripts/pretrain.py", 8, None) in launches
    assert ("srun python", "scripts/pretrain.py", 8, 2) in launches
    assert ("python", "tools/finetune.py", None, None) in launches
    assert "utils/helpers.py" not in [c.path for c in scan.candidates]


def test_test_command_and_recorder(tmp_path):
    assert find_test_command(tmp_path) is None
    (tmp_path / "tests").mkdir()
    assert find_test_command(tmp_path) == "pytest tests"
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    assert find_test_command(tmp_path) == "pytest"
    (tmp_path / "Makefile").write_text("test:\n\tpytest\n")
    assert find_test_command(tmp_path) == "make test"
    assert find_recorder(tmp_path, []) is None
    (tmp_path / "train.py").write_text("from research.core import probe\n")
    assert "research.core.probe" in find_recorder(tmp_path, ["train.py"])
    (tmp_path / "research" / "core" / "probe").mkdir(parents=True)
    assert find_recorder(tmp_path, []).startswith("research/core/probe")


def test_detect_cli_json(tmp_path):
    root = make_repo(tmp_path / "r", {"train.py": "import torch\nloss.backward()\n"})
    out = subprocess.run([sys.executable, "-m", "wamf_tui", "detect", str(root), "--json"], capture_output=True,
                         text=True, timeout=120)
    data = json.loads(out.stdout)
    assert data["repo"]["branch"] == "main" and data["scripts"]["candidates"][0]["path"] == "train.py"


def test_detect_stream_gives_every_subject_once_as_the_app_reads_it(tmp_path):
    from wamf_tui.detect import SUBJECTS
    from wamf_tui.detect.isolated import ChildDetection

    root = make_repo(tmp_path / "r", {"train.py": "import torch\nloss.backward()\n", "tests/t.py": ""})
    out = subprocess.run([sys.executable, "-m", "wamf_tui", "detect", str(root), "--stream"], capture_output=True,
                         text=True, timeout=120)
    lines = [json.loads(x) for x in out.stdout.splitlines()]
    assert sorted(x["subject"] for x in lines) == sorted(SUBJECTS)
    got = dict(ChildDetection(root))  # the same child, read and validated as the app does
    assert got["repo"].branch == "main" and got["scripts"].candidates[0].path == "train.py"
    assert got["tests"] == "pytest tests" and got["recorder"] is None


def test_a_detection_child_that_fails_is_a_message_for_every_subject(tmp_path):
    from wamf_tui.detect import SUBJECTS
    from wamf_tui.detect.isolated import ChildDetection, DetectionFailed, parse_line

    root = make_repo(tmp_path / "r")
    slow = dict(ChildDetection(root, timeout=0.01))  # stopped long before Python has even started
    assert sorted(slow) == sorted(SUBJECTS)
    assert all(isinstance(f, DetectionFailed) and "did not finish within 0.01 s" in str(f) for f in slow.values())
    gone = dict(ChildDetection(tmp_path / "no-such-dir"))  # the child refuses: its own one-line message
    assert all(isinstance(f, DetectionFailed) and "no such directory" in str(f) for f in gone.values())
    assert isinstance(parse_line("Traceback (most recent call last):")[1], DetectionFailed)
    assert isinstance(parse_line('{"subject": "repo", "facts": {"is_git": "perhaps"}}')[1], DetectionFailed)
    assert str(parse_line('{"subject": "env", "error": "OSError: boom"}')[1]) == "OSError: boom"


def test_huge_repo_scan_is_bounded(tmp_path):
    n = MAX_READ + 1_000  # past the files it opens: it stops there
    root = tmp_path / "huge"
    root.mkdir()
    for i in range(n):
        (root / f"m{i}.py").write_bytes(b"import torch\n")
    scan = scan_scripts(root, [f"m{i}.py" for i in range(n)])
    assert scan.files_seen == n and scan.stopped_early


def test_real_torch_install_is_read_without_importing_it(tmp_path):
    pytest.importorskip("torch")  # .ci/run installs torch==2.13.0 (CPU) into the test venv
    env = detect_environment(tmp_path, environ={"VIRTUAL_ENV": sys.prefix})
    import torch

    assert env.torch == torch.__version__ and env.torch_cuda == torch.version.cuda


def test_submodules_are_listed(tmp_path):
    lib = make_repo(tmp_path / "lib")
    root = make_repo(tmp_path / "main")
    subprocess.run(["git", "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "third_party/lib"],
                   cwd=root, check=True, capture_output=True,
                   env={**__import__("os").environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@l",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@l"})
    facts = detect_repo(root)
    assert facts.submodules == ["third_party/lib"]
    assert "submodules: third_party/lib" in [t for _, t in describe(
        types.SimpleNamespace(repo=facts, env=None, hardware=None, scripts=None, tests=None, recorder=None))]


def test_the_detected_rows_put_the_branch_first_and_mark_every_cut(tmp_path):
    from wamf_tui.model import Detected, EnvFacts, PackageVersion

    root = make_repo(tmp_path / ("a-rather-long-checkout-folder-name" * 3))
    git(root, "commit", "-q", "--allow-empty", "-m", "a subject line much longer than the detected pane can show whole")
    env = EnvFacts(kind="venv", packages=[PackageVersion(name=f"lib{i}", version="1.0") for i in range(9)])
    rows = describe(Detected(repo=detect_repo(root), env=env))
    assert rows[0] == ("repo", f"main @ {rows[0][1].split(' @ ')[1]}") and rows[1] == ("", str(root))
    assert rows[2][1].endswith("…") and len(rows[2][1]) == 60
    assert ("", "lib0 1.0, lib1 1.0, lib2 1.0, lib3 1.0, lib4 1.0, lib5 1.0, …") in rows


def test_the_detected_pane_follows_the_chosen_script():
    from wamf_tui.detect.summary import describe
    from wamf_tui.model import Detected, ScriptCandidate, ScriptScan

    d = Detected(scripts=ScriptScan(candidates=[ScriptCandidate(path=f"s{i}.py", score=10 - i) for i in range(5)]))
    rows = [text for label, text in describe(d) if label == "script" or text.endswith(".py") or "more" in text]
    assert rows == ["s0.py", "s1.py", "s2.py", "2 more in the job question"]
    assert describe(d, "s4.py")[0] == ("script", "s4.py  (chosen)")


@pytest.mark.parametrize(("files", "expected"), [
    ({}, None),
    ({"Makefile": "build:\n\tcc\n"}, None),  # no test target
    ({"Makefile": "test:\n\tpytest\n", "noxfile.py": ""}, "make test"),
    ({"noxfile.py": "", "tox.ini": "[testenv]\n"}, "nox"),
    ({"tox.ini": "[testenv]\ncommands = pytest\n", "pytest.ini": ""}, "tox"),
    ({"tox.ini": "[flake8]\n"}, None),  # tox.ini without an environment: no tox
    ({"tox.ini": "[pytest]\n"}, "pytest"),
    ({"pyproject.toml": "[tool.pytest.ini_options]\n"}, "pytest"),
    ({"pytest.ini": "[pytest]\n"}, "pytest"),
    ({"setup.cfg": "[tool:pytest]\n"}, "pytest"),
    ({"setup.cfg": "[metadata]\n", "test/t.py": ""}, "pytest test"),
    ({"tests/t.py": "", "test/t.py": ""}, "pytest tests"),
])
def test_the_test_command_a_maintainer_would_reach_for(tmp_path, files, expected):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert find_test_command(tmp_path) == expected


@pytest.mark.parametrize(("source", "expected"), [
    ("from research.core import probe\n",
     "research.core.probe (already imported in train.py; switched on with PROBE=1)"),
    ("from tools import parity\n",
     "tools.parity (already imported in train.py; switched on with PARITY=1 PARITY_OUT=records.jsonl)"),
    ("import mylib.parity\n",
     "mylib.parity (already imported in train.py; switched on with PARITY=1 PARITY_OUT=records.jsonl)"),
    ("from a import b, probe\n", "a.probe (already imported in train.py; switched on with PROBE=1)"),
    ("import probes\nfrom x import probe_utils\n", None),  # other names: no recorder
])
def test_a_recorder_the_job_already_imports_and_how_it_is_switched_on(tmp_path, source, expected):
    (tmp_path / "train.py").write_text(source)
    (tmp_path / "notes.txt").write_text("from research.core import probe\n")  # not Python: not read
    assert find_recorder(tmp_path, ["notes.txt", "train.py"]) == expected


@pytest.mark.parametrize("where", ["probe", "parity", "tools/probe", "src/probe", "parity.py"])
def test_a_recorder_folder_or_module_the_repo_ships(tmp_path, where):
    path = tmp_path / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("") if where.endswith(".py") else path.mkdir()
    assert find_recorder(tmp_path, []) == (f"{where.removesuffix('.py')} (the repo's own recorder; switched on "
                                           "as its module says, e.g. PROBE=1)")


RANKED = {
    "README.md": "Train:\n\n```\ntorchrun --nproc_per_node=8 train.py --lr 1\n```\n",
    "train.py": "import torch\nloss.backward()\nif __name__ == '__main__':\n    main()\n",
    "generate.py": "import torch\nif __name__ == '__main__':\n    sample()\n",
    "examples/sub/README.md": "```\npython run.py --x 1\n```\n",
    "examples/sub/run.py": "import torch\nopt.zero_grad()\nloss.backward()\n",
    "scripts/launch.py": "from pkg.train_util import loop\nif __name__ == '__main__':\n    loop()\n",
    "pkg/__init__.py": "",
    "pkg/train_util.py": "import torch\ndef loop():\n    loss.backward()\n",
    "pkg/cli.py": "def main():\n    pass\n",
    "setup.py": "setup(entry_points={'console_scripts': ['mytrain=pkg.cli:main']})\n",
    "docs/usage.rst": "Run::\n\n    python scripts/launch.py --fast\n",
    "tests/test_train.py": "import torch\nloss.backward()\n",
    ".gitignore": "ignored/\n",
}


def test_scripts_are_ranked_by_what_trains_and_where_the_repo_launches_them(tmp_path):
    root = make_repo(tmp_path / "r", RANKED)
    (root / "untracked.py").write_text("import torch\nloss.backward()\n")  # not ignored: a candidate too
    (root / "ignored").mkdir()
    (root / "ignored" / "train.py").write_text("import torch\nloss.backward()\n")
    scan = scan_scripts(root)
    assert scan.folders == ["docs/", "examples/", "pkg/", "scripts/", "tests/"]
    assert scan.consoles == {"mytrain": "pkg.cli:main"}
    by = {c.path: c for c in scan.candidates}
    assert "ignored/train.py" not in by and "untracked.py" in by
    # entry name 5, torch 4, __main__ 2, trains 6, launched 6, the repo's own README 3
    assert by["train.py"].score == 26 and scan.candidates[0].path == "train.py"
    assert by["train.py"].launch.launcher == "torchrun" and by["train.py"].launch.nproc_per_node == 8
    run = by["examples/sub/run.py"]  # its README's folder is where it runs
    assert run.launch.cwd == "examples/sub" and "launched in examples/sub/README.md:2" in run.reasons
    launch = by["scripts/launch.py"]  # its loop lives in the package it imports; the .rst launches it
    assert "trains (in pkg/train_util.py)" in launch.reasons and launch.launch.source == "docs/usage.rst:3"
    assert by["generate.py"].reasons[-1] == "does not train (by its name)"
    assert by["generate.py"].score == 5 + 4 + 2 - 12  # entry name, torch, __main__, beside a trainer by its name
    assert by["tests/test_train.py"].score == 4 + 6 - 1 - 10 - 6  # torch, trains, one folder deep, a test, no launch


def test_the_training_command_outranks_an_eval_only_one_and_a_usage_synopsis(tmp_path):
    """Swin's docs: an eval command (`main.py --eval --resume ckpt`) and a usage line (`[--batch-size <b>]`)
    come before the Swin-T training example; the job is the training one."""
    train = "import argparse\nimport torch\n"
    root = make_repo(tmp_path / "r", {"main.py": train, "get_started.md": (
        "```bash\npython -m torch.distributed.launch --nproc_per_node 8 main.py --eval --cfg a.yaml "
        "--resume ckpt.pth\n```\n\n```bash\npython -m torch.distributed.launch --nproc_per_node <gpus> main.py "
        "\\\n--cfg <config-file> [--batch-size <batch-size-per-gpu>]\n```\n\n"
        "```bash\npython -m torch.distributed.launch --nproc_per_node 8 main.py \\\n--cfg configs/t.yaml "
        "--batch-size 128\n```\n")})
    scan = scan_scripts(root)
    assert scan.candidates[0].launch.args == ["--cfg", "configs/t.yaml", "--batch-size", "128"]


def test_a_bare_docs_command_is_the_one_launch_script_that_spells_out_its_settings(tmp_path):
    """llm.c: the scripts' README says `torchrun ... train_gpt2.py`, its one launch script gives the same line
    with the job's 25 flags."""
    train = "import argparse\nimport torch\nloss.backward()\n"
    short = "```bash\ntorchrun --standalone --nproc_per_node=8 train.py\n```\n"
    full = ("#!/bin/bash\ntorchrun --standalone --nproc_per_node=8 train.py \\\n    --model d12 \\\n"
            "    --batch_size 32\n")
    root = make_repo(tmp_path / "r", {"train.py": train, "scripts/README.md": short, "scripts/run.sh": full})
    launch = scan_scripts(root).candidates[0].launch
    assert (launch.source, launch.args) == ("scripts/run.sh:2", ["--model", "d12", "--batch_size", "32"])
    other = make_repo(tmp_path / "o", {"train.py": train, "scripts/README.md": short.replace("train.py", "train.py "
                                                                                             "--model d24"),
                                       "scripts/run.sh": full})
    assert scan_scripts(other).candidates[0].launch.source == "scripts/README.md:2"  # another model: another job
    recipes = make_repo(tmp_path / "many", {"train.py": train, "scripts/README.md": short, "scripts/run.sh": full,
                                            "scripts/big.sh": full.replace("d12", "d48")})
    assert scan_scripts(recipes).candidates[0].launch.source == "scripts/README.md:2"  # recipes: none is the job


def test_a_required_local_rank_is_what_the_legacy_launcher_passes(tmp_path):
    from wamf_tui.propose.validate import check_run
    from wamf_tui.read.analyze import analyze_script

    body = ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--cfg', required=True)\n"
            "p.add_argument('--local_rank', type=int, required=True)\nargs = p.parse_args()\n")
    root = make_repo(tmp_path / "r", {"main.py": body})
    a = analyze_script(root / "main.py", root)
    assert check_run("python -m torch.distributed.launch --nproc_per_node 2 main.py --cfg a", root, a).problems == []
    assert check_run("deepspeed main.py --cfg a", root, a).problems == []
    assert check_run("torchrun --nproc_per_node 2 main.py --cfg a", root, a).problems == [
        "main.py requires --local_rank"]


def test_the_apps_own_environment_is_never_proposed_for_the_job(tmp_path):
    """Started from its own venv (first on PATH), the app would propose `export PATH=<its venv>/bin` as the
    job's environment; the job's Python is the next one on PATH."""
    import shutil
    import sys

    from wamf_tui.detect.environment import locate

    other = tmp_path / "bin"
    other.mkdir()
    (other / "python3").symlink_to(shutil.which("python3", path="/usr/bin:/usr/local/bin") or sys.executable)
    own = str(Path(sys.executable).parent)
    facts = locate(tmp_path, {"PATH": f"{own}:{other}"})
    assert facts.kind == "system" and facts.python == str(other / "python3") and own not in facts.activate
