"""absl with an ml_collections config file: `--config=path` plus `--config.key=value` overrides, each key
proven from the `get_config()` the named file builds (wamf_tui/read/systems/ml_collections_config.py)."""

from __future__ import annotations

from conftest import make_repo

from wamf_tui.propose.validate import check_run
from wamf_tui.read.analyze import analyze_script
from wamf_tui.read.settings import accepts

MAIN = """\
import torch
from absl import app, flags
from ml_collections.config_flags import config_flags

FLAGS = flags.FLAGS
config_flags.DEFINE_config_file("config", None, "Training configuration.", lock_config=True)
flags.DEFINE_string("workdir", None, "Work directory.")
flags.mark_flags_as_required(["workdir", "config"])


def main(argv):
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=FLAGS.config.optim.lr)
    for step in range(FLAGS.config.training.n_iters):
        loss = model(torch.ones(2)).sum()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    app.run(main)
"""
DEFAULTS = """\
import ml_collections


def get_default_configs():
  config = ml_collections.ConfigDict()
  config.training = training = ml_collections.ConfigDict()
  training.n_iters = 1300001
  config.optim = ml_collections.ConfigDict()
  config.optim.lr = 2e-4
  return config
"""
CONFIG = """\
from configs.default_configs import get_default_configs


def get_config():
  config = get_default_configs()
  training = config.training
  training.snapshot_sampling = True
  return config
"""
COMMAND = ["--config=configs/ve/cifar.py", "--workdir=w"]


def job(tmp_path):
    return make_repo(tmp_path / "job", {"main.py": MAIN, "configs/__init__.py": "",
                                        "configs/default_configs.py": DEFAULTS, "configs/ve/cifar.py": CONFIG})


def test_overrides_are_proven_from_the_config_file_the_command_names(tmp_path):
    root = job(tmp_path)
    a = analyze_script(root / "main.py", root, COMMAND)
    assert a.config_system == "ml_collections"
    assert {k: v for k, v in a.flags.items() if k.startswith("--config.")} == {
        "--config.training.n_iters": "1300001", "--config.optim.lr": "0.0002",
        "--config.training.snapshot_sampling": "True"}
    assert {r.name for r in a.required} >= {"--workdir", "--config"}
    assert [accepts(a, w) for w in ("--config.training.n_iters=30", "--config.training.n_iter=30", "--workdir=x",
                                    "--work=x")] == ["proven", "refused", "proven", "refused"]
    ok = check_run("python main.py --config=configs/ve/cifar.py --workdir=w --config.training.n_iters=30", root, a)
    assert (ok.problems, ok.warnings) == ([], [])
    bad = check_run("python main.py --config=configs/ve/cifar.py --workdir=w --config.training.iters=30", root, a)
    assert bad.problems == ["--config.training.iters is not a key of the config main.py is given"]


def test_without_a_named_config_file_an_override_is_unproven(tmp_path):
    root = job(tmp_path)
    a = analyze_script(root / "main.py", root)
    assert a.config_system == "ml_collections" and accepts(a, "--config.training.n_iters=30") == "unknown"
    said = check_run("python main.py --workdir=w --config.training.n_iters=30", root, a)
    assert said.problems == ["main.py requires --config"] and said.warnings == [
        "--config.training.n_iters: the config file it overrides was not read, so not proven"]
