"""LightningCLI jobs with `-c config.yaml`: nested `--trainer.*` / `--data.*` keys of the named config are
proven, with their values; a `???` in it is a required input (wamf_tui/read/systems/lightning_cli.py)."""

from __future__ import annotations

from conftest import make_repo

from wamf_tui.propose.benchmark import propose
from wamf_tui.propose.validate import check_run
from wamf_tui.read.settings import accepts
from wamf_tui.read.source import analyze_script

TRAIN = """\
from pytorch_lightning.cli import LightningCLI

if __name__ == "__main__":
    cli = LightningCLI(run=False)
    cli.trainer.fit(model=cli.model, datamodule=cli.datamodule)
"""
CONFIG = """\
data:
  class_path: pkg.Data
  init_args:
    filelist_path: ???
trainer:
  logger:
    class_path: pytorch_lightning.loggers.TensorBoardLogger
    init_args:
      save_dir: logs/
  max_steps: 2000000
"""


def test_keys_values_and_required_inputs_come_from_the_named_config(tmp_path):
    root = make_repo(tmp_path / "job", {"train.py": TRAIN, "configs/a.yaml": CONFIG})
    command = ["-c", "configs/a.yaml"]
    a = analyze_script(root / "train.py", root, command)
    assert a.config_system == "lightning_cli"
    assert (a.resolved["--trainer.max_steps"].value, a.resolved["--trainer.max_steps"].source) == (
        "2000000", "configs/a.yaml:10")
    assert [(r.name, r.line) for r in a.required] == [("--data.init_args.filelist_path", 4)]
    flags = {c.what: c.flags for c in propose(a, 30, "speed", command)}
    assert flags["total steps cut to 30 (was 2000000, configs/a.yaml:10)"] == ["--trainer.max_steps=30"]
    assert flags["all outputs into one folder"] == ["--trainer.logger.init_args.save_dir=runs/wamf-bench"]
    assert (accepts(a, "--data.init_args.filelist_path=f.txt"), accepts(a, "--data.init_args.file=f")) == (
        "proven", "unknown")
    missing = check_run("python train.py -c configs/a.yaml --trainer.max_steps=30", root, a)
    assert missing.problems == ["train.py requires --data.init_args.filelist_path"]
