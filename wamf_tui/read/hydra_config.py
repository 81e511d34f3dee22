"""A Hydra app's config, composed by hydra-core itself, and the switches it gives the benchmark.

Hydra composes the primary config from its defaults list and config groups; a hand-written reader of
one YAML file misses every key a group brings in (`trainer.max_epochs` from `trainer/default.yaml`)
and cannot tell `key=` from `+key=`. `compose` reads YAML and builds nothing: no `_target_` is
instantiated and no `${...}` resolved. Two things could still reach the job's code or hang, and are
refused before Hydra is imported: a `pkg://` search path (Hydra imports that package to find its
files) and a config folder holding something that is not a plain file (a FIFO, a device).
"""

from __future__ import annotations

import importlib.util
import os
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..infra.files import read_regular, rel_path
from ..model import Analysis, Fact, HydraTree, Required, StepControl
from .frameworks import length_settings, table
from .hydra_overrides import is_override, key_of, known
from .lengths import length_role
from .outputs import OUT_NAMES

MAX_FILES = 500  # YAML files looked at before composing
MAX_KEYS = 3000
MAX_BYTES = 2_000_000
TRAINER = re.compile(r"^(lightning|pytorch_lightning)(\.pytorch)?(\.trainer)*\.Trainer$")
CHECKPOINT = re.compile(r"\.\w*ModelCheckpoint\w*$")  # Lightning's, or a repo's subclass of it
STOPPER = re.compile(r"\.EarlyStopping$")
NEEDS_LOGGER = re.compile(r"\.(?:LearningRateMonitor|DeviceStatsMonitor|GPUStatsMonitor)$")
LOGGER = re.compile(r"^(lightning|pytorch_lightning)(\.pytorch)?\.loggers(\.\w+)*\.\w+Logger$")


def compose(conf_dir: Path, name: str, version_base: str | None, rel: str,
            command: Sequence[str] = ()) -> HydraTree:
    """The primary config `name` of `conf_dir`, composed; `version_base` as the app's `@hydra.main` gives
    it ("" when it gives none). `command`: the job's own arguments, whose group choices (`experiment=x`,
    `trainer=gpu`, `~logger`) change what the config holds, so it is composed with them. Never raises:
    a config Hydra cannot compose says why in `note`."""
    tree = HydraTree(config=rel)
    refused = _refused(conf_dir)
    if refused:
        tree.note = f"Hydra config not composed: {refused}"
        return tree
    if importlib.util.find_spec("hydra") is None:  # an install without hydra-core: the hand reader's stand
        tree.note = "Hydra config not composed: hydra-core is not installed with wamf-tui"
        return tree
    kw = {"version_base": None if version_base == "None" else version_base} if version_base else {}
    try:
        with warnings.catch_warnings():  # Hydra warns about versions and deprecations: nothing for the user
            warnings.simplefilter("ignore")
            _compose_into(tree, conf_dir, name, kw, group_choices(conf_dir, command))
    except Exception as e:  # Hydra's errors are many types; any of them means the same to the user
        return HydraTree(config=rel, note=f"Hydra config not composed: {_first_line(e)}")
    tree.composed = True
    return tree


def group_choices(conf_dir: Path, command: Sequence[str]) -> list[str]:
    """The command's overrides that pick or drop a config group (a folder of the config dir): the ones
    that change the composed tree. A value override (`trainer.max_epochs=5`) is left to `check`."""
    return [w for w in command if is_override(w) and not key_of(w).startswith("hydra")
            and (conf_dir / key_of(w).replace(".", "/")).is_dir()][:20]


def _note(tree: HydraTree, line: str) -> None:
    tree.note = f"{tree.note}; {line}" if tree.note else line


