"""A Hydra app read the way Hydra composes it: the config tree from hydra-core's own compose, the benchmark's
overrides from it (`+key=` for a key the config lacks), `check` refusing what Hydra would refuse, and the
run line's overrides proven by composing them with Hydra itself. Fixture repos are written here."""

from __future__ import annotations

import os
import shlex
import subprocess
import warnings
from pathlib import Path

import pytest

from tests.conftest import make_repo
from wamf_tui.detect.launch import parse_launch
from wamf_tui.model import InitState
from wamf_tui.propose.benchmark import OUT_DIR as OUT
from wamf_tui.propose.benchmark import propose
from wamf_tui.propose.run_line import run_command
from wamf_tui.propose.validate import check_run
from wamf_tui.read.analyze import analyze_script
from wamf_tui.read.hydra_config import compose

TRAIN = """\
import hydra
import lightning as L


def train(cfg):
    if cfg.get("seed"):
        L.seed_everything(cfg.seed)
    model = hydra.utils.instantiate(cfg.model)
    callbacks = [hydra.utils.instantiate(c) for c in cfg.callbacks.values()]
    trainer = hydra.utils.instantiate(cfg.trainer, callbacks=callbacks)
    trainer.fit(model)
    if cfg.get("test"):
        trainer.test(model)


@hydra.main(version_base="1.3", config_path="../configs", config_name="train.yaml")
def main(cfg):
    train(cfg)


if __name__ == "__main__":
    main()
"""

MODULE = """\
import lightning as L
import torch


class Net(L.LightningModule):
    def training_step(self, batch, i):
        loss = self.layer(batch).sum()
        return loss
"""

CONFIGS = {
    "configs/train.yaml": "defaults:\n  - _self_\n  - model: net\n  - callbacks: default\n  - logger: null\n"
                          "  - trainer: default\n  - hydra: default\n  - experiment: null\n\n"
                          "test: True\nseed: null\ntask_name: train\n",
    "configs/model/net.yaml": "_target_: src.net.Net\n",
    "configs/trainer/default.yaml": "_target_: lightning.pytorch.trainer.Trainer\nmax_epochs: 10\n"
                                    "accelerator: cpu\ndevices: 1\n",
    "configs/trainer/gpu.yaml": "defaults:\n  - default\naccelerator: gpu\n",
    "configs/callbacks/default.yaml": "model_checkpoint:\n  _target_: lightning.pytorch.callbacks.ModelCheckpoint\n"
                                      "  monitor: val/acc\nearly_stopping:\n"
                                      "  _target_: lightning.pytorch.callbacks.EarlyStopping\n  monitor: val/acc\n",
    "configs/callbacks/none.yaml": "",
    "configs/logger/csv.yaml": "csv:\n  _target_: lightning.pytorch.loggers.csv_logs.CSVLogger\n  save_dir: logs\n",
    # Hydra's own settings name a plugin this install lacks (hydra_colorlog): composed without them
    "configs/hydra/default.yaml": "defaults:\n  - override hydra_logging: colorlog\n"
                                  "run:\n  dir: logs/${task_name}\n",
    "configs/experiment/example.yaml": "# @package _global_\nseed: 12345\n",
    "configs/experiment/owt/small.yaml": "# @package _global_\nseed: 7\n",  # chosen as `experiment=owt/small`
    "src/train.py": TRAIN,
    "src/net.py": MODULE,
    "src/__init__.py": "",
}


@pytest.fixture
def app(tmp_path) -> Path:
    return make_repo(tmp_path / "job", CONFIGS)


