"""What a job finds through the folder it runs in: a script in a sub-folder that imports the repo's own package
gets the repo root on PYTHONPATH (this checkout's copy, not an installed one), and a file read by a fixed
relative name that is not there is a required input, asked for by name and refused by `check` until the
command runs where the file is."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_repo

from wamf_tui.detect.launch import parse_launch
from wamf_tui.model import InitState
from wamf_tui.propose import run_line
from wamf_tui.propose.benchmark import propose
from wamf_tui.propose.proposals import missing_in_run
from wamf_tui.propose.run_line import run_command
from wamf_tui.propose.validate import check_run
from wamf_tui.propose.wrapper import write_wrapper
from wamf_tui.read.analyze import analyze_script

LOOP = """
model = torch.nn.Linear(4, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    loss = model(torch.randn(2, 4)).sum()
    loss.backward()
    opt.step()
"""

PROJECT = "import sys\nimport torch\n\nfrom toolkit.model import GPT\n" + LOOP
READS_TEXT = "import torch\n\ntext = open('input.txt', 'r').read()\n" + LOOP


def state_of(root, a) -> InitState:
    state = InitState(repo_path=str(root), contract_path=str(root / "c.md"), script=a.script, analysis=a)
    return state.model_copy(update={"changes": propose(a, 30, "speed", [])})


def test_a_script_in_a_sub_folder_importing_the_repos_package_gets_the_root_on_pythonpath(tmp_path):
    root = make_repo(tmp_path / "job", {"toolkit/__init__.py": "", "toolkit/model.py": "GPT = 1\n",
                                        "projects/char/train.py": PROJECT})
    a = analyze_script(root / "projects/char/train.py", root, [])
    need = next(n for n in a.needs if n.code == "root_import")
    assert (need.file, need.line) == ("projects/char/train.py", 4)
    assert run_command(state_of(root, a)).split()[0] == "PYTHONPATH=."


def test_no_pythonpath_where_python_finds_the_package_itself(tmp_path):
    at_root = make_repo(tmp_path / "root", {"toolkit/__init__.py": "", "train.py": PROJECT})
    beside = make_repo(tmp_path / "beside", {"toolkit/__init__.py": "", "projects/char/toolkit/__init__.py": "",
                                             "projects/char/train.py": PROJECT})
    elsewhere = make_repo(tmp_path / "lib", {"projects/char/train.py": PROJECT})  # an installed library
    for root, script in ((at_root, "train.py"), (beside, "projects/char/train.py"),
                         (elsewhere, "projects/char/train.py")):
        a = analyze_script(root / script, root, [])
        assert not [n for n in a.needs if n.code == "root_import"], root
        assert "PYTHONPATH" not in run_command(state_of(root, a))


def test_a_file_read_by_a_fixed_name_that_is_not_there_is_required(tmp_path):
    root = make_repo(tmp_path / "job", {"chargpt.py": READS_TEXT})
    a = analyze_script(root / "chargpt.py", root, [])
    assert [(r.name, r.kind, r.line) for r in a.required] == [("input.txt", "file", 3)]
    assert missing_in_run(state_of(root, a), "python chargpt.py").startswith("input.txt")
    assert check_run("python chargpt.py", root, a).problems == [
        "chargpt.py requires input.txt (read from the folder the command runs in, chargpt.py:3: cd to the folder "
        "that holds it)"]
    text = tmp_path / "shakespeare"
    text.mkdir()
    (text / "input.txt").write_text("to be or not to be\n")
    assert check_run(f"cd {text} && python {root}/chargpt.py", root, a).problems == []


def test_a_file_the_job_can_make_or_already_has_is_not_asked_for(tmp_path):
    made = READS_TEXT.replace("text = open", "if not os.path.exists('input.txt'):\n    fetch('input.txt')\n"
                                             "text = open")
    writes = READS_TEXT.replace("open('input.txt', 'r')", "open('input.txt', 'w')")
    for name, source, extra in (("made", made, {}), ("writes", writes, {}),
                                ("there", READS_TEXT, {"input.txt": "hello\n"})):
        root = make_repo(tmp_path / name, {"chargpt.py": source, **extra})
        assert analyze_script(root / "chargpt.py", root, []).required == [], name


ENV_DATA = """\
import glob
import os
import torch

data_path = os.environ.get("DATA_PATH", ".")
out_dir = os.environ.get("OUT_DIR", "out")
train_files = os.path.join(data_path, "data/shards/train_*.bin")
ckpt = os.path.join(out_dir, "model.pt")
files = sorted(glob.glob(train_files))
""" + LOOP


def test_a_data_folder_from_an_environment_variable_whose_default_holds_nothing_is_required(tmp_path):
    root = make_repo(tmp_path / "job", {"train.py": ENV_DATA})
    a = analyze_script(root / "train.py", root, [])
    assert [(r.name, r.kind, r.line) for r in a.required] == [("DATA_PATH", "env", 7)]  # not OUT_DIR: written
    assert check_run("torchrun --standalone --nproc_per_node=1 train.py", root, a).problems == [
        "train.py requires DATA_PATH=... (the data folder, an environment variable: its default gives no file "
        "here, train.py:7)"]
    assert check_run("DATA_PATH=/data/shards torchrun --standalone --nproc_per_node=1 train.py", root, a).problems == []
    assert missing_in_run(state_of(root, a), "DATA_PATH=/data python train.py") == ""


def test_a_data_folder_whose_default_holds_the_files_is_not_asked_for(tmp_path):
    root = make_repo(tmp_path / "job", {"train.py": ENV_DATA, "data/shards/train_000.bin": "x"})
    assert analyze_script(root / "train.py", root, []).required == []


def test_a_job_that_reads_by_a_relative_path_runs_beside_the_checkout_with_links_to_what_it_reads(tmp_path):
    """`os.makedirs('logs')` and no setting to move it, and `open('input.txt')`: it runs from the benchmark
    folder with a link to the checkout's input.txt (one the checkout lacks is not linked: the job would make it
    through the link). Run for real: it reads the text, and nothing lands in the checkout."""
    fixed = "import os\nimport torch\n\nos.makedirs('logs', exist_ok=True)\nlog = open(f'logs/{1}.txt', 'w')\n"
    job = fixed + "text = open('input.txt').read()\nlog.write(text)\nlog.close()\nopen('notes.md').read()\n"
    root = make_repo(tmp_path / "fixed", {"train.py": job + LOOP, "input.txt": "hi\n"})
    a = analyze_script(root / "train.py", root, [])
    assert [(r.name, r.line) for r in a.cwd_reads] == [("input.txt", 6), ("notes.md", 9)]
    moved = [c for c in propose(a, 30, "speed", []) if c.folder]
    assert [(c.enabled, c.links) for c in moved] == [(True, ["input.txt", "notes.md"])]
    run = run_command(state_of(root, a))
    out = tmp_path / "fixed.wamf-bench"
    assert run.startswith(f"mkdir -p {out} && cd {out} && ln -sfn $OLDPWD/input.txt . && WAMF_MAX_STEPS=")
    assert "notes.md" not in run
    (root / "notes.md").write_text("read\n")  # now there: linked
    state = state_of(root, a)
    run = run_command(state)
    assert "&& ln -sfn $OLDPWD/input.txt . && ln -sfn $OLDPWD/notes.md . && " in run
    write_wrapper(Path(run_line.wrapper_path(state)))
    assert check_run(run, root, a).problems == []
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", run], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "logs/1.txt").read_text() == "hi\n" and not (root / "logs").exists()


def test_a_job_reading_inside_a_folder_it_makes_cannot_run_from_its_own_folder(tmp_path):
    """A read under a folder the job also makes (`logs/prev.txt` beside `os.makedirs('logs')`), or up out of the
    folder (`../shared.txt`): a link would write into the checkout, so the folder is named, and why; with an
    output setting, routed."""
    fixed = "import os\nimport torch\n\nos.makedirs('logs', exist_ok=True)\nlog = open(f'logs/{1}.txt', 'w')\n"
    for read, why in (("logs/prev.txt", "in logs/, which it also makes"),
                      ("../shared.txt", "outside the folder it runs in")):
        root = make_repo(tmp_path / read.replace("/", "_"), {"train.py": fixed + f"open('{read}').read()\n" + LOOP})
        a = analyze_script(root / "train.py", root, [])
        named = [c for c in propose(a, 30, "speed", []) if c.what == "folders it makes by a fixed relative path"]
        assert [(c.enabled, c.exclusion.split(":")[0:2]) for c in named] == [(False, ["logs/ (train.py", "4)"])]
        assert named[0].exclusion.endswith(f"it reads {read} (train.py:6) {why}")
        assert "cd " not in run_command(state_of(root, a))
    flag = ("import argparse\nimport os\nimport torch\n\np = argparse.ArgumentParser()\n"
            "p.add_argument('--log_dir', default='logs')\nargs = p.parse_args()\nos.makedirs(args.log_dir)\n")
    root = make_repo(tmp_path / "flag", {"train.py": flag + LOOP})
    a = analyze_script(root / "train.py", root, [])
    assert not [c for c in propose(a, 30, "speed", []) if c.folder or "fixed relative" in c.what]


@pytest.mark.parametrize("name", ["job", "my job"])
def test_a_job_that_reads_nothing_relative_runs_from_the_benchmark_folder(tmp_path, name):
    """cleanrl's `SummaryWriter(f"runs/{run_name}")`, a dataset downloaded into `./data`: nothing moves them, and
    the job reads no file by a relative path, so it runs from the benchmark folder, its script (and
    `PYTHONPATH=.`) by a path back. Run for real from the repo root: the writes land in the benchmark folder,
    none in the checkout, and `check` takes the line."""
    job = ("import os\nimport sys\nimport torch\n\nfrom toolkit.model import GPT\n\n"
           "os.makedirs('logs', exist_ok=True)\nopen('logs/run.txt', 'w').write('x')\n"
           "def fetch(root, download):\n    os.makedirs(root, exist_ok=True)\n\n"
           "fetch(root='./data', download=True)\n" + LOOP)
    root = make_repo(tmp_path / name, {"toolkit/__init__.py": "", "toolkit/model.py": "GPT = 1\n",
                                       "projects/char/train.py": job})
    a = analyze_script(root / "projects/char/train.py", root, [])
    assert sorted(d.name for d in a.output_dirs if d.name.startswith("'")) == ["'./data'", "'logs'"]
    state = state_of(root, a)
    run = run_command(state)
    out = tmp_path / f"{name}.wamf-bench"  # beside the checkout, never in it
    back = "$OLDPWD" if name == "job" else '"$OLDPWD"'  # a plain path needs no quotes
    assert run.startswith(f"mkdir -p {shlex.quote(str(out))} && cd {shlex.quote(str(out))} && PYTHONPATH={back} ")
    assert f" WAMF_OUT={shlex.quote(str(out))} " in run and run.endswith(f" {back}/projects/char/train.py")
    # a launcher's own config named by the docs' command is named by a path back too
    accelerate = state.model_copy(update={"launch": parse_launch(
        "accelerate launch --config_file conf/one.yaml projects/char/train.py", "README.md:3", "", {}, {},
        lambda p: (root / p).is_file())})
    (root / "conf").mkdir()
    (root / "conf/one.yaml").write_text("num_processes: 1\n")
    assert f' accelerate launch --config_file {back}/conf/one.yaml ' in run_command(accelerate)
    write_wrapper(Path(run_line.wrapper_path(state)))
    assert check_run(run, root, a).problems == []
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", run], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "logs/run.txt").is_file() and (out / "data").is_dir()
    assert not (root / "logs").exists() and not (root / "data").exists()
    status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=root, capture_output=True, text=True)
    assert status.stdout == "?? conf/\n?? wamf_bench.py\n"  # the test's config and the wrapper, nothing else


def test_a_tensorboard_writer_given_a_fixed_relative_folder_is_named_with_it(tmp_path):
    writer = ("import time\nimport torch\nfrom torch.utils.tensorboard import SummaryWriter\n\n"
              "writer = SummaryWriter(f'runs/{int(time.time())}')\n")
    root = make_repo(tmp_path / "tb", {"train.py": writer + LOOP})
    a = analyze_script(root / "train.py", root, [])
    moved = [c for c in propose(a, 30, "speed", []) if c.folder]
    assert [(c.what, c.enabled, c.why) for c in moved] == [
        ("run from the benchmark folder", True, "what it makes by a fixed relative path (runs/ (train.py:5)) lands "
                                                "in the benchmark folder, outside the checkout")]


def test_a_run_name_that_starts_the_paths_a_job_writes_carries_the_benchmark_folder(tmp_path):
    """k-diffusion's `f'{args.name}_state.json'` and `f'{args.name}_{step:08}.pth'`: every file lands in the folder
    the job runs in under the run's name, so the name itself is given inside the benchmark folder, the command's
    own name kept. Run for real: the files land there, none in the checkout."""
    job = ("import argparse\nimport json\nimport torch\n\np = argparse.ArgumentParser()\n"
           "p.add_argument('--name', type=str, default='model')\np.add_argument('--data', default='x')\n"
           "args = p.parse_args()\n"
           "json.dump({'step': 0}, open(f'{args.name}_state.json', 'w'))\n"
           "torch.save({}, f'{args.name}_{0:08}.pth')\nprint(f'{args.data}_train')\n" + LOOP)
    root = make_repo(tmp_path / "kd", {"train.py": job})
    a = analyze_script(root / "train.py", root, ["--name", "run1"])
    assert [(o.name, o.prefix) for o in a.output_dirs] == [("--name", True)]  # not `--data`: no run name
    state = state_of(root, a).model_copy(update={"launch": parse_launch("python train.py --name run1")})
    state = state.model_copy(update={"changes": propose(a, 30, "speed", ["--name", "run1"])})
    run = run_command(state)
    out = tmp_path / "kd.wamf-bench"
    assert f" --name={out}/run1 " in f"{run} " and run.count("run1") == 1  # the command's own `--name run1` goes
    write_wrapper(Path(run_line.wrapper_path(state)))
    assert check_run(run, root, a).problems == []
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", run], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(p.name for p in out.iterdir()) == ["run1_00000000.pth", "run1_state.json"]
    status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=root, capture_output=True, text=True)
    assert status.stdout == "?? wamf_bench.py\n"


CACHES = """import argparse
import os
import sys
import torch

