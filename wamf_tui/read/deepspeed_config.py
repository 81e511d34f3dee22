"""What the DeepSpeed JSON config the job runs with turns on: its monitors (tensorboard, wandb, csv, comet:
trackers like any other) and the settings that cost time in every step (`wall_clock_breakdown` times
each step's parts with device syncs). The table is data (`frameworks/deepspeed.json`).

Only a file the command names counts (`--deepspeed ds.json`, `--deepspeed_config ds.json`), or one a YAML
file the command names points to (`deepspeed: ds.json`, accelerate's `deepspeed_config_file:`): the run
line keeps it, so the benchmark runs with the same file. It is read with `json.loads`, plain data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from ..infra.files import read_regular
from ..model import Fact, Overhead
from .config_file import in_repo
from .frameworks import table

LIMIT = 1 << 20
_POINTERS = ("deepspeed", "deepspeed_config", "deepspeed_config_file")  # YAML keys that name the JSON


def named_configs(root: Path, here: Path, command: Sequence[str], yaml_files: list[tuple[str, dict]]
                  ) -> list[tuple[str, str, dict]]:
    """(its path in the repo, its text, its mapping) for each DeepSpeed config the command runs with."""
    words = [w.partition("=")[2] if w.startswith("-") else w for w in command]
    words += [v for _, data in yaml_files for v in _pointed(data)]
    found: list[tuple[str, str, dict]] = []
    for name, path in in_repo(root, here, words, (".json",)):
        try:
            text = read_regular(path, LIMIT).decode("utf-8", "replace")
            data = json.loads(text)
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(data, dict) and any(k in data for k in table("deepspeed")["is_config"]):
            found.append((name, text, data))
    return found


def _pointed(data: object) -> list[str]:
    """The JSON paths a YAML config names under a DeepSpeed key, at any depth."""
    if isinstance(data, dict):
        return [v for k, v in data.items() if k in _POINTERS and isinstance(v, str)] + \
            [p for v in data.values() for p in _pointed(v)]
    if isinstance(data, list):
        return [p for v in data for p in _pointed(v)]
    return []


def read_config(name: str, text: str, data: dict) -> tuple[list[Fact], list[Overhead]]:
    """(its monitors as trackers, its settings that cost time in each step) that are on."""
    ds = table("deepspeed")
    trackers = [Fact(name=tracker, file=name, line=_line(text, key))
                for key, tracker in ds["monitors"].items() if _on(data.get(key))]
    overheads = [Overhead(name=f"DeepSpeed {key}", file=name, line=_line(text, key), cost=cost)
                 for key, cost in ds["overheads"].items() if _on(data.get(key))]
    return trackers, overheads


def _on(value: object) -> bool:
    """`true`, or a section whose `enabled` is true (DeepSpeed's "auto" is not on)."""
    if isinstance(value, dict):
        return value.get("enabled") is True
    return value is True


def _line(text: str, key: str) -> int:
    m = re.search(rf'"{re.escape(key)}"\s*:', text)
    return text.count("\n", 0, m.start()) + 1 if m else 1
