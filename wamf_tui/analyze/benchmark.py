"""The benchmark version of a training script: flags and environment variables
that make it short, pinned and side-effect free, never an edit of the script.

Follows the conversion rules of the downstream spec: same job, short (warm-up
then at least 10 steady steps within about 8 minutes), leaves nothing behind,
same answer twice, prefer the script's own flags, price what is switched off.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from ..model import Analysis, BenchmarkChange, InitState

DEFAULT_STEPS = 30  # warm-up until step time settles, then at least 10 steady steps
WRAPPER_NAME = "wamf_bench.py"
OUT_DIR = "runs/wamf-bench"
NEVER = 10**9  # an interval no benchmark run reaches
_INTERVAL = re.compile(r"every|interval|freq|period", re.I)


def _switch_off(flag: str | None, defaults: dict[str, str | None]) -> tuple[str, list[str], list[str]] | None:
    """(how, flags, env) that switch a guarded feature off through its own flag or variable.

    A store_true flag is switched off by leaving it out: `how` then starts with the flag and says so."""
    if not flag:
        return None
    if "=" in flag and not flag.startswith("-"):
        return flag, [], [flag]
    if flag.startswith("--") and " " in flag:  # HF style: "--save_strategy no"
        return flag, flag.split(), []
    name = flag.split("=")[0]
    if not name.startswith("-"):
        return None
    if defaults.get(name) == "False":
        return f"{name} left off (default False)", [], []
    if _INTERVAL.search(name):
        return f"{name}={NEVER}", [f"{name}={NEVER}"], []
    return None


def propose(a: Analysis, steps: int = DEFAULT_STEPS) -> list[BenchmarkChange]:
    """The changes table: what changes, the flag or variable it maps to, and why."""
    changes: list[BenchmarkChange] = []
    control = next((s for s in a.step_controls if "epoch" not in s.name and "limit" not in s.name), None)
    if control is not None and control.name.startswith("--"):
        flags, env, how = [f"{control.name}={steps}"], [], f"{control.name}={steps}"
    elif control is not None and a.config_system == "configurator":
        flags, env, how = [f"--{control.name}={steps}"], [], f"--{control.name}={steps}"
    else:
        flags, env, how = [], [f"WAMF_MAX_STEPS={steps}"], f"WAMF_MAX_STEPS={steps} (wrapper)"
    was = f" (was {control.default})" if control and control.default else ""
    changes.append(BenchmarkChange(what=f"total steps cut to {steps}{was}", how=how, flags=flags, env=env,
                                   why="one run in ~8 min: warm-up until step time settles, then >=10 steady steps"))
    for t in a.trackers:
        off = _switch_off(t.off_switch, a.flags) or ("WANDB_MODE=disabled (wrapper)", [], [])
        drop = [off[0].split()[0]] if "left off" in off[0] else []
        changes.append(BenchmarkChange(what=f"{t.name} tracker off ({t.file}:{t.line})", how=off[0], flags=off[1],
                                       env=off[2], drop=drop, why="no runs on a tracker dashboard"))
    for c in a.checkpoints:
        off = _switch_off(c.off_switch, a.flags)
        how, flags, env = off or (f"WAMF_OUT={OUT_DIR} (limitation: only a code edit stops the write)", [], [])
        changes.append(BenchmarkChange(
            what=f"{c.name} off ({c.file}:{c.line})", how=how, flags=flags, env=env, why="no checkpoints left behind",
            exclusion=f"checkpoint at {c.file}:{c.line} excluded from the benchmark; its cost is about bytes on disk "
                      "/ write bandwidth x saves per run (measure one save to price it)"))
    for e in a.evals:
        off = _switch_off(e.off_switch, a.flags)
        how, flags, env = off or ("step count below the eval interval", [], [])
        changes.append(BenchmarkChange(
            what=f"eval {e.name} ({e.file}:{e.line}) out of the timed steps", how=how, flags=flags, env=env,
            why="evals are priced, not timed",
            exclusion=f"eval {e.name} at {e.file}:{e.line} excluded; cost about eval batches x 1/3 of a train step "
                      "/ steps between evals"))
    for u in a.uploads:
        changes.append(BenchmarkChange(what=f"{u.name} off ({u.file}:{u.line})", how="HF_HUB_OFFLINE=1",
                                       env=["HF_HUB_OFFLINE=1"], why="no uploads"))
    out = next((o.off_switch for o in a.output_dirs if o.off_switch and o.off_switch.startswith("--")), None)
    if out:
        flag = out.split("=")[0]
        changes.append(BenchmarkChange(what="all outputs into one folder", how=f"{flag}={OUT_DIR}",
                                       flags=[f"{flag}={OUT_DIR}"], why="no writes into the checkout"))
    seed = next((s.off_switch for s in a.seeds if s.off_switch and s.off_switch.startswith("--")), None)
    if seed:
        how, flags, env = f"{seed.split('=')[0]}=0", [f"{seed.split('=')[0]}=0"], []
    else:
        how, flags, env = "WAMF_SEED=0 (wrapper seeds python, numpy, torch)", [], ["WAMF_SEED=0"]
    changes.append(BenchmarkChange(what="seeds pinned", how=how, flags=flags, env=env,
                                   why="same answer twice; speed mode keeps deterministic algorithms off"))
    return changes


def needs_wrapper(changes: list[BenchmarkChange]) -> bool:
    return any(c.enabled and ("(wrapper)" in c.how or any(e.startswith("WAMF_") for e in c.env)) for c in changes)


def wrapper_path(state: InitState) -> str:
    return str(Path(state.contract_path).parent / WRAPPER_NAME)


def run_command(state: InitState) -> str:
    """The `run` line: env vars, then the wrapper (absolute path) or the script (relative to the repo), then flags."""
    enabled = [c for c in state.changes if c.enabled]
    env = sorted({e for c in enabled for e in c.env})
    flags = [f for c in enabled for f in c.flags]
    cands = state.detected.scripts.candidates if state.detected.scripts else []
    launch = next((c.launch for c in cands if c.path == state.script and c.launch), None)
    overridden = {f.split("=")[0] for f in flags}
    dropped = {d for c in enabled for d in c.drop}
    args: list[str] = []
    original = launch.args if launch else []
    i = 0
    while i < len(original):  # the launch command's own args, minus those overridden or switched off
        a = original[i]
        name = a.split("=")[0]
        if name in dropped:
            i += 1
        elif name in overridden:
            takes_value = "=" not in a and i + 1 < len(original) and not original[i + 1].startswith("-")
            i += 2 if takes_value else 1
        else:
            args.append(a)
            i += 1
    script = shlex.quote(state.script)
    if needs_wrapper(enabled):
        if "WAMF_OUT" not in " ".join(env):
            env.append(f"WAMF_OUT={OUT_DIR}")
        cmd = ["python", shlex.quote(wrapper_path(state)), script]
    else:
        launcher = launch.launcher if launch and launch.launcher not in ("python", "python -m") else "python"
        cmd = [launcher, script]
    return " ".join([*env, *cmd, *args, *flags])