def _compose_with_hydra(root: Path, overrides: list[str]):
    """What Hydra itself makes of a run line's overrides (its own settings left out, as the app does)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with initialize_config_dir(config_dir=str(root / "configs"), version_base="1.3"):
            return hydra_compose("train", overrides=["~hydra", *overrides])


def test_the_config_is_composed_from_its_groups(app):
    a = analyze_script(app / "src/train.py", app)
    tree = a.hydra
    assert a.config_system == "hydra" and tree is not None and tree.composed
    assert tree.config == "configs/train.yaml"  # config_name="train.yaml" is not looked up as train.yaml.yaml
    assert tree.keys["trainer.max_epochs"] == "10" and tree.keys["test"] == "true" and tree.keys["seed"] == "null"
    assert "callbacks.model_checkpoint" in tree.nodes
    assert tree.choices["trainer"] == "default" and tree.choices["logger"] == "null"
    assert tree.groups["callbacks"] == ["default", "none"] and tree.groups["experiment"] == ["example"]
    assert "hydra_logging" in tree.note and "colorlog" in tree.note  # said, not hidden


def test_the_benchmark_switches_are_overrides_hydra_accepts(app):
    a = analyze_script(app / "src/train.py", app)
    steps = a.step_controls[0]
    assert (steps.name, steps.default) == ("+trainer.max_steps", "-1")  # the config has no max_steps: `+`
    changes = propose(a, steps=30, args=["trainer=gpu"])
    on = [f for c in changes if c.enabled for f in c.flags]
    assert on == ["+trainer.max_steps=30", "+trainer.enable_checkpointing=false", "~callbacks.model_checkpoint",
                  "test=false", "+trainer.limit_val_batches=0", "~callbacks.early_stopping",
                  "+trainer.default_root_dir=$WAMF_OUT",  # the Trainer writes to the working folder
                  "hydra.run.dir=$WAMF_OUT", "seed=1"]  # `if cfg.get("seed"):` would skip a seed of 0
    assert not any(c.env for c in changes if c.enabled)  # overrides are never environment variables
    command = "python src/train.py trainer=gpu"
    state = InitState(repo_path=str(app), contract_path=str(app / "contract.md"), script="src/train.py",
                      command=command, launch=parse_launch(command, exists={"src/train.py"}.__contains__),
                      changes=changes, analysis=a)
    run = run_command(state)
    assert check_run(run, app, a).problems == []
    cfg = _compose_with_hydra(app, shlex.split(run)[2:])  # Hydra itself takes every word of the run line
    assert cfg.trainer.max_steps == 30 and cfg.trainer.accelerator == "gpu" and cfg.trainer.limit_val_batches == 0
    assert list(cfg.callbacks) == [] and cfg.test is False and cfg.seed == 1


def test_a_plugin_the_primary_config_overrides_is_read_as_empty_and_put_back(tmp_path):
    """`override hydra/job_logging: colorlog` in the primary config's own defaults list (hydra_colorlog is not
    installed here): the job's tree and Hydra's run folder still compose; the stand-in is gone afterwards."""
    from hydra.core.config_store import ConfigStore

    conf = make_repo(tmp_path / "job", {"configs/config.yaml": (
        "defaults:\n  - _self_\n  - override hydra/job_logging: colorlog\n\nseed: 3\n"
        "hydra:\n  run:\n    dir: logs/${now:%Y}\n")}) / "configs"
    for _ in range(2):  # the second compose meets the plugin missing again: nothing was left in Hydra's store
        tree = compose(conf, "config", "1.3", "configs/config.yaml")
        assert tree.composed and tree.keys["seed"] == "3"
        assert tree.note == "hydra/job_logging/colorlog is a plugin not installed here: read as empty"
        assert "colorlog.yaml" not in ConfigStore.instance().repo["hydra"].get("job_logging", {})


HANDED = """\
import hydra


@hydra.main(config_path="configs/", config_name="config.yaml")
def main(config):
    from src.train import train
    from src.eval import evaluate
    mode = config.get('mode', 'train')
    if mode == 'train':
        return train(config)
    elif mode == 'eval':
        return evaluate(config)


if __name__ == "__main__":
    main()
"""
TRAIN_FN = """\
import pytorch_lightning as pl


def train(config):
    trainer = pl.Trainer(max_steps=config.trainer.max_steps)
    trainer.fit(model=None)
    if config.get("test_after_training") and not config.trainer.get("fast_dev_run"):
        trainer.test(model=None)
