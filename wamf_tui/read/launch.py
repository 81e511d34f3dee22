"""How the job's code starts its processes, read from the modules the entry reaches, and the launcher
that follows from it: the docs' command says how a job was started once; the code says what it needs.

A rank variable read with no default (`os.environ["LOCAL_RANK"]`), `init_process_group` with no
single-process branch, `deepspeed.initialize`, or a Fabric whose `launch()` is never called needs a
rank launcher (torchrun, deepspeed, srun); an `Accelerator` runs under `accelerate launch`;
`mp.spawn`, a Lightning `Trainer` and Fabric's `launch()` start their own ranks; a check that exits
below a count of GPUs (`read.fewest`) sets the fewest processes. Each line is a `ProcessSignal`;
`starts` turns them into a verdict, `launch_problems` holds a run line against it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, cast

from ..model import Analysis, LaunchCommand, Need, ProcessSignal
from .fewest import EXITS, fewest
from .nodes import walk
from .step import name_of

# the launcher flags that set how many processes it starts
NPROC = ("--nproc_per_node", "--nproc-per-node", "--num_processes", "--num_gpus", "--ntasks-per-node", "--gpus",
         "-np", "-n", "--nproc", "--devices")
RANK_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
RANK_LAUNCHERS = ("torchrun", "deepspeed", "accelerate launch", "srun", "mpirun", "mpiexec", "composer",
                  "lightning run model", "fabric run")
_SPAWNS = ("mp.spawn", "multiprocessing.spawn", "torch.multiprocessing.spawn", "start_processes")
_LIGHTNING = ("lightning", "pytorch_lightning", "lightning.pytorch")
# a module that names none of these says nothing of its processes: it is not walked (most are models or data)
_WORTH = re.compile(r"environ|getenv|init_process_group|init_distributed|Accelerator|Fabric|deepspeed|spawn"
                    r"|start_processes|Trainer|device_count|world_size")
_COMMENTED_LAUNCH = re.compile(r"^\s*#\s*([A-Za-z_][\w.]*)\.launch\(", re.M)


def process_signals(tree: ast.Module, rel: str, text: str, entry: bool) -> list[ProcessSignal]:
    """Every line of one module that says how its processes start, each with the condition it runs under
    in its own function (an `if` around it, or an early `return` before it). An imported module's
    `if __name__ == "__main__":` block never runs."""
    if not _WORTH.search(text):
        return []
    trainers = _lightning_trainers(tree)
    found: list[ProcessSignal] = []
    body = tree.body if entry else [s for s in tree.body if not main_block(s)]
    lifted = _called_only_under(body)
    for node, guard in guarded(body, None):
        kind = _kind(node, trainers)
        guard = guard or _lifted(cast(ast.expr, node), lifted)
        if kind == "accelerator" and _precision_given(cast(ast.Call, node), tree):
            continue  # one process of the job's own precision: what plain python runs, as its authors do
        if kind is not None:
            found.append(ProcessSignal(kind=kind, file=rel, line=cast(ast.expr, node).lineno, text=_short(node),
                                       guard=guard))
    if any(s.kind == "fabric" for s in found):  # `# fabric.launch()`: the project's runner starts the ranks
        for m in _COMMENTED_LAUNCH.finditer(text):
            found.append(ProcessSignal(kind="fabric_launch", file=rel, line=text.count("\n", 0, m.start()) + 1,
                                       text=m.group(0).strip()[:80], commented=True))
    return found + fewest(tree, rel, entry)


def _called_only_under(body: list[ast.stmt]) -> dict[ast.FunctionDef | ast.AsyncFunctionDef, str]:
    """The module's private functions (`_name`: by convention called from this module only) whose every call
    here runs under a condition, with it: fairseq reads `os.environ["WORLD_SIZE"]` in a helper it calls only
    `if all(key in os.environ for key in [..., "WORLD_SIZE", ...])`. A caller that is itself lifted lends its
    condition to its own calls."""
    defs = {f.name: f for f in body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
            and f.name.startswith("_")}
    sites = [(node.func.id, node, guard) for node, guard in guarded(body, None)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in defs]
    lifted: dict[ast.FunctionDef | ast.AsyncFunctionDef, str] = {}
    for _ in range(3):  # helpers of helpers, a few deep
        guards: dict[str, list[str | None]] = {}
        for name, node, guard in sites:
            guards.setdefault(name, []).append(guard or _lifted(node, lifted))
        now = {defs[n]: str(g[0]) for n, g in guards.items() if all(g)}
        if now.keys() == lifted.keys():
            break
        lifted = now
    return lifted


def _lifted(node: ast.expr, lifted: dict[ast.FunctionDef | ast.AsyncFunctionDef, str]) -> str | None:
    """The condition a node's enclosing private function runs under, where `_called_only_under` found one."""
    line = getattr(node, "lineno", 0)
    return next((g for f, g in lifted.items() if f.lineno <= line <= (f.end_lineno or f.lineno)), None)