HELPERS = './helpers'
sys.path.insert(0, HELPERS)
import helper

p = argparse.ArgumentParser()
p.add_argument('--output_dir', default='out')
p.add_argument('--train_file', required=True)
args = p.parse_args()
os.makedirs('./cache/', exist_ok=True)
rows = load_dataset('text', data_files=args.train_file, cache_dir='./cache/')
os.makedirs(args.output_dir, exist_ok=True)
open(os.path.join(args.output_dir, 'seen.txt'), 'w').write(helper.NAME + open(args.train_file).read())
""" + LOOP


def test_a_job_with_an_output_setting_that_also_caches_by_a_fixed_path_runs_beside_the_checkout(tmp_path):
    """SimCSE: `--output_dir` moves its outputs, but `load_dataset(..., cache_dir='./data/')` caches in the folder it
    runs in and `sys.path.insert(0, PATH_TO_SENTEVAL)` imports from there: it runs from the benchmark folder,
    the import folder linked in, the docs' data file (made in the checkout's `data/` by a download step, not there
    yet) named by a path back. Run for real once the file is there: nothing lands in the checkout."""
    body = CACHES.replace("rows = load_dataset", "load_dataset = lambda *a, **k: None\nrows = load_dataset")
    root = make_repo(tmp_path / "job", {"train.py": body, "helpers/helper.py": "NAME = 'h:'\n",
                                        "data/download.sh": "echo get it\n"})
    a = analyze_script(root / "train.py", root, ["--train_file", "data/train.txt"])
    assert ("./helpers", 7) in [(r.name, r.line) for r in a.cwd_reads]
    assert "'./cache/'" in [o.name for o in a.output_dirs]
    launch = parse_launch("python train.py --train_file data/train.txt", exists=lambda p: (root / p).exists())
    state = state_of(root, a).model_copy(update={"launch": launch})
    state = state.model_copy(update={"changes": propose(a, 30, "speed", launch.args)})
    run = run_command(state)
    out = tmp_path / "job.wamf-bench"
    assert run.startswith(f"mkdir -p {out} && cd {out} && ln -sfn $OLDPWD/helpers . && ")
    assert "--train_file $OLDPWD/data/train.txt" in run and f"--output_dir={out}" in run
    (root / "data/train.txt").write_text("text\n")
    write_wrapper(Path(run_line.wrapper_path(state)))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", run], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "seen.txt").read_text() == "h:text\n" and (out / "cache").is_dir() and not (root / "cache").exists()


def test_a_folder_named_by_a_module_constant_and_made_is_a_fixed_folder(tmp_path):
    """build-nanogpt: `log_dir = "log"` at the top, `os.makedirs(log_dir)` below, and no setting for it: the job
    writes log/ where it runs, so it runs beside the checkout."""
    body = "import os\nimport torch\nlog_dir = 'log'\nos.makedirs(log_dir, exist_ok=True)\n" + LOOP
    root = make_repo(tmp_path / "job", {"train.py": body})
    a = analyze_script(root / "train.py", root, [])
    assert ("'log'", None) in [(o.name, o.off_switch) for o in a.output_dirs]
    assert run_command(state_of(root, a)).startswith(f"mkdir -p {tmp_path / 'job.wamf-bench'} && cd ")


def test_a_save_under_a_config_field_a_flag_overrides_is_routed_by_that_flag(tmp_path):
    """nanoVLM: `os.path.join(vlm_cfg.vlm_checkpoint_path, run_name, ...)`, the config dataclass's relative
    `'checkpoints'`, which `--vlm_checkpoint_path` replaces: the run line gives it the benchmark folder. A save
    whose path starts elsewhere names no flag."""
    body = ("import argparse, os\nimport torch\nfrom dataclasses import dataclass\n\n@dataclass\nclass Cfg:\n"
            "    vlm_checkpoint_path: str = 'checkpoints'\n\np = argparse.ArgumentParser()\n"
            "p.add_argument('--vlm_checkpoint_path', type=str)\np.add_argument('--lr', type=float)\n"
            "args = p.parse_args()\ncfg = Cfg()\nif args.vlm_checkpoint_path is not None:\n"
            "    cfg.vlm_checkpoint_path = args.vlm_checkpoint_path\n" + LOOP +
            "    where = os.path.join(cfg.vlm_checkpoint_path, 'run', f'step_{step}')\n"
            "    torch.save(model.state_dict(), where)\n"
            "    torch.save(model.state_dict(), os.path.join('/tmp', 'x'))\n")
    root = make_repo(tmp_path / "job", {"train.py": body})
    a = analyze_script(root / "train.py", root, [])
    assert [o.off_switch for o in a.output_dirs if o.off_switch] == ["--vlm_checkpoint_path=..."]
    assert f"--vlm_checkpoint_path={tmp_path / 'job.wamf-bench'}" in run_command(state_of(root, a)).split()
