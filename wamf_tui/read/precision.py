"""The precision the capped steps compute in, from the code and the job's resolved settings: an
`autocast` and its dtype, a `GradScaler` (fp16), an Accelerator's `mixed_precision=`, Fabric's or a
Lightning Trainer's `precision=`, a model cast (`model.half()`, `.to(torch.bfloat16)`), the job's own
`--bf16`/`--fp16`/`--mixed_precision`/`--dtype` settings at their values, and the launcher's
`--mixed_precision`. A checkpoint's tolerance follows it: a tolerance meant for fp32 fails every
AMP run, and one that fits bf16 hides a real change in fp32.

Read in two steps: each module's lines as `PrecisionSignal`s while the reading walks it, and the
verdict (`job_precision`) once the settings and the command are known.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..model import Analysis, PrecisionSignal
from .launch import guarded, main_block
from .nodes import walk
from .step import name_of
from .values import SETTINGS_OBJECTS, Values, dest, is_option, resolved, truth

Dtype = Literal["bf16", "fp16", "fp32"]
# how a dtype is spelled in code, configs and on command lines (Lightning's "bf16-mixed", "16-mixed", 16)
SPELLED: dict[str, Dtype] = {
    "bf16": "bf16", "bfloat16": "bf16", "bf16-mixed": "bf16", "bf16-true": "bf16", "bf16_mixed": "bf16",
    "fp16": "fp16", "float16": "fp16", "half": "fp16", "16": "fp16", "16-mixed": "fp16", "16-true": "fp16",
    "fp32": "fp32", "float32": "fp32", "float": "fp32", "32": "fp32", "32-true": "fp32", "no": "fp32",
    "false": "fp32",
}
_AUTOCASTS = ("autocast",)
_FRAMEWORKS = {"Accelerator": "mixed_precision", "Fabric": "precision", "Trainer": "precision"}
_CASTS: dict[str, Dtype] = {"half": "fp16", "bfloat16": "bf16"}
_MODEL = re.compile(r"model|net|module", re.I)  # what a cast of the job's weights is called on
_WORDS = ("autocast", "Accelerator", "GradScaler", "mixed_precision", "precision", "half", "bfloat16", "float16",
          "bf16", "fp16")
# HF's and TRL's training arguments: `bf16=True` / `fp16=True` run the Trainer's step under AMP
_HF_ARGS = ("TrainingArguments", "Seq2SeqTrainingArguments", "SFTConfig", "DPOConfig", "GRPOConfig", "ORPOConfig",
            "RewardConfig", "KTOConfig", "CPOConfig")


def precision_signals(tree: ast.Module, rel: str, text: str, entry: bool) -> list[PrecisionSignal]:
    """Each line of one module that sets its precision, with the dtypes the code allows there; an imported
    module's `__main__` block never runs."""
    if not any(w in text for w in _WORDS):
        return []
    names = _assignments(tree)
    found: list[PrecisionSignal] = []
    body = tree.body if entry else [s for s in tree.body if not main_block(s)]
    for node, guard in guarded(body, None):
        if not isinstance(node, ast.Call):
            continue
        signal = _signal(node, names)
        if signal is not None:
            kind, dtype_expr, enabled = signal
            dtypes, settings = _dtypes(dtype_expr, names, 0) if dtype_expr is not None else (set(), set())
            if kind == "scaler" or kind == "autocast" and dtype_expr is None:
                dtypes = {"fp16"}  # a scaler is for fp16; autocast on CUDA defaults to it
            if kind == "cast" and dtype_expr is None:
                dtypes = {_CASTS[_last(node.func)]}
            found.append(PrecisionSignal(
                kind=kind, file=rel, line=node.lineno, text=_short(node), dtypes=sorted(dtypes),
                settings=sorted(settings), guard=guard,
                enabled=None if enabled is None or _literal_true(enabled) else _short(enabled)))
    return found