def _compose_cfg(tree: HydraTree, name: str, overrides: list[str], stubbed: list[tuple[str, str]]) -> object:
    """Composed as Hydra would; a Hydra plugin this install lacks (`override hydra/job_logging: colorlog`)
    is stood in for by an empty config of that name, in `stubbed`, so the job's own tree and Hydra's run
    folder still compose; what is still Hydra's and fails is left out (`~hydra`), and said."""
    from hydra import compose as hydra_compose
    from hydra.core.config_store import ConfigStore

    for _ in range(8):  # each missing plugin fails alone
        try:
            return hydra_compose(name, overrides=overrides, return_hydra_config=True)
        except Exception as e:
            missing = re.search(r"Could not find '(hydra/[\w/-]+)/([\w.-]+)'", str(e))
            if missing is None or (missing.group(1), missing.group(2)) in stubbed:
                break
            ConfigStore.instance().store(group=missing.group(1), name=missing.group(2), node={})
            stubbed.append((missing.group(1), missing.group(2)))
            _note(tree, f"{missing.group(1)}/{missing.group(2)} is a plugin not installed here: read as empty")
    try:
        return hydra_compose(name, overrides=overrides, return_hydra_config=True)
    except Exception as e:
        if "'hydra/" not in str(e):
            raise
        _note(tree, f"Hydra's own settings (hydra: in the defaults list) left out: {_first_line(e)}")
        return hydra_compose(name, overrides=[*overrides, "~hydra"], return_hydra_config=True)


def _unstub(stubbed: list[tuple[str, str]]) -> None:
    """The plugins' stand-ins out of Hydra's store again: the next job's compose finds what is installed."""
    from hydra.core.config_store import ConfigStore

    for group, name in stubbed:
        node: Any = ConfigStore.instance().repo
        for part in group.split("/"):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node.pop(f"{name}.yaml", None)


def _compose_into(tree: HydraTree, conf_dir: Path, name: str, kw: dict, chosen: list[str]) -> None:
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    stubbed: list[tuple[str, str]] = []
    try:
        with initialize_config_dir(config_dir=str(conf_dir.resolve()), **kw):
            cfg: Any = None
            if chosen:
                try:
                    cfg = _compose_cfg(tree, name, chosen, stubbed)
                    tree.overrides = chosen
                except Exception as e:  # the command's choice does not compose: say so, and read the defaults
                    _note(tree, f"composed without the command's {' '.join(chosen)}: {_first_line(e)}")
            if cfg is None:
                cfg = _compose_cfg(tree, name, [], stubbed)
            choices = cfg.hydra.runtime.choices
            tree.choices = {str(k): "null" if v is None else str(v) for k, v in choices.items()}
            body = OmegaConf.to_container(cfg, resolve=False)
            _flatten({k: v for k, v in body.items() if k != "hydra"} if isinstance(body, dict) else {}, "", tree)
            loader = GlobalHydra.instance().config_loader()
            for group in _groups(loader):
                tree.groups[group] = [str(o) for o in loader.get_group_options(group)][:100]
    finally:
        _unstub(stubbed)


def _refused(conf_dir: Path) -> str:
    """Why composing `conf_dir` could reach the job's code or hang, else ""."""
    seen: set[str] = set()
    count = 0
    for top, dirs, files in os.walk(conf_dir, followlinks=True):
        real = os.path.realpath(top)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        for f in files:
            if not f.endswith((".yaml", ".yml")):
                continue
            count += 1
            if count > MAX_FILES:
                return f"over {MAX_FILES} YAML files"
            try:
                text = read_regular(Path(top) / f, MAX_BYTES + 1)  # never a FIFO or a device
            except OSError as e:
                return f"{f} could not be read ({e.strerror or e})"
            if len(text) > MAX_BYTES:
                return f"{f} is over {MAX_BYTES // 1_000_000} MB"
            if b"pkg://" in text:
                return f"{f} names a pkg:// search path (Hydra would import that package)"
            if b"*" in text and (why := _aliases_refused(text)):
                return f"{f}: {why}"
    return ""


def _aliases_refused(text: bytes) -> str:
    """Why a file's YAML aliases would hang the composing ("billion laughs": OmegaConf copies each), else ""."""
    import yaml

    from .config_file import load_yaml

    try:
        load_yaml(text.decode("utf-8", "replace"))
    except yaml.YAMLError as e:
        return str(e).splitlines()[0] if "aliases" in str(e) else ""  # a syntax error: Hydra says it better
    except RecursionError:
        return "nested too deeply"
    return ""


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:160]


def _scalar(v: object) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)[:200]


