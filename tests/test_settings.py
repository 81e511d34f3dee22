"""Every flag the app adds is one the entry's own parser takes (wamf_tui/read/settings.py)."""

from __future__ import annotations

import pytest
from conftest import make_repo

from wamf_tui.propose.benchmark import propose
from wamf_tui.read.analyze import analyze_script
from wamf_tui.read.settings import accepts

FIRE_TRAINER = """\
import fire
import transformers

def train(base_model: str = "", output_dir: str = "./lora", num_epochs: int = 3, wandb_project: str = ""):
    use_wandb = len(wandb_project) > 0
    trainer = transformers.Trainer(
        model=model,
        args=transformers.TrainingArguments(
            num_train_epochs=num_epochs,
            output_dir=output_dir,
            save_strategy="steps",
            eval_strategy="steps",
            report_to="wandb" if use_wandb else "none",
        ),
    )
    trainer.train()
    model.save_pretrained(output_dir)

if __name__ == "__main__":
    fire.Fire(train)
"""


def test_a_trainer_tables_flags_are_never_added_to_a_fire_job(tmp_path):
    """alpaca-lora: fire over `train(...)`, which builds TrainingArguments in code. `--report_to none` would stop
    fire ("Could not consume arg"); only the function's parameters are the job's flags."""
    root = make_repo(tmp_path / "job", {"finetune.py": FIRE_TRAINER})
    a = analyze_script(root / "finetune.py", root)
    assert a.config_system == "fire"
    added = [f for c in propose(a) for f in c.flags]
    assert added and all(accepts(a, f) == "proven" for f in added if f.startswith("-"))
    assert not any(f.startswith(("--report_to", "--save_strategy", "--eval_strategy")) for f in added)


@pytest.mark.parametrize(("system", "flags", "word", "verdict"), [
    ("argparse", {"--max-steps": "10", "--seed": "1"}, "--max-s=3", "proven"),
    ("argparse", {"--max-steps": "10", "--max-save": "1"}, "--max-s=3", "refused"),
    ("argparse", {"--max-steps": "10"}, "--report_to none", "refused"),
    ("click", {"--shuffle": "True"}, "--no-shuffle", "proven"),
    ("absl", {"--use_x": "True"}, "--nouse_x", "proven"),
    ("absl", {"--use_x": "True"}, "--use_y=1", "refused"),
    ("hf", {"--max_steps": "-1"}, "--new_field 1", "unknown"),
    ("hydra", {"trainer.max_steps": "-1"}, "trainer.max_steps=3", "unknown"),
])
def test_what_each_parser_proves(system, flags, word, verdict):
    from wamf_tui.model import Analysis

    assert accepts(Analysis(script="t.py", config_system=system, flags=flags), word) == verdict


HYDRA_UNREAD = """\
import hydra
import torch

@hydra.main(version_base=None, config_path="conf", config_name="train")
def main(cfg):
    for step in range(cfg.trainer.max_steps):
        loss = model(x)
        loss.backward()
        opt.step()

if __name__ == "__main__":
    main()
"""


def test_yes_refuses_a_run_line_it_cannot_prove_and_names_the_flags(tmp_path):
    """fire over `main(**kwargs)`: any name is taken and maybe ignored, so a flag the reading finds only as a
    name (`--output_dir`) is not proven unless the documented command gives it. A Hydra app whose config the
    reading cannot compose proves none of its overrides: unattended, the app writes no contract and says which."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from wamf_tui.model import Analysis

    a = Analysis(script="t.py", config_system="fire", flags={"--max_train_step": "0"},
                 parser_open="passes flags main does not name on to its **kwargs")
    assert (accepts(a, "--max_train_step=3"), accepts(a, "--output_dir=x"),
            accepts(a, "--output_dir=x", ["--output_dir", "y"])) == ("proven", "unknown", "proven")
    root = make_repo(tmp_path / "job", {"train.py": HYDRA_UNREAD})
    answers = tmp_path / "a.toml"
    answers.write_text('script = "train.py"\n')
    wamf = str(Path(sys.executable).parent / "wamf-tui")
    out = subprocess.run([wamf, str(root), "--answers", str(answers), "--yes"], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")})
    assert out.returncode == 1 and not (root / "contract.md").exists(), out.stderr
    assert "cannot prove that the job's parser takes trainer.max_steps, hydra.run.dir;" in out.stderr


def test_a_parser_not_modelled_proves_its_documented_flags_and_no_others(tmp_path):
    """A job whose flags the reading cannot see (simple_parsing, a registry-built tyro config): the flags its
    own documented command gives are proven; another is named as not proven, and so fails the check."""
    from wamf_tui.propose.validate import check_run

    body = ("import simple_parsing\nimport torch\n\ndef main():\n    cfg = simple_parsing.parse(Config)\n"
            "    for x in data:\n        loss = model(x)\n        loss.backward()\n        opt.step()\n\n"
            "if __name__ == '__main__':\n    main()\n")
    root = make_repo(tmp_path / "job", {"train.py": body})
    a = analyze_script(root / "train.py", root)
    documented = ["--model", "gpt2", "--batch_size", "8"]
    ok = check_run("python train.py --model gpt2 --batch_size 4", root, a, documented=documented)
    assert ok.problems == [] and ok.warnings == []
    doubtful = check_run("python train.py --model gpt2 --log_to_wandb false", root, a, documented=documented)
    assert len(doubtful.warnings) == 1 and doubtful.warnings[0].startswith("--log_to_wandb: ")