def _signal(call: ast.Call, names: Mapping[str, list[ast.expr]]) -> tuple[
        Literal["autocast", "scaler", "framework", "cast"], ast.expr | None, ast.expr | None] | None:
    """(kind, the expression that gives its dtype, its `enabled=`) of a precision call; None for others."""
    last = _last(call.func)
    if any(k.arg is None for k in call.keywords):  # `GradScaler(**kwargs)`: a helper's; its caller decides
        return None
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    if last in _AUTOCASTS:
        dtype = kw.get("dtype") or (call.args[1] if len(call.args) > 1 else None)
        return "autocast", dtype, kw.get("enabled")
    if last == "GradScaler":
        return "scaler", None, kw.get("enabled")
    if last in _FRAMEWORKS and _FRAMEWORKS[last] in kw:
        return "framework", kw[_FRAMEWORKS[last]], None
    if last == "Accelerator":  # its precision is the launcher's: `--mixed_precision` or the accelerate config
        return "framework", ast.Name(id="mixed_precision"), None
    if last in _HF_ARGS:  # `TrainingArguments(fp16=True)`, `bf16=args.bf16`: on where its value holds
        on = [(key, value) for key in ("bf16", "fp16") if (value := kw.get(key)) is not None
              and not (isinstance(value, ast.Constant) and not value.value)]
        if on:
            key, value = on[0]
            return "framework", ast.Constant(key), None if _literal_true(value) else value
        return None
    if not isinstance(call.func, ast.Attribute) or not _MODEL.search(name_of(call.func.value)):
        return None  # a tensor's cast (`q.to(torch.bfloat16)`) is one operation's, not the job's precision
    if last in _CASTS and not call.args:  # `model.half()`
        return "cast", None, None
    if last == "to":  # `model.to(torch.bfloat16)`, `Net().to(dtype=...)`
        dtype = kw.get("dtype") or next((a for a in call.args if _torch_dtype(a)), None)
        if dtype is not None and _torch_dtype(dtype) in ("bf16", "fp16"):
            return "cast", dtype, None
    return None


def _dtypes(e: ast.expr, names: Mapping[str, list[ast.expr]], depth: int) -> tuple[set[Dtype], set[str]]:
    """(the dtypes an expression may give, the settings and globals that pick among them): literals,
    `torch.bfloat16`, either branch of `a if c else b`, a table's values (`{...}[dtype]`), names followed
    through their assignments."""
    if depth > 6:
        return set(), set()
    torch_dtype = _torch_dtype(e)
    if torch_dtype is not None:
        return {torch_dtype}, set()
    if isinstance(e, ast.Constant) and str(e.value).lower() in SPELLED:
        return {SPELLED[str(e.value).lower()]}, set()
    if isinstance(e, ast.IfExp):
        a, sa = _dtypes(e.body, names, depth + 1)
        b, sb = _dtypes(e.orelse, names, depth + 1)
        return a | b, sa | sb
    if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Dict):
        found: set[Dtype] = set()
        for v in e.value.values:
            found |= _dtypes(v, names, depth + 1)[0]
        return found, _dtypes(e.slice, names, depth + 1)[1]
    if isinstance(e, ast.Name):
        found, settings = set(), {e.id}
        for value in names.get(e.id, []):
            d, s = _dtypes(value, names, depth + 1)
            found |= d
            settings |= s
        return found, settings
    if isinstance(e, ast.Attribute):  # `args.mixed_precision`, `cfg.trainer.precision`
        return set(), {e.attr}
    if isinstance(e, ast.Call) and _last(e.func) in ("getattr",) and len(e.args) > 1:  # getattr(torch, dtype)
        return _dtypes(e.args[1], names, depth + 1)
    return set(), set()


def _torch_dtype(e: ast.expr) -> Dtype | None:
    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "torch":
        return SPELLED.get(e.attr)
    return None