def _flatten(node: object, prefix: str, tree: HydraTree) -> None:
    if not isinstance(node, dict):
        if len(tree.keys) < MAX_KEYS:
            tree.keys[prefix] = _scalar(node)
        return
    if prefix:
        tree.nodes.append(prefix)
    for k, v in node.items():
        _flatten(v, f"{prefix}.{k}" if prefix else str(k), tree)


def _groups(loader: object, parent: str = "", depth: int = 0) -> list[str]:
    found: list[str] = []
    for g in loader.list_groups(parent):  # type: ignore[attr-defined]
        full = f"{parent}/{g}" if parent else str(g)
        found.append(full)
        if depth < 2 and len(found) < 200:
            found += _groups(loader, full, depth + 1)
    return found[:200]


def add_switches(a: Analysis, tree: HydraTree, rel: str, line: int) -> None:
    """The switches a composed config gives: a Lightning Trainer built from a config node takes its
    step limit and validation switch there; a ModelCheckpoint or Lightning logger node is deleted with
    `~node`. Then every override the analysis proposes that names a key the config lacks gets its `+`."""
    targets = {k[: -len("._target_")]: v for k, v in tree.keys.items() if k.endswith("._target_")}
    saves = [n for n, t in targets.items() if CHECKPOINT.search(t)]
    # early stopping watches a validation metric: with validation off it fails the run at the epoch's end
    watchers = [f"~{n}" for n, t in targets.items() if STOPPER.search(t)]
    logged_to = any(NEEDS_LOGGER.search(t) for t in targets.values())  # these raise with no logger at all
    # the code reads the Trainer's checkpoint callback where the run gets (not under `if cfg.get("test"):` with
    # that eval switched off): with no ModelCheckpoint left the read fails, so they are kept
    read = a.checkpoint_read if a.checkpoint_read and not any(
        f.off_switch and key_of(f.off_switch.split(" ")[0]).split(".")[-1] in a.checkpoint_read_if
        for f in a.evals) else None
    for node, target in targets.items():
        if TRAINER.match(target):
            a.step_controls.insert(0, StepControl(name=f"{node}.max_steps", default=tree.keys.get(
                f"{node}.max_steps", "-1"), file=rel, line=line))
            length_settings(a, [f"{node}.{f.removeprefix('--trainer.')}" for f in table("lightning_cli")["flags"]
                                if f.startswith("--trainer.")], rel, line, tree.keys)  # the Trainer's others
            a.evals.append(Fact(name=f"Trainer validation loop ({node})", file=rel, line=line,
                                off_switch=" ".join([f"{node}.limit_val_batches=0", *watchers])))
            a.output_dirs.append(Fact(name=f"{node}.default_root_dir", off_switch=f"{node}.default_root_dir=...",
                                      file=rel, line=line))  # its logs and checkpoints, unless a logger says
            off = " ".join([f"{node}.enable_checkpointing=false", *(f"~{s}" for s in saves)])
            kept = f"; kept: the code reads its callback at {read}" if read else ""
            a.checkpoints.append(Fact(name=f"Trainer checkpoints ({node}{kept})", off_switch=None if kept else off,
                                      file=rel, line=line))
            saves = []
        elif LOGGER.match(target):
            group = node.split(".")[0]
            off = f"~{group}" if tree.choices.get(group, "null") != "null" else f"~{node}"  # Hydra takes no group=null
            if logged_to and target.endswith("WandbLogger"):  # kept for the callbacks, its run kept off the server
                off = f"{node}.mode=disabled"
            a.trackers.append(Fact(name=target.rsplit(".", 1)[1], off_switch=off, file=rel, line=line))
    for s in saves:  # with no ModelCheckpoint left, a read of the Trainer's callback fails: kept
        a.checkpoints.append(Fact(name=f"ModelCheckpoint ({s})", off_switch=None if read else f"~{s}",
                                  file=rel, line=line))
    for key, value in tree.keys.items():
        role = length_role(key)  # a bound only the config names is not proven to stop the loop: never the cap
        if (role == "scale" or role == "bound" and "epoch" in key.split(".")[-1]) and \
                all(c.name != key for c in a.step_controls):
            a.step_controls.append(StepControl(name=key, default=value, file=tree.config, line=1, role=role))
    for key, value in tree.keys.items():  # the config's own output folders (`paths.output_dir`); a null one is
        leaf = key.split(".")[-1]  # an input to resume from (`ckpt_path`), a root the project's own folder
        if OUT_NAMES.search(leaf) and not leaf.startswith("root") and value not in (None, "null", "None") \
                and all(o.name != key for o in a.output_dirs):
            a.output_dirs.append(Fact(name=key, off_switch=f"{key}=...", file=rel, line=line))
    for c in a.step_controls:  # a key read in the code (`cfg.trainer.max_steps`): its override is `key=N`
        c.name = _plus(tree, c.name + "=")[:-1]
        c.default = c.default if c.default is not None else tree.keys.get(key_of(c.name))
    for facts in (a.trackers, a.checkpoints, a.evals, a.uploads, a.output_dirs, a.seeds):
        for f in facts:
            if f.off_switch:
                f.off_switch = " ".join(_plus(tree, w) for w in f.off_switch.split(" "))


