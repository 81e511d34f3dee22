"""The parser a job's flags are checked against is the one its entry calls, not one a library it imports
builds (a library's `parse_known_args` does not make the job's own flags unknowable)."""

from __future__ import annotations

from wamf_tui.propose.validate import check_run
from wamf_tui.read.analyze import analyze_script

ENTRY = """\
import argparse
import torch
from lib import launcher

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--steps", type=int, default=100)
    args = p.{parse}()
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    for _ in range(args.steps):
        model(torch.randn(1, 2)).sum().backward()
        opt.step()

if __name__ == "__main__":
    main()
"""

LIBRARY = """\
import argparse

def launcher():
    p = argparse.ArgumentParser()
    p.add_argument("--config-file")
    return p.parse_known_args()
"""


def _job(tmp_path, parse):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "__init__.py").write_text("from .launch import launcher\n")
    (tmp_path / "lib" / "launch.py").write_text(LIBRARY)
    (tmp_path / "train.py").write_text(ENTRY.format(parse=parse))
    return analyze_script(tmp_path / "train.py", tmp_path)


def test_a_library_parse_known_args_leaves_the_entry_parser_closed(tmp_path):
    a = _job(tmp_path, "parse_args")
    assert a.parser_open is None
    verdict = check_run("python train.py --lr 1 --bogus 2", tmp_path, a)
    assert verdict.problems == ["--bogus is not an option of train.py"]


def test_the_entry_parse_known_args_opens_its_parser(tmp_path):
    a = _job(tmp_path, "parse_known_args")
    assert a.parser_open is not None and "parse_known_args" in a.parser_open
    assert check_run("python train.py --lr 1 --bogus 2", tmp_path, a).problems == []