def _assignments(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """Every value each plain name is given anywhere in the module (`ptdtype = {...}[dtype]`)."""
    found: dict[str, list[ast.expr]] = {}
    for node in walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found.setdefault(node.targets[0].id, []).append(node.value)
    return found


@dataclass(frozen=True)
class Precision:
    """The precision of the capped steps, where it was read and how sure the reading is."""

    dtype: Dtype
    where: str  # file:line, "the command", or "" (nothing sets it)
    how: Literal["code", "values", "command", "default", "possible"]  # possible: a condition not resolved
    condition: str = ""  # possible: the condition it needs


def job_precision(a: Analysis | None, words: Sequence[str]) -> Precision:
    """The precision of a job from its signals at the command's values (`words`: the run line's and the
    documented command's words). 16-bit beats fp32 where both run; what runs only under an unresolved
    condition is `possible`, and still counted as 16-bit: a tolerance too tight for it fails every run."""
    command = _command_values(words)
    possible: Precision | None = None
    if a is not None:
        values = resolved(a.flags, list(words), frozenset(SETTINGS_OBJECTS))
        sure: list[Precision] = []
        for s in a.precision:
            dtype = _decided(s, command, a.flags)
            if dtype == "fp32":
                continue
            given = any(name in command for name in s.settings)  # the command's value decided it
            where = "the command" if given else f"{s.file}:{s.line}"
            conditions = [c for c in (s.enabled, s.guard) if c is not None]
            runs = [_truth(c, values, command) for c in conditions]
            if False in runs:
                continue
            if dtype is not None and all(r is True for r in runs):
                sure.append(Precision(dtype, where, "values" if conditions or s.settings else "code"))
                continue
            if possible is None:
                low = dtype or ("bf16" if "bf16" in s.dtypes or not s.dtypes and s.kind == "framework" else "fp16")
                unresolved = [c for c, r in zip(conditions, runs, strict=True) if r is None]
                setting = " or ".join(s.settings) or "its dtype"
                possible = Precision(low, where, "possible", " and ".join(unresolved) or f"{setting} is 16-bit")
        if sure:  # bf16 where both run: its tolerance is the looser one (a scaler beside a bf16 autocast)
            return next((p for p in sure if p.dtype == "bf16"), sure[0])
        for flag in ("mixed_precision", "precision", "dtype", "bf16", "fp16"):
            value = command.get(flag) if flag in command else _default(a.flags, flag)
            dtype = _spelled(flag, value)
            if dtype is not None and dtype != "fp32":
                return Precision(dtype, "the command" if flag in command else f"--{flag}'s default", "values")
    for flag in ("mixed_precision", "bf16", "fp16"):  # the launcher's own (`accelerate launch --mixed_precision`)
        dtype = _spelled(flag, command.get(flag))
        if dtype is not None and dtype != "fp32":
            return Precision(dtype, "the command", "command")
    return possible or Precision("fp32", "", "default")


def _decided(s: PrecisionSignal, command: Mapping[str, str | None], flags: Mapping[str, str | None]) -> Dtype | None:
    """The dtype a signal runs in: a setting it reads, at the command's value or its default, decides; else the
    code's one dtype; None when the code allows several."""
    for name in s.settings:
        spelled = _spelled(name, command[name] if name in command else _default(flags, name))
        if spelled is not None:
            return spelled
    return s.dtypes[0] if len(s.dtypes) == 1 else None


def _spelled(flag: str, value: str | None) -> Dtype | None:
    if value is None:
        return None
    v = value.strip("'\"").lower()
    if flag in ("bf16", "fp16"):  # a switch: on or off
        on: Dtype = "bf16" if flag == "bf16" else "fp16"
        return on if v in ("", "true", "1", "yes") else "fp32" if v in ("false", "0", "no") else None
    return SPELLED.get(v)


def _command_values(words: Sequence[str]) -> dict[str, str | None]:
    """The command's `--name value` / `--name=value` / bare `--name` settings, by attribute name (`""` bare)."""
    found: dict[str, str | None] = {}
    for i, word in enumerate(words):
        if not word.startswith("--"):
            continue
        name, eq, value = word.partition("=")
        if not eq:
            value = words[i + 1] if i + 1 < len(words) and not is_option(words[i + 1]) else ""
        found[dest(name)] = value
    return found


def _default(flags: Mapping[str, str | None], name: str) -> str | None:
    for flag, default in flags.items():
        if flag.startswith("-") and dest(flag) == name:
            return default
    return None


def _truth(condition: str, values: Values, command: Mapping[str, str | None]) -> bool | None:
    """Whether a condition as written holds at the job's values; None when it cannot be told."""
    try:
        node = ast.parse(condition, mode="eval").body
    except SyntaxError:
        return None
    result = truth(node, values)
    if result is None and isinstance(node, ast.Attribute) and node.attr in command:  # `--amp` given bare
        return _spelled("bf16", command[node.attr]) == "bf16"
    return result


def _literal_true(e: ast.expr) -> bool:
    return isinstance(e, ast.Constant) and e.value is True


def _last(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _short(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 80 else text[:77] + "..."