"""


def test_the_function_the_hydra_main_hands_its_config_reads_it(tmp_path):
    """`return train(config)` in the entry, `def train(config)` in src/train.py: its `config.get(...)` guard is a
    key of the composed config (`test_after_training=false`), and the call that trains (it starts Lightning's
    loop) is never read as an eval under the entry's `mode` branch."""
    root = make_repo(tmp_path / "job", {
        "run.py": HANDED, "src/__init__.py": "", "src/train.py": TRAIN_FN,
        "src/eval.py": "def evaluate(c):\n    pass\n",
        "configs/config.yaml": "mode: train\ntest_after_training: true\ntrainer:\n  max_steps: 100\n"})
    a = analyze_script(root / "run.py", root, [])
    assert [(e.name, e.file, e.off_switch) for e in a.evals if e.file == "src/train.py"] == [
        ("test", "src/train.py", "test_after_training=false")]
    assert not [e for e in a.evals if e.name == "train"]
    changes = propose(a, steps=30, args=[])
    assert any(c.flags == ["test_after_training=false"] and c.kind == "eval" for c in changes)


def test_a_wandb_logger_a_callback_needs_is_kept_and_disabled(app):
    """Lightning's LearningRateMonitor raises when the Trainer has no logger: with one configured, the wandb
    logger is kept and its run disabled (`logger.wandb.mode=disabled`), not deleted with `~logger`."""
    (app / "configs/logger/wandb.yaml").write_text(
        "wandb:\n  _target_: lightning.pytorch.loggers.wandb.WandbLogger\n  mode: online\n")
    a = analyze_script(app / "src/train.py", app, ["logger=wandb"])
    assert [(t.name, t.off_switch) for t in a.trackers if t.name == "WandbLogger"] == [("WandbLogger", "~logger")]
    (app / "configs/callbacks/default.yaml").write_text(
        "lr_monitor:\n  _target_: lightning.pytorch.callbacks.LearningRateMonitor\n  logging_interval: step\n")
    a = analyze_script(app / "src/train.py", app, ["logger=wandb"])
    assert [(t.name, t.off_switch) for t in a.trackers if t.name == "WandbLogger"] == [
        ("WandbLogger", "logger.wandb.mode=disabled")]
    run = run_command(InitState(repo_path=str(app), contract_path=str(app / "c.md"), script=a.script, analysis=a,
                                launch=parse_launch("python src/train.py logger=wandb"),
                                changes=propose(a, steps=30, args=["logger=wandb"])))
    assert "logger.wandb.mode=disabled" in run and "~logger" not in run
    assert check_run(run, app, a).problems == []


BUILT = """\
import hydra


def train(config):
    callbacks = [hydra.utils.instantiate(c) for c in config.callbacks.values()]
    trainer = hydra.utils.instantiate(config.trainer, callbacks=callbacks)
    trainer.fit(model=None)
    print(trainer.checkpoint_callback.best_model_path)
"""


def test_a_trainer_whose_callback_the_code_reads_keeps_its_checkpoints(tmp_path):
    """flash-attention: the Trainer the config builds runs in the `train(config)` the entry hands it (its rows sit
    at that `fit()`); a repo's ModelCheckpoint subclass is a checkpoint too; and since the code reads
    `trainer.checkpoint_callback.best_model_path` after fit, deleting them (or `enable_checkpointing=false`) would
    fail the run: they are kept, never switched off."""
    conf = ("trainer:\n  _target_: pytorch_lightning.Trainer\n  max_steps: 100\ncallbacks:\n  ckpt:\n"
            "    _target_: src.callbacks.ModelCheckpointMine\n    every_n_train_steps: 1000\n")
    files = {"run.py": HANDED, "src/__init__.py": "", "src/train.py": BUILT, "configs/config.yaml": conf,
             "src/eval.py": "def evaluate(c):\n    pass\n"}
    root = make_repo(tmp_path / "job", files)
    a = analyze_script(root / "run.py", root, [])
    fit = BUILT.splitlines().index("    trainer.fit(model=None)") + 1
    saves = [(f.name, f"{f.file}:{f.line}", f.off_switch) for f in a.checkpoints]
    assert saves == [("Trainer checkpoints (trainer; kept: the code reads its callback at src/train.py:8)",
                      f"src/train.py:{fit}", None)]
    assert not any("enable_checkpointing" in w or "~callbacks" in w for c in propose(a, steps=30, args=[])
                   for w in c.flags)
    for name, body in (("unread", BUILT.replace("    print(", "    # print(")),  # no read, or one under the test
                       ("tested", BUILT.replace("    print(", "    if config.get('test'):\n        trainer.test()\n"
                                                         "        print("))):  # pass the benchmark switches off
        other = make_repo(tmp_path / name, {**files, "src/train.py": body,
                                            "configs/config.yaml": conf + "test: true\n"})
        a = analyze_script(other / "run.py", other, [])
        assert [f.off_switch for f in a.checkpoints] == ["+trainer.enable_checkpointing=false ~callbacks.ckpt"]