def _plus(tree: HydraTree, override: str) -> str:
    """`+key=...` for a key the composed config lacks (Hydra refuses `key=` there); others, and Hydra's own
    `hydra.*` settings, as they are."""
    if not is_override(override) or override.startswith(("+", "~", "hydra.")) or known(tree, key_of(override)):
        return override
    return "+" + override


def cpu_trainers(a: Analysis, args: list[str] | tuple[str, ...]) -> list[str]:
    """The Lightning Trainer nodes the composed config puts on the CPU (`accelerator: cpu`) that the job's
    command does not move (`trainer=gpu`, `trainer.accelerator=...`): the benchmark's run would time a CPU job."""
    tree = a.hydra
    if tree is None or not tree.composed:
        return []
    given = {key_of(w) for w in args if is_override(w)}
    return [k[: -len("._target_")] for k, v in tree.keys.items() if k.endswith("._target_") and TRAINER.match(v)
            and tree.keys.get(k.replace("._target_", ".accelerator")) == "cpu"
            and not given & {k.split(".")[0], k.replace("._target_", ".accelerator")}]


def yaml_scalars(text: str) -> dict[str, str]:
    """`a.b -> value` for the plain `key: value` lines of a YAML file, nesting by indentation.
    Enough for a Hydra config's defaults; no YAML library needed (lists and anchors are skipped)."""
    out: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for raw in text.splitlines():
        line = raw.split(" #")[0].rstrip()
        m = re.match(r"^(\s*)([A-Za-z_][\w.-]*)\s*:\s*(.*)$", line)
        if not m or line.lstrip().startswith(("#", "-")):
            continue
        indent, key, value = len(m.group(1)), m.group(2), m.group(3).strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        dotted = ".".join([k for _, k in stack] + [key])
        if value:
            out[dotted] = value.strip("'\"")
        else:
            stack.append((indent, key))
    return out


def hydra_defaults(result: Analysis, conf: Path, root: Path, entry: bool) -> None:
    """Fill in step-control defaults from the app's primary Hydra config, and its `???` (required) keys."""
    try:
        values = yaml_scalars(read_regular(conf, MAX_BYTES).decode("utf-8", errors="replace"))
    except OSError:
        result.notes.append(f"Hydra config {rel_path(conf, root)} not readable; defaults unknown")
        return
    for c in result.step_controls:
        if c.default is None and c.name in values:
            c.default = values[c.name]
    if entry:
        result.required += [Required(name=k, kind="hydra", file=rel_path(conf, root), line=1)
                            for k, v in values.items() if v == "???"]


def hydra_targets(conf: Path, limit: int = 200) -> list[str]:
    """What a Hydra app's configs instantiate (`_target_: src.models.lit.LitModule`): a Lightning module or
    a trainer reached only through the config, never through an import or a name in code."""
    found: list[str] = []
    try:
        files = sorted(conf.parent.rglob("*.yaml"))[:limit]
    except OSError:
        return found
    for f in files:
        try:
            text = read_regular(f, MAX_BYTES).decode("utf-8", errors="replace")
        except OSError:
            continue
        for m in re.finditer(r"^[ \t]*_target_:\s*['\"]?([A-Za-z_][\w.]*)", text, re.M):
            if m.group(1) not in found:
                found.append(m.group(1))
    return found
