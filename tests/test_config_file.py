"""What the YAML file a command names leaves off, read as data (yaml.safe_load), never run."""

from __future__ import annotations

import pytest
from conftest import make_repo

from wamf_tui.propose.benchmark import propose
from wamf_tui.read.analyze import analyze_script

TRAIN = """\
import sys, yaml, torch
from dataclasses import dataclass

@dataclass
class Checkpoints:
    save_final: bool = True
    save_first: bool = False

cfg = load(sys.argv[1])
for step in range(1000):
    loss = model(x)
    loss.backward()
    opt.step()
if cfg.hub_model_id:
    push_to_hub(cfg.hub_model_id)
if cfg.checkpoints.save_final:
    torch.save(model, "final.pt")
if cfg.checkpoints.save_first:
    torch.save(model, "first.pt")
if cfg.eval_every and step % 10 == 0:
    evaluate(model)
if cfg.keep or cfg.other:
    torch.save(model, "either.pt")
"""


def rows(tmp_path, yaml_text: str, command: list[str]):
    root = make_repo(tmp_path / f"job{len(list(tmp_path.glob('job*')))}",
                     {"train.py": TRAIN, "configs/a.yml": yaml_text})
    a = analyze_script(root / "train.py", root, command)
    return a, {c.what.split(" (")[0].split(" off")[0]: c for c in propose(a, 30, "speed", command)}


def test_a_key_the_named_file_leaves_out_or_sets_false_is_off(tmp_path):
    a, by = rows(tmp_path, "checkpoints:\n  save_first: false\neval_every: 0\n", ["configs/a.yml"])
    assert by["push_to_hub"].what == "push_to_hub off (train.py:15)"
    assert by["push_to_hub"].how == "hub_model_id is not set in configs/a.yml"
    first = next(c for c in a.checkpoints if c.line == 19)
    assert first.config_off == "checkpoints.save_first is False in configs/a.yml"
    assert by["eval evaluate"].how == "eval_every is 0 in configs/a.yml"
    # a dataclass's default True: left out of the file, it still runs; an `or` has no single key
    assert next(c for c in a.checkpoints if c.line == 17).config_off is None
    assert next(c for c in a.checkpoints if c.line == 23).config_off is None
    assert "configs/a.yml" in a.digests  # edited later, the reading is done again


def test_nothing_is_claimed_when_the_file_sets_the_key_the_command_overrides_it_or_no_file_is_named(tmp_path):
    a, _ = rows(tmp_path, "hub_model_id: me/model\ncheckpoints: {}\n", ["configs/a.yml"])
    assert next(u for u in a.uploads).config_off is None
    a, by = rows(tmp_path, "checkpoints: {}\n", ["configs/a.yml", "--hub_model_id=me/m"])
    assert by["push_to_hub"].how != "hub_model_id is not set in configs/a.yml"
    (tmp_path / "outside.yml").write_text("checkpoints: {}\n")  # beside the repo, not in it
    for command in ([], ["configs/missing.yml"], ["../outside.yml"]):
        a, _ = rows(tmp_path, "checkpoints: {}\n", command)
        assert all(f.config_off is None for f in a.uploads + a.checkpoints), command


def test_a_file_that_is_no_mapping_or_no_yaml_is_ignored(tmp_path):
    for text in ("- a\n- b\n", "key: [unclosed\n", "!!python/object/apply:os.system ['echo hi']\n"):
        a, _ = rows(tmp_path, text, ["configs/a.yml"])
        assert all(f.config_off is None for f in a.uploads + a.checkpoints), text


def test_a_pydantic_fields_default_decides_a_key_the_file_leaves_out(tmp_path):
    source = ("import sys\nfrom pydantic import BaseModel, Field\nclass Hub(BaseModel):\n"
              "    strategy: str = Field('every_save', description='s')\n    private: bool = Field(default=None)\n"
              "    tags: list = Field(default_factory=list)\n"
              "cfg = load(sys.argv[1])\nfor step in range(9):\n    loss = model(x)\n    loss.backward()\n"
              "    opt.step()\nif cfg.strategy:\n    push_to_hub('a')\nif cfg.private:\n    upload_folder('b')\n"
              "if cfg.tags:\n    upload_folder('c')\n")
    root = make_repo(tmp_path / "job", {"train.py": source, "a.yml": "other: 1\n"})
    a = analyze_script(root / "train.py", root, ["a.yml"])
    assert [(u.line, u.config_off) for u in a.uploads] == [
        (13, None), (15, "private is not set in a.yml (default None)"), (17, None)]  # a factory: something


INTERVAL = """\
import sys, torch
cfg = load(sys.argv[1])
for step in range({start}, cfg.steps + 1):
    loss = model(x)
    loss.backward()
    opt.step()
    if step % cfg.checkpoints.interval == 0:
        torch.save(model, "ckpt.pt")
"""


@pytest.mark.parametrize(("start", "yml", "what"), [
    ("1", "checkpoints:\n  interval: 1000\n",
     "torch.save off (train.py:8): it saves every 1000 steps (checkpoints.interval is 1000 in configs/a.yml), past "
     "the benchmark's 30"),
    ("1", "checkpoints:\n  interval: 10\n", "torch.save (train.py:8) has no switch: it runs when step % "
                                             "cfg.checkpoints.interval == 0 holds"),  # within the 30 steps
    ("0", "checkpoints:\n  interval: 1000\n", "torch.save (train.py:8) still runs once, at step 0 (step % "
                                               "cfg.checkpoints.interval == 0 is true at 0)"),
])
def test_an_interval_the_config_file_sets_is_read_with_where_the_loop_starts(tmp_path, start, yml, what):
    """nanotron's `checkpoint_interval: 1000` in the YAML the command names: the loop counts from 1, so the save
    first comes at step 1000, past the benchmark's 30. From 0, it fires at the first step whatever the file says."""
    root = make_repo(tmp_path / "job", {"train.py": INTERVAL.replace("{start}", start), "configs/a.yml": yml})
    a = analyze_script(root / "train.py", root, ["configs/a.yml"])
    assert [c.what for c in propose(a, 30, args=["configs/a.yml"]) if "torch.save" in c.what] == [what]
