"""Render `InitState` into contract.md, check a contract, write it safely.

One renderer serves both the bundled template and the plugin's own
`template/contract.md`: both have a `## Required` fenced block of five key
lines and `TBD` section bodies, which are filled in place. HTML comments are
guidance for whoever fills the template by hand and are dropped.
"""

from __future__ import annotations

import difflib
import errno
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from ..bench.results import command_hash, section_rows
from ..infra.files import TooLarge, read_regular, read_text, write_atomic
from ..infra.visible import visible_lines
from ..model import InitState

KEYS = ("reader", "repo", "activate", "run", "node")
SECTIONS = ("Required", "Correctness Instrumentation Plan", "Everything else")
STUB = "Copy the settled contract here."
PLACEHOLDER = re.compile(r"<[a-z](?:[^<>\n]*[a-z])?>")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_KEY_WIDTH = 16


def bundled_template() -> str:
    """The template shipped inside the wheel (or the source tree's copy). Read as a plain file:
    `importlib.resources` cost a fifth of a second at start for the same bytes."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "templates" / "contract.md"
    return (packaged if packaged.is_file() else here.parent / "templates" / "contract.md").read_text(encoding="utf-8")


def load_template(path: str | None) -> str:
    """The plugin's template when a path is given, else the bundled one. Raises OSError/ValueError."""
    if not path:
        return bundled_template()
    try:
        text = read_text(Path(path), 4 * 1024 * 1024)
    except TooLarge:
        raise ValueError(f"{path} is over 4 MiB; not a contract template") from None
    missing = [s for s in SECTIONS if f"## {s}" not in text]
    if missing:
        raise ValueError(f"{path} is not a contract template: no '## {missing[0]}' section")
    return text


# --- values -----------------------------------------------------------------


def literal(value: str) -> str:
    """One line of text exactly as typed: newlines become spaces, control characters visible escapes."""
    out = []
    for ch in value.replace("\r\n", " ").replace("\n", " ").replace("\t", " "):
        if unicodedata.category(ch) == "Cc":
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out).strip()


def placeholder_in(value: str) -> str | None:
    """The first piece of `value` the downstream check would read as an unfilled placeholder."""
    m = PLACEHOLDER.search(value)
    return m.group(0) if m else None


def _cell(value: str) -> str:
    return literal(value).replace("|", "\\|") or "none"


# --- rendering ----------------------------------------------------------------


def required_values(state: InitState) -> dict[str, str]:
    return {
        "reader": state.reader,
        "repo": state.repo,
        "activate": state.activate,
        "run": state.run,
        "node": state.node,
    }


def plan_body(state: InitState) -> str:
    recorder = literal(state.recorder) or "parity"
    lines = [f"Recorder: {recorder}.", ""]
    enabled = [c for c in state.checks if c.enabled]
    if enabled:
        lines += ["| checkpoint | where | what | steps | tolerance |", "|---|---|---|---|---|"]
        for c in enabled:
            lines.append(
                f"| {_cell(c.name)} | {_cell(c.where)} | {_cell(c.what)} | {_cell(c.steps)} | {_cell(c.tolerance)} |"
            )
    else:
        lines.append("No checkpoint agreed yet.")
    if state.extra_checks.strip():
        lines += ["", f"Also check: {literal(state.extra_checks)}"]
    return "\n".join(lines)


def everything_else_rows(state: InitState) -> list[tuple[str, str]]:
    hands_off = literal(state.hands_off) or "nothing named"
    if state.memory_trade.strip():
        hands_off += f"; memory for speed: {literal(state.memory_trade)}"
    rows = [
        ("Allowed changes", " · ".join(state.allowed_changes) or "none agreed yet"),
        ("Your own tests", state.own_tests or "none"),
        ("Hands off", hands_off),
        ("When to stop", state.when_to_stop or "not set"),
        ("Hints", ", ".join(state.hints) or "none"),
    ]
    if state.must_not_change.strip():
        rows.append(("What must not change", state.must_not_change))
    extra = [
        literal(x)
        for x in (
            f"Benchmark mode: {state.mode}" + (
                " (deterministic algorithms on, bit-exact checks)" if state.mode == "accuracy"
                else " (deterministic algorithms off, checks within tolerance)"),
            state.dirty_decision,
            # a switched-off row only when it is on; a row with nothing to switch (what stays on) always
            *(c.exclusion or "" for c in state.changes if c.exclusion and (c.enabled or not (c.flags or c.env))),
            state.guarantees,
            state.anything_else,
        )
        if x and x.strip()
    ]
    rows.append(("Anything else", " · ".join(extra) or "nothing"))
    if trial := trial_body(state):
        rows.append(("Trial", trial))
    return rows


