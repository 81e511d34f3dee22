"""LightningCLI jobs with `-c config.yaml`: nested `--trainer.*` / `--data.*` keys of the named config are
proven, with their values; a `???` in it is a required input (wamf_tui/read/systems/lightning_cli.py)."""

from __future__ import annotations

from conftest import make_repo

from wamf_tui.propose.benchmark import propose
from wamf_tui.propose.validate import check_run
from wamf_tui.read.analyze import analyze_script
from wamf_tui.read.settings import accepts

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
    assert flags["all outputs into one folder"] == ["--trainer.logger.init_args.save_dir=$WAMF_OUT"]
    assert (accepts(a, "--data.init_args.filelist_path=f.txt"), accepts(a, "--data.init_args.file=f")) == (
        "proven", "unknown")
    missing = check_run("python train.py -c configs/a.yaml --trainer.max_steps=30", root, a)
    assert missing.problems == ["train.py requires --data.init_args.filelist_path"]


def test_the_configs_logger_and_model_checkpoint_are_the_rows_and_that_save_has_no_flag(tmp_path):
    """vocos: the logger and a ModelCheckpoint callback come from the config file, so their rows sit at their
    `class_path` lines; Lightning refuses `--trainer.enable_checkpointing=false` beside that callback, so the
    run line never gives it."""
    config = CONFIG + ("  callbacks:\n    - class_path: pytorch_lightning.callbacks.LearningRateMonitor\n"
                       "    - class_path: pytorch_lightning.callbacks.ModelCheckpoint\n"
                       "      init_args:\n        save_last: true\n")
    root = make_repo(tmp_path / "job", {"train.py": TRAIN, "configs/a.yaml": config})
    command = ["-c", "configs/a.yaml"]
    a = analyze_script(root / "train.py", root, command)
    assert [(t.name, t.file, t.line, t.off_switch) for t in a.trackers] == [
        ("TensorBoardLogger", "configs/a.yaml", 7, "--trainer.logger=false")]
    assert [(c.name, c.file, c.line, c.off_switch) for c in a.checkpoints] == [
        ("ModelCheckpoint", "configs/a.yaml", 13, None)]
    words = [w for c in propose(a, 30, "speed", command) for w in c.flags]
    assert "--trainer.enable_checkpointing=false" not in words
