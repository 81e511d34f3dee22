"""The version of a library a repo pins in its dependency files, read as text (nothing is installed or run).

A job written for an old library takes only that library's flags: SimCSE pins `transformers==4.2.1`, whose
TrainingArguments has no `--report_to` or `--save_strategy` and whose HfArgumentParser takes bools as bare
switches, so the flags of today's transformers make its parser exit. An exact pin (`==4.2.1`, `~=4.2.1`) names
the release; an upper bound says every release allowed is that one or older (`<=4.40`) or older (`<4.3`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

_FILES = ("requirements.txt", "requirements*.txt", "requirements/*.txt", "setup.py", "setup.cfg", "pyproject.toml",
          "environment.yml", "environment.yaml")
_MAX_BYTES = 200_000


@dataclass(frozen=True)
class Pin:
    version: tuple[int, ...]
    below: bool  # an upper bound `<X`: some version under X, not X itself
    where: str  # `requirements.txt:1`

    def older_than(self, version: str) -> bool:
        """Whether every version the pin allows is older than `version` (`4.3.0`)."""
        v = parse(version)
        return self.version < v or self.below and self.version <= v

    def text(self) -> str:
        return ("below " if self.below else "") + ".".join(map(str, self.version))


def parse(version: str) -> tuple[int, ...]:
    """`4.2.1` -> (4, 2, 1); trailing zeros dropped, so `4.3` and `4.3.0` compare equal."""
    parts = [int(p) for p in re.findall(r"\d+", version)[:3]]
    while parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def installed_or_pinned(root: Path, package: str, installed: Mapping[str, str]) -> Pin | None:
    """The version of `package` installed in the job's environment (read from its `*.dist-info` name: what
    the run imports), else the repo's pin."""
    version = installed.get(package)
    if version and (v := parse(version)):
        return Pin(v, False, "the job's environment")
    return pinned(root, package)


def pinned(root: Path, package: str) -> Pin | None:
    """The first pin of `package` in the repo's dependency files (top level and `requirements/`)."""
    spec = re.compile(rf"(?<![\w.-]){re.escape(package)}\s*(?:\[[^\]\n]*\])?\s*([=~<>!][^;#\n\"']*)", re.I)
    seen: set[Path] = set()
    for pattern in _FILES:
        for path in sorted(root.glob(pattern)):
            if path in seen or not path.is_file() or path.is_symlink():
                continue
            seen.add(path)
            try:
                if path.stat().st_size > _MAX_BYTES:
                    continue
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for n, line in enumerate(text.splitlines(), 1):
                if line.lstrip().startswith("#"):
                    continue
                if (m := spec.search(line)) and (pin := _bound(m.group(1), f"{path.relative_to(root)}:{n}")):
                    return pin
    return None


def _bound(specifiers: str, where: str) -> Pin | None:
    """The version a specifier list names (`==4.2.1`, `~=4.2`), else its upper bound (`>=4.0,<4.3`)."""
    found = re.findall(r"(===?|~=|<=|<|>=|>|!=)\s*v?(\d+(?:\.\d+)*)", specifiers)
    exact = next((v for op, v in found if op in ("==", "===")), None)
    if exact is not None:
        return Pin(parse(exact), False, where)
    compatible = next((v for op, v in found if op == "~="), None)  # `~=4.2.1`: 4.2.x; `~=4.2`: any 4.x from 4.2
    if compatible is not None:
        parts = [int(p) for p in compatible.split(".")]
        return Pin(parse(compatible), False, where) if len(parts) > 2 else Pin((parts[0] + 1,), True, where)
    upper = next(((op, v) for op, v in found if op in ("<", "<=")), None)
    return Pin(parse(upper[1]), upper[0] == "<", where) if upper else None