def else_body(state: InitState) -> str:
    lines = ["| topic | agreed |", "|---|---|"]
    lines += [f"| **{topic}** | {_cell(value)} |" for topic, value in everything_else_rows(state)]
    return "\n".join(lines)


def render(state: InitState, template: str) -> str:
    """Fill `template` from `state`. Unanswered keys stay `TBD` so `check` flags them."""
    text = _COMMENT.sub("", template)
    values = {k: literal(v) or "TBD" for k, v in required_values(state).items()}
    bodies = {
        "Correctness Instrumentation Plan": plan_body(state),
        "Everything else": else_body(state),
    }
    out: list[str] = []
    section = None
    in_fence = False
    skipping = False
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
            skipping = False
            out.append(line)
            continue
        if section == "Required" and line.strip().startswith("```"):
            in_fence = not in_fence
            out.append(line)
            continue
        if section == "Required" and in_fence:
            key = line.split(maxsplit=1)[0] if line.strip() else ""
            out.append(f"{key:<{_KEY_WIDTH}}{values[key]}" if key in values else line)
            continue
        if section in bodies:
            if skipping and line.strip() not in ("---",):
                continue
            if line.strip() == "TBD":
                out.append(bodies[section])
                skipping = True
                continue
            if skipping:
                out.append("")
                skipping = False
        out.append(line)
    result = "\n".join(out)
    result = re.sub(r"\n{3,}", "\n\n", result)
    return result.rstrip() + "\n"


def trial_body(state: InitState) -> str:
    """The measured baseline and the claims' verdicts of the latest trial, as the **Trial** row of
    `## Everything else` (downstream's contract has three sections, no fourth), while the contract still
    runs the command it tried; "" otherwise. A `<` is escaped: a path's `<stdin>` is no placeholder."""
    t = state.trial
    if t is None or t.command_hash != command_hash(state.activate, state.run):
        return ""
    said = [f"{m}: {v}" for m, v in section_rows(t)]
    taken = [c for c in t.claims if not c.ok and c.kind and c.where in state.kept(c.kind)]  # said to stay on since
    held = [c.claim for c in t.claims if c.ok] + [f"{c.kind} at {c.where} stays on, as the trial saw" for c in taken]
    if held:
        said.append("claims held: " + ", ".join(held))
    said += [f"claim FAILED: {c.claim} (expected {c.expected}; observed {c.observed}" + (
        f" at {c.where}" if c.where else "") + ")" + (f"; fix: {c.fix}" if c.fix else "")
        for c in t.claims if not c.ok and c not in taken]
    return ("measured by a trial of the run line (`wamf-tui try`, or `t` in the app) on this node: "
            + " · ".join(said)).replace("<", "&lt;")


# --- checking -------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    line: int  # 1-based; 0 when the problem is an absence
    message: str


def _blank_comments(text: str) -> str:
    """Replace HTML comments by blank text of the same line count, so line numbers hold."""
    return _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def check(text: str) -> list[Problem]:
    """Every downstream rule, and a few structural ones, applied to a contract."""
    problems: list[Problem] = []
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        if STUB in line:
            problems.append(Problem(n, f'stub text "{STUB}"'))
        for m in PLACEHOLDER.finditer(line):
            problems.append(Problem(n, f"placeholder {m.group(0)}"))
        if line.strip() == "TBD":
            problems.append(Problem(n, "line is only TBD"))

    visible = _blank_comments(text).splitlines()
    if not any(line.startswith("# ") for line in visible):
        problems.append(Problem(0, "no title line ('# ...')"))
    heads = {line[3:].strip(): n for n, line in enumerate(visible, 1) if line.startswith("## ")}
    order = sorted(heads.values())
    for name, n in heads.items():  # downstream.md: a title, then three sections (a trial's row is in the third)
        if name not in SECTIONS:
            problems.append(Problem(n, f"section '## {name}' is not one of the contract's three"))
    for name in SECTIONS:
        if name not in heads:
            problems.append(Problem(0, f"missing section '## {name}'"))
            continue
        start = heads[name]
        end = next((n for n in order if n > start), len(visible) + 1)
        body = [(n, visible[n - 1]) for n in range(start + 1, end)]
        content = [(n, s) for n, s in body if s.strip() and s.strip() != "---"]
        if not content:
            problems.append(Problem(start, f"section '## {name}' is empty"))
        elif name == "Required":
            problems += _check_required(start, content)
        elif name == "Everything else":
            problems += _check_table(start, content)
    return sorted(problems, key=lambda p: p.line)