def test_an_option_in_a_folder_of_its_group_is_taken(app):
    """`experiment=owt/small` picks configs/experiment/owt/small.yaml, as Hydra does; one not there is refused."""
    a = analyze_script(app / "src/train.py", app, ["experiment=owt/small"])
    assert a.hydra is not None and a.hydra.keys["seed"] == "7"
    assert check_run("python src/train.py experiment=owt/small", app, a).problems == []
    assert check_run("python src/train.py experiment=owt/large", app, a).problems == [
        "experiment=owt/large: owt/large is not an option of config group experiment (example)"]


def test_a_trainer_the_config_puts_on_the_cpu_is_moved_to_the_gpu(app):
    a = analyze_script(app / "src/train.py", app)
    plain = propose(a, steps=30, args=[])
    row = next(c for c in plain if "Trainer on the GPU" in c.what)
    assert row.flags == ["trainer.accelerator=gpu"] and "accelerator: cpu" in row.what
    for moved in (["trainer=gpu"], ["trainer.accelerator=gpu"]):  # the job's command already moves it
        assert not any("Trainer on the GPU" in c.what for c in propose(a, steps=30, args=moved))


@pytest.mark.parametrize(("word", "said"), [
    ("experiment=experiment_name.yaml",
     "experiment=experiment_name.yaml: experiment_name is not an option of config group experiment (example)"),
    ("trainer.max_steps=30", "trainer.max_steps=30: trainer.max_steps is not in the composed config "
                             "(configs/train.yaml); add it with +trainer.max_steps=30"),
    ("+test=false", "+test=false: test is already in the composed config (configs/train.yaml); use test=false"),
    ("logger=null", "logger=null: Hydra takes no null here; drop the group with ~logger"),
    ("+logger=csv", "+logger=csv: logger is already in the defaults list; use logger=csv"),
    ("~nokey", "~nokey: nokey is not in the composed config (configs/train.yaml)"),
    ("foo", "foo is not a Hydra override (key=value)"),
    ("--cfg", "--cfg makes train.py print its config or help and exit"),
    ("-m", "-m makes train.py sweep several runs, not one"),
    ("--lr=0.1", "--lr is not a Hydra flag"),
])
def test_check_refuses_what_hydra_refuses(app, word, said):
    a = analyze_script(app / "src/train.py", app)
    assert check_run(f"python src/train.py trainer=gpu {word}", app, a).problems == [said]
    if not word.startswith("-") and word != "foo":  # and Hydra itself refuses it too
        with pytest.raises(Exception):  # noqa: B017 (Hydra raises several types)
            _compose_with_hydra(app, [word])


@pytest.mark.parametrize("word", ["experiment=example", "experiment=example.yaml", "logger=csv", "callbacks=none",
                                  "~logger", "~callbacks.early_stopping", "++foo.bar=1", "hydra.run.dir=x",
                                  "+trainer.max_steps=5", "trainer.max_epochs=1"])
def test_check_passes_what_hydra_takes(app, word):
    a = analyze_script(app / "src/train.py", app)
    assert check_run(f"python src/train.py {word}", app, a).problems == []
    _compose_with_hydra(app, [word])


def test_another_config_name_is_said_not_checked(app):
    a = analyze_script(app / "src/train.py", app)
    v = check_run("python src/train.py --config-name other nokey=1", app, a)
    assert v.problems == [] and v.warnings == [
        "the run line picks another config than configs/train.yaml: its overrides were not checked"]


