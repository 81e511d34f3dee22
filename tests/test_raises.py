"""A config's start-up checks (a dataclass `__post_init__` that raises): the benchmark never writes a run
line they stop. Each case is a small repo written here, read by the real analyzer."""

from __future__ import annotations

from conftest import make_repo

from wamf_tui.propose.benchmark import propose
from wamf_tui.propose.validate import check_run
from wamf_tui.read.analyze import analyze_script

ENTRY = """\
from dataclasses import dataclass

import torch
from transformers import HfArgumentParser

from pkg.hub import push_folder_to_hub


@dataclass
class Args:
    output_dir: str = "/tmp/out"
    push_to_hub: bool = True
    try_launch_eval_jobs: bool = True
    dataset_name: str = None

    def __post_init__(self):
        if self.try_launch_eval_jobs and not self.push_to_hub:
            raise ValueError("cannot launch eval jobs without pushing to the Hub")
        if self.dataset_name == "both":
            raise ValueError("two datasets")


def main(args):
    for batch in loader:
        loss = model(batch)
        loss.backward()
        optimizer.step()
    if args.push_to_hub:
        push_folder_to_hub(args.output_dir)


if __name__ == "__main__":
    (args,) = HfArgumentParser((Args,)).parse_args_into_dataclasses()
    main(args)
"""

HUB = "from huggingface_hub import HfApi\n\n\ndef push_folder_to_hub(folder):\n    HfApi().upload_folder(folder)\n"


def _job(tmp_path, entry=ENTRY):
    root = make_repo(tmp_path / "r", {"train.py": entry, "pkg/__init__.py": "", "pkg/hub.py": HUB})
    return root, analyze_script(root / "train.py", root)


def test_the_post_init_checks_are_read_as_tests_of_the_settings(tmp_path):
    _, a = _job(tmp_path)
    assert [(r.name, r.guard) for r in a.raises] == [
        ("Args.__post_init__", "args.try_launch_eval_jobs and (not args.push_to_hub)"),
        ("Args.__post_init__", "args.dataset_name == 'both'")]


def test_switching_the_upload_off_also_turns_off_what_its_check_needs_on(tmp_path):
    """open-instruct: `--push_to_hub False` alone makes __post_init__ raise; the upload row adds
    `--try_launch_eval_jobs False`, and the run line the rows make passes the check."""
    root, a = _job(tmp_path)
    upload = next(c for c in propose(a, 30) if c.kind == "upload")
    assert upload.enabled and upload.flags == ["--push_to_hub", "False", "--try_launch_eval_jobs=False"]
    assert check_run("python train.py --push_to_hub False --try_launch_eval_jobs=False", root, a).problems == []


def test_a_check_nothing_can_satisfy_holds_the_change_back(tmp_path):
    """A check on a setting that is no bool on by default (`args.mode == 'hub'`): the upload stays on, said."""
    entry = ENTRY.replace("try_launch_eval_jobs: bool = True", "mode: str = 'hub'").replace(
        "self.try_launch_eval_jobs and not self.push_to_hub", "self.mode == 'hub' and self.push_to_hub is False")
    root, a = _job(tmp_path, entry)
    upload = next(c for c in propose(a, 30) if c.kind == "upload")
    assert not upload.enabled and "Args.__post_init__ raises" in (upload.exclusion or "")


def test_a_run_line_whose_values_fail_a_check_is_refused(tmp_path):
    root, a = _job(tmp_path)
    problems = check_run("python train.py --push_to_hub no", root, a).problems
    assert [p for p in problems if "stops at start" in p]
    assert not check_run("python train.py --push_to_hub yes", root, a).problems