def _precision_given(call: ast.Call, tree: ast.Module) -> bool:
    """`Accelerator(mixed_precision=...)`, or `Accelerator(**kwargs)` after `kwargs = {"mixed_precision": ...}`:
    the code sets the precision that `accelerate launch` would otherwise give it."""
    if any(k.arg == "mixed_precision" for k in call.keywords):
        return True
    splatted = {k.value.id for k in call.keywords if k.arg is None and isinstance(k.value, ast.Name)}
    return any(isinstance(n, ast.Assign | ast.AnnAssign) and isinstance(n.value, ast.Dict) and any(
        isinstance(t, ast.Name) and t.id in splatted for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))
        and any(isinstance(k, ast.Constant) and k.value == "mixed_precision" for k in n.value.keys)
        for n in walk(tree))


def main_block(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.If) and "__main__" in ast.dump(stmt.test)


Kind = Literal["rank_env", "process_group", "accelerator", "fabric", "fabric_launch", "deepspeed", "spawn",
               "lightning", "fewest"]


def _kind(node: ast.AST, trainers: frozenset[str]) -> Kind | None:
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and name_of(node.value).endswith("environ"):
        key = node.slice
        return "rank_env" if isinstance(key, ast.Constant) and key.value in RANK_VARS else None
    if not isinstance(node, ast.Call):
        return None
    name = name_of(node.func)
    last = name.split(".")[-1]
    if name in ("int", "float") and node.args and isinstance(got := node.args[0], ast.Call) and \
            name_of(got.func).endswith(("environ.get", "getenv")) and len(got.args) == 1 and not got.keywords:
        arg = got.args[0]  # `int(os.environ.get("RANK"))`: None fails there; a bare `.get` may be checked first
        return "rank_env" if isinstance(arg, ast.Constant) and arg.value in RANK_VARS else None
    if last == "init_process_group" and not _given_ranks(node) or name.endswith("deepspeed.init_distributed"):
        return "process_group"
    if last == "Accelerator":
        return "accelerator"
    if last == "Fabric":
        return "fabric"
    if last == "launch" and isinstance(node.func, ast.Attribute) and "fabric" in name_of(node.func.value).lower():
        return "fabric_launch"
    if name in ("deepspeed.initialize",):
        return "deepspeed"
    if name in _SPAWNS or name.endswith(tuple("." + s for s in _SPAWNS)):
        return "spawn"
    if name in trainers:
        return "lightning"
    return None


def _given_ranks(call: ast.Call) -> bool:
    """`init_process_group(..., rank=rank, world_size=n)`: the code gives the ranks (a spawned worker's)."""
    given = {k.arg for k in call.keywords}
    return {"rank", "world_size"} <= given