def test_a_pkg_search_path_is_never_composed(tmp_path, monkeypatch):
    """Hydra imports the package a `pkg://` search path names: the job's code would run in wamf-tui (here the
    package is importable, as it is when the job's environment is the one wamf-tui was installed into)."""
    marker = tmp_path / "imported"
    root = make_repo(tmp_path / "job", {
        **CONFIGS, "configs/train.yaml": "hydra:\n  searchpath:\n    - pkg://evil.configs\ntest: True\n",
        "evil/__init__.py": f"open({str(marker)!r}, 'w').close()\n", "evil/configs/__init__.py": ""})
    monkeypatch.syspath_prepend(str(root))
    tree = compose(root / "configs", "train", "1.3", "configs/train.yaml")
    assert not marker.exists()
    assert not tree.composed and "pkg://" in tree.note
    a = analyze_script(root / "src/train.py", root)
    assert any("pkg://" in n for n in a.notes)
    v = check_run("python src/train.py test=false", root, a)
    assert v.problems == [] and "overrides were not checked" in v.warnings[0]


def test_a_fifo_among_the_configs_is_refused_not_waited_on(tmp_path):
    root = make_repo(tmp_path / "job", CONFIGS)
    os.mkfifo(root / "configs/model/stuck.yaml")
    tree = compose(root / "configs", "train", "1.3", "configs/train.yaml")
    assert not tree.composed and "stuck.yaml could not be read" in tree.note


def test_a_config_hydra_cannot_compose_says_why(tmp_path):
    root = make_repo(tmp_path / "job", {**CONFIGS, "configs/train.yaml": "defaults:\n  - model: missing\n"})
    tree = compose(root / "configs", "train", "1.3", "configs/train.yaml")
    assert not tree.composed and tree.note.startswith("Hydra config not composed: ") and "missing" in tree.note


def test_the_commands_group_choices_are_composed_in(app):
    """`logger=csv callbacks=none` on the job's command change what the config holds: the logger it adds is
    a tracker to switch off, the callbacks it drops need no override, and Hydra takes the whole run line."""
    command = ["logger=csv", "callbacks=none", "trainer.max_epochs=3"]
    a = analyze_script(app / "src/train.py", app, command)
    assert a.hydra.overrides == ["logger=csv", "callbacks=none"]  # a value override changes no group
    assert a.hydra.choices["logger"] == "csv" and "callbacks.model_checkpoint" not in a.hydra.nodes
    assert [t.name for t in a.trackers] == ["CSVLogger"]
    on = [f for c in propose(a, steps=30, args=command) if c.enabled for f in c.flags]
    assert "~callbacks.model_checkpoint" not in on and "~logger" in on  # a chosen group is dropped, never =null
    run = "python src/train.py " + " ".join([*command, *on])
    assert check_run(run, app, a).problems == []
    cfg = _compose_with_hydra(app, shlex.split(run)[2:])
    assert cfg.trainer.max_steps == 30 and list(cfg.callbacks) == []
    # the analysis child gets the command too (what the app runs)
    from wamf_tui.read.isolated import analyze_in_child

    assert [t.name for t in analyze_in_child(app / "src/train.py", app, command).trackers] == ["CSVLogger"]
    assert analyze_script(app / "src/train.py", app).trackers == []  # without the command: no logger


def test_a_group_choice_that_does_not_compose_is_said_and_the_defaults_read(app):
    a = analyze_script(app / "src/train.py", app, ["experiment=nope"])
    assert a.hydra.composed and a.hydra.overrides == [] and a.hydra.choices["experiment"] == "null"
    assert "composed without the command's experiment=nope" in a.hydra.note