def _check_required(head: int, content: list[tuple[int, str]]) -> list[Problem]:
    fence = [n for n, s in content if s.strip().startswith("```")]
    if len(fence) < 2:
        return [Problem(head, "'## Required' has no fenced block of key lines")]
    inside = [(n, s) for n, s in content if fence[0] < n < fence[1]]
    problems = []
    seen: list[str] = []
    for n, s in inside:
        key, _, value = s.strip().partition(" ")
        if key not in KEYS:
            problems.append(Problem(n, f"unknown key '{key}' in the Required block"))
            continue
        if key in seen:
            problems.append(Problem(n, f"key '{key}' appears twice"))
        seen.append(key)
        if not value.strip():
            problems.append(Problem(n, f"key '{key}' has no value"))
        elif value.strip() == "TBD":
            problems.append(Problem(n, f"key '{key}' is still TBD"))
    for key in KEYS:
        if key not in seen:
            problems.append(Problem(fence[0], f"key '{key}' is missing from the Required block"))
    present = [k for k in seen if k in KEYS]
    if not problems and present != list(KEYS):
        problems.append(Problem(fence[0], f"keys are out of order: expected {', '.join(KEYS)}"))
    return problems


def required_block(text: str) -> dict[str, tuple[int, str]]:
    """key -> (line, value) of the `## Required` block's key lines."""
    found: dict[str, tuple[int, str]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        key, _, value = line.strip().partition(" ")
        if key in KEYS and key not in found and value.strip():
            found[key] = (n, value.strip())
    return found


def _cells(row: str) -> list[str]:
    inner = row.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [c.strip() for c in re.split(r"(?<!\\)\|", inner)]


def _check_table(head: int, content: list[tuple[int, str]]) -> list[Problem]:
    rows = [(n, s) for n, s in content if s.strip().startswith("|")]
    if len(rows) < 3:
        return [Problem(head, "'## Everything else' needs a two-column table with at least one row")]
    problems = []
    if not re.fullmatch(r"\|?\s*:?-+:?\s*\|\s*:?-+:?\s*\|?", rows[1][1].strip()):
        problems.append(Problem(rows[1][0], "table separator row should be |---|---|"))
    for n, s in rows[2:]:
        cells = _cells(s)
        if len(cells) != 2:
            problems.append(Problem(n, f"table row has {len(cells)} cells, expected 2"))
            continue
        if not re.fullmatch(r"\*\*.+\*\*", cells[0]):
            problems.append(Problem(n, "first cell should be the topic in bold (**Topic**)"))
        if not cells[1]:
            problems.append(Problem(n, f"row {cells[0]} has no value"))
    return problems


# --- writing --------------------------------------------------------------------


def diff(old: str, new: str, path: str = "contract.md") -> str:
    """The unified diff, with the file's control characters shown as escapes: the file on disk is the
    repo's, and an `ESC ] 52` in it would write the user's clipboard when shown."""
    return visible_lines("".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"{path} (on disk)", f"{path} (new)"
        )
    ))


def backup_path(path: Path) -> Path:
    """`<name>.bak`, or the first free `<name>.bak.N`: a backup is never overwritten."""
    candidate = path.with_name(path.name + ".bak")
    n = 0
    while candidate.exists() or candidate.is_symlink():
        n += 1
        candidate = path.with_name(f"{path.name}.bak.{n}")
    return candidate


def write_contract(path: Path, text: str) -> Path | None:
    """Write the contract; an existing one is kept first, byte for byte and with its mode, as the next
    free backup. Returns the backup path."""
    backup = None
    if path.exists():
        backup = backup_path(path)
        write_atomic(backup, _existing(path), mode=path.stat().st_mode & 0o777)
    write_atomic(path, text)
    return backup


MAX_EXISTING = 4 * 1024 * 1024


def _existing(path: Path) -> bytes:
    """The contract already at `path`, to compare and keep. Raises OSError for a FIFO or a device named
    as the contract (an `open` of it would wait forever) and for one over 4 MiB (not a contract)."""
    data = read_regular(path, MAX_EXISTING + 1)
    if len(data) > MAX_EXISTING:
        raise OSError(errno.EFBIG, f"{path.name} is over {MAX_EXISTING // 1024 // 1024} MiB; not a contract")
    return data


@dataclass(frozen=True)
class WriteResult:
    written: bool = False
    diff: str | None = None  # set when a different contract exists and overwrite was not agreed
    error: str | None = None
    backup: Path | None = None


def save_contract(path: Path, text: str, overwrite: bool = False) -> WriteResult:
    """Write unless a different contract exists and `overwrite` is not given; errors become a message."""
    try:
        if path.is_symlink():  # its target's text must not be shown, copied or replaced
            return WriteResult(error=f"{path.name} is a symlink; name another path")
        if path.is_dir():
            return WriteResult(error="that path is a folder")
        if path.exists() and not overwrite:
            old = _existing(path).decode("utf-8", errors="replace")
            if old != text:
                return WriteResult(diff=diff(old, text, path.name))
        return WriteResult(written=True, backup=write_contract(path, text))
    except OSError as e:
        return WriteResult(error=e.strerror or str(e))