def _lightning_trainers(tree: ast.Module) -> frozenset[str]:
    """The names a Lightning `Trainer` is called by in this module (`Trainer`, `pl.Trainer`, `L.Trainer`)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(_LIGHTNING):
            names.update(a.asname or a.name for a in node.names if a.name == "Trainer")
        elif isinstance(node, ast.Import):
            names.update(f"{a.asname or a.name}.Trainer" for a in node.names if a.name in _LIGHTNING)
    return frozenset(names)


def guarded(body: list[ast.stmt], guard: str | None) -> Iterator[tuple[ast.AST, str | None]]:
    """Each node of `body` with the condition it runs under in its function: an `if` around it, or an
    `if ...: return` before it (a single-process branch). An `if` that only stops the job (`sys.exit`,
    `raise`) is no such branch; `if __name__ == "__main__":` is none either. Functions start afresh."""
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield from (x for d in stmt.decorator_list for x in _nodes(d, guard))
            yield from guarded(stmt.body, None)
            continue
        if isinstance(stmt, ast.If):
            yield from _nodes(stmt.test, guard)
            main = "__main__" in ast.dump(stmt.test)
            test = _short(stmt.test)
            yield from guarded(stmt.body, guard if main else test)
            yield from guarded(stmt.orelse, guard if main else f"not ({test})")
            if not stmt.orelse and stmt.body and _skips(stmt.body[-1]):
                guard = guard or f"not ({test})"  # what follows runs only when the test fails
            continue
        if isinstance(stmt, ast.For | ast.While | ast.With | ast.Try | ast.AsyncFor | ast.AsyncWith):
            for field in ("iter", "test", "items"):
                value = getattr(stmt, field, None)
                for v in value if isinstance(value, list) else [value] if value is not None else []:
                    yield from _nodes(v, guard)
            yield from guarded(stmt.body, guard)
            for handler in getattr(stmt, "handlers", []):  # an `except` branch runs only on an error
                yield from guarded(handler.body, guard or "on an error")
            yield from guarded([*getattr(stmt, "orelse", []), *getattr(stmt, "finalbody", [])], guard)
            continue
        yield from _nodes(stmt, guard)


def _skips(stmt: ast.stmt) -> bool:
    """A `return` or `continue`: the rest is skipped and the job goes on (not an exit, which ends it)."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and name_of(stmt.value.func) in EXITS:
        return False
    return isinstance(stmt, ast.Return | ast.Continue)


def _nodes(node: ast.AST, guard: str | None) -> Iterator[tuple[ast.AST, str | None]]:
    """The reads and calls of one statement or expression; a conditional expression's branches are guarded
    by its test (`int(os.environ["RANK"]) if "RANK" in os.environ else 0`)."""
    todo: list[tuple[ast.AST, str | None]] = [(node, guard)]
    while todo:
        n, g = todo.pop()
        if isinstance(n, ast.IfExp):
            test = _short(n.test)
            todo += [(n.test, g), (n.body, g or test), (n.orelse, g or f"not ({test})")]
            continue
        if isinstance(n, ast.Subscript | ast.Call):
            yield n, g
        todo += [(c, g) for c in ast.iter_child_nodes(n)]


@dataclass(frozen=True)
class Starts:
    """How the code wants its processes started."""

    launcher: Literal["python", "rank launcher", "accelerate launch"]
    why: ProcessSignal | None  # the line that asks for that launcher
    spawns: ProcessSignal | None  # the code starts its own ranks (mp.spawn, a Lightning Trainer, Fabric launch())
    fewest: int  # the fewest processes it runs with, one a GPU
    fewest_why: ProcessSignal | None


def starts(signals: list[ProcessSignal]) -> Starts:
    """The verdict of a job's signals. `mp.spawn` starts ranks that get theirs from it: no launcher is
    needed for what they read. An Accelerator's launcher sets the rank variables too."""
    always = [s for s in signals if s.guard is None and not s.commented]
    spawn = next((s for s in always if s.kind == "spawn"), None)
    own = spawn or next((s for s in always if s.kind in ("lightning", "fabric_launch")), None)
    floor = max((s for s in always if s.kind == "fewest"), key=lambda s: s.count or 0, default=None)
    n = floor.count or 1 if floor is not None else 1
    accelerator = next((s for s in always if s.kind == "accelerator"), None)
    if accelerator is not None:
        return Starts("accelerate launch", accelerator, own, n, floor)
    launched = any(s.kind == "fabric_launch" and not s.commented for s in signals)
    ranks = next((s for s in always if s.kind in ("rank_env", "process_group", "deepspeed")
                  or s.kind == "fabric" and not launched), None)
    if ranks is not None and spawn is None:
        return Starts("rank launcher", ranks, own, n, floor)
    return Starts("python", None, own, n, floor)