def test_a_hydra_deletion_is_written_bare_and_other_words_quoted():
    """`~callbacks.model_checkpoint` as Hydra's docs write it (bash leaves `~name` alone unless a user of that
    name exists); a word the shell would split or expand is still quoted."""
    from wamf_tui.detect.launch import LaunchCommand, format_command

    launch = LaunchCommand(command="", launcher="python", script="src/train.py")
    line = format_command(launch, ["~callbacks.model_checkpoint", "~logger=null", "x=a b", "~/data", "~/my data"])
    assert line == "src/train.py ~callbacks.model_checkpoint ~logger=null x='a b' ~/data ~/'my data'"
    # a docs' `~/data` is the user's home, as bash expands it: quoted whole the job would get a literal `~`
    said = subprocess.run(["bash", "-c", "printf '%s|' " + line.partition("x='a b' ")[2]], capture_output=True,
                          text=True, env={"HOME": "/home/u", "PATH": "/usr/bin:/bin"}, check=True).stdout
    assert said == "/home/u/data|/home/u/my data|"
    # an assignment quoted whole would be a command's name: its value alone is quoted
    launch.env = ["WAMF_OUT=/my jobs/x.wamf-bench"]
    assert format_command(launch).startswith("WAMF_OUT='/my jobs/x.wamf-bench' src/train.py")


def test_the_composed_configs_length_settings_and_output_folders_are_the_jobs(tmp_path):
    """A key only the config names (`trainer_config.max_epochs`, `paths.output_dir`) is a setting of the job
    as much as one the code reads; a bound only the config names is never the cap; Hydra's own run folder
    is an output of every Hydra app, and a null path (`ckpt_path`) is an input to resume from, not an output."""
    files = {**CONFIGS, "configs/train.yaml": CONFIGS["configs/train.yaml"] + (
        "paths:\n  output_dir: out/${task_name}\nckpt_path: null\n"
        "trainer_config:\n  max_epochs: 5\n  max_steps: 200\n  warmup_steps: 10\n")}
    root = make_repo(tmp_path / "job", files)
    a = analyze_script(root / "src/train.py", root)
    roles = {c.name: c.role for c in a.step_controls}
    assert roles["trainer_config.max_epochs"] == "bound" and roles["trainer_config.warmup_steps"] == "scale"
    assert "trainer_config.max_steps" not in roles and roles["+trainer.max_steps"] == "bound"
    assert roles["trainer.max_epochs"] == "bound" and roles["+trainer.accumulate_grad_batches"] == "scale"
    outs = {o.name: o.off_switch for o in a.output_dirs}
    assert outs["hydra.run.dir"] == "hydra.run.dir=..." and outs["paths.output_dir"] == "paths.output_dir=..."
    assert outs["trainer.default_root_dir"] == "+trainer.default_root_dir=..." and "ckpt_path" not in outs
    rows = propose(a, 30, "speed", [])
    assert [f for r in rows for f in r.flags].count(f"hydra.run.dir={OUT}") == 1


def test_a_placeholder_override_is_never_a_switch():
    """`logger=...` (a Lightning Trainer's `logger=` keyword read in a Hydra app) says a value is wanted, not
    which: written as it is, Hydra would look up a config group option named `...` and the job would crash."""
    from wamf_tui.read.switches import switch_off

    assert switch_off("+logger=...", {}) is None and switch_off("logger=...", {}) is None
    assert switch_off("trainer.logger=false", {}) == ("trainer.logger=false", ["trainer.logger=false"], [])


def test_a_library_modules_hydra_compose_is_not_the_jobs_parser(tmp_path):
    """fairseq's entry parses flags with argparse; a module it imports composes configs with
    `from hydra import compose, initialize`: the job is still an argparse job. In the entry itself it is Hydra."""
    entry = ("import argparse\nimport torch\nfrom pkg import configs\n\np = argparse.ArgumentParser()\n"
             "p.add_argument('--lr', type=float, default=0.1)\nargs = p.parse_args()\n")
    lib = "from hydra import compose, initialize\n\ndef load():\n    return compose('x')\n"
    root = make_repo(tmp_path / "job", {"train.py": entry, "pkg/__init__.py": "", "pkg/configs.py": lib})
    assert analyze_script(root / "train.py", root).config_system == "argparse"
    own = make_repo(tmp_path / "own", {"train.py": "from hydra import compose, initialize\nimport torch\n"
                                                   "cfg = compose('x')\n"})
    assert analyze_script(own / "train.py", own).config_system == "hydra"