def said(s: ProcessSignal, signals: list[ProcessSignal]) -> str:
    """Why a signal asks for its launcher, in a few words (its own line is said beside it)."""
    if s.kind == "rank_env":
        return f"reads {s.text} with no default"
    if s.kind == "process_group":
        return "starts torch.distributed on every run"
    if s.kind == "deepspeed":
        return "calls deepspeed.initialize, which needs the rank variables of deepspeed or torchrun"
    if s.kind == "fabric":
        commented = next((c for c in signals if c.kind == "fabric_launch" and c.commented), None)
        how = f"its launch() is commented out ({commented.file}:{commented.line})" if commented \
            else "it never calls its launch()"
        return f"builds a Fabric and {how}: a rank launcher starts its processes"
    return "builds an Accelerator: its processes, precision and DeepSpeed come from accelerate launch"


def add_needs(result: Analysis) -> None:
    """Say what the whole reading asks of the command as the entry's `Need`s: a rank launcher for code the
    entry reaches in another module, none where the code spawns its own ranks (`mp.spawn`)."""
    verdict = starts(result.processes)
    codes = {n.code for n in result.needs}
    if verdict.spawns is not None and verdict.spawns.kind == "spawn":
        result.needs = [n for n in result.needs if n.code != "ranks"]
        return
    why = verdict.why
    if why is None:
        return
    code: Literal["ranks", "accelerate"] = "accelerate" if verdict.launcher == "accelerate launch" else "ranks"
    if code not in codes:
        text = said(why, result.processes)
        if code == "accelerate":  # said without its line where it is used
            text = text.replace(":", f" ({why.file}:{why.line}):", 1)
        result.needs.append(Need(code=code, file=why.file, line=why.line, why=text))


def fewest_note(result: Analysis | None, gpus: int) -> tuple[int, str]:
    """(processes, what to say): one a GPU, and never below what the code enforces."""
    verdict = starts(result.processes) if result is not None else None
    if verdict is None or verdict.fewest_why is None:
        return max(gpus, 1), ""
    n, where = max(gpus, verdict.fewest), f"{verdict.fewest_why.file}:{verdict.fewest_why.line}"
    short = f"; this machine shows {gpus} GPU(s): run it on a node with at least {verdict.fewest}" \
        if gpus < verdict.fewest else ""
    return n, f"the code exits below {verdict.fewest} processes ({where}): {n} process(es){short}"


def launch_problems(launch: LaunchCommand, a: Analysis) -> tuple[list[str], list[str]]:
    """(problems, doubts) of a run line against how the code starts: too few processes for what the code
    enforces; a rank launcher of several processes around code that spawns its own ranks (asked)."""
    verdict = starts(a.processes)
    problems: list[str] = []
    doubts: list[str] = []
    family = any(launch.launcher.startswith(f) or f" {f}" in launch.launcher for f in RANK_LAUNCHERS)
    n = processes_given(launch.prefix)
    if verdict.fewest_why is not None and family and n is not None and n < verdict.fewest:
        w = verdict.fewest_why
        problems.append(f"{n} process(es) per node: the code exits below {verdict.fewest} ({w.file}:{w.line}, "
                        f"{w.text})")
    spawn = verdict.spawns
    if spawn is not None and spawn.kind == "spawn" and family and n != 1:
        doubts.append(f"{launch.launcher} starts several processes and each spawns its own ranks "
                      f"({spawn.file}:{spawn.line}, {spawn.text}): start it with python, or say it is meant")
    return problems, doubts


def _short(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 80 else text[:77] + "..."


def processes_given(prefix: list[str]) -> int | None:
    """The process count a launcher's own options give (`--nproc_per_node=2`, `--num_processes 2`)."""
    for i, word in enumerate(prefix):
        opt, eq, value = word.partition("=")
        if opt in NPROC:
            value = value if eq else prefix[i + 1] if i + 1 < len(prefix) else ""
            return int(value) if value.isdigit() else None
    return None


def with_processes(launch: LaunchCommand, n: int) -> bool:
    """Set the launcher's own process count option (`--nproc_per_node=1`, `--num_processes 1`) to `n`; False
    when it has none to set."""
    prefix = launch.prefix
    for i, word in enumerate(prefix):
        opt, eq, _ = word.partition("=")
        if opt not in NPROC:
            continue
        if eq:
            prefix[i] = f"{opt}={n}"
        elif i + 1 < len(prefix):
            prefix[i + 1] = str(n)
        else:
            continue
        launch.nproc_per_node = n
        return True
    return False
