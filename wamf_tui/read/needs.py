"""What the entry script needs from the command that starts it, read from its source.

A command can start the right file and still run nothing, or crash: a script that reads
`LOCAL_RANK` without a default needs the torchrun family; one that builds an `Accelerator`
runs single-process fp32 without `accelerate launch`; one with relative imports fails when
run as a file; one with no `__main__` defines its functions and exits 0; one whose parser has
required inputs exits 2 when they are missing. Each is a `Need` here; `proposals` says it in
the question and `check_command` holds a command against them.
"""

from __future__ import annotations

import ast
import posixpath
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..model import Analysis, Need, Required
from .nodes import walk
from .step import name_of
from .step_flow import own_nodes
from .values import is_option

SUBMITTERS = ("AutoExecutor", "SlurmExecutor")  # submitit's executors that queue on a cluster
RANK_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
TORCHRUN_FAMILY = ("torchrun", "deepspeed", "accelerate launch", "srun", "mpirun", "composer", "lightning run model",
                   "fabric run")


def read_needs(tree: ast.Module, rel: str, result: Analysis, root: Path | None = None) -> None:
    """Fill `result.needs` and `result.required` from the entry script's syntax tree (`root`: the repo's)."""
    ranks: list[tuple[ast.AST, str]] = []  # what needs ranks from the launcher, unless an `if` makes it optional
    for node in walk(tree):
        if not isinstance(node, ast.Subscript | ast.Call | ast.ImportFrom):
            continue  # nothing else says what the command must give
        var = _rank_read(node)
        if var:
            ranks.append((node, f"reads {var} with no default"))
        if isinstance(node, ast.Call):
            name = name_of(node.func)
            if name.endswith("init_process_group") and not any(k.arg == "init_method" for k in node.keywords):
                ranks.append((node, "starts torch.distributed on every run"))
    relative = next((n for n in own_nodes(tree) if isinstance(n, ast.ImportFrom) and n.level), None)
    if relative is not None:  # one inside a function fails only if that function runs (a copied deepspeed branch)
        result.needs.append(Need(code="package", file=rel, line=relative.lineno,
                                 why="uses relative imports, so it runs as a module"))
    if root is not None and (found := root_import(tree, rel, root)):
        result.needs.append(Need(code="root_import", file=rel, line=found[0],
                                 why=f"imports {found[1]} from the repo root; Python puts only the script's own "
                                     "folder on the path"))
    if ranks:  # what runs only under an `if` is optional (`if ddp: init_process_group()`); walked only now
        guarded: set[int] = set()
        for node in walk(tree):
            if isinstance(node, ast.If):
                for stmt in (*node.body, *node.orelse):
                    guarded.update(id(n) for n in ast.walk(stmt))
        first = next(((node, why) for node, why in ranks if id(node) not in guarded), None)
        if first is not None:
            result.needs.append(Need(code="ranks", file=rel, line=first[0].lineno, why=first[1]))  # type: ignore[attr-defined]
    defines = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    if defines and not _runs_something(tree):  # defines its job and exits: something else calls it
        result.needs.append(Need(code="no_main", file=rel, line=defines[0].lineno,
                                 why="has no __main__ and calls nothing at the top level"))


def root_import(tree: ast.Module, rel: str, root: Path) -> tuple[int, str] | None:
    """(line, name) of the first absolute import of a package or module at the repo root, from a script in a
    sub-folder that has no such name itself (`projects/chargpt/chargpt.py`: `from mingpt.model import GPT`).
    Run as a file, it finds the name only if installed, and then runs the installed copy, not this checkout's."""
    folder = posixpath.dirname(rel)
    if not folder:
        return None
    found = []
    for stmt in walk(tree):
        names = [stmt.module] if isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module else \
            [a.name for a in stmt.names] if isinstance(stmt, ast.Import) else []
        found += [(stmt.lineno, top) for top in (n.split(".")[0] for n in names)
                  if _holds(root, top) and not _holds(root / folder, top)]
    return min(found, default=None)


def _holds(folder: Path, name: str) -> bool:
    """Whether `import name` from `folder` finds a package or module there."""
    return (folder / name / "__init__.py").is_file() or (folder / f"{name}.py").is_file()


def _rank_read(node: ast.AST) -> str | None:
    """`os.environ["LOCAL_RANK"]`, `os.environ.get("RANK")` or `os.getenv("RANK")` with no default."""
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and name_of(node.value).endswith("environ"):
        key = node.slice
        if isinstance(key, ast.Constant) and key.value in RANK_VARS:
            return str(key.value)
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        name = name_of(node.func)
        arg = node.args[0]
        if (name.endswith("environ.get") or name.endswith("getenv")) and isinstance(arg, ast.Constant) \
                and arg.value in RANK_VARS:
            return str(arg.value)
    return None


def submits(tree: ast.Module) -> tuple[int, str] | None:
    """(line, executor) where a file builds a cluster executor (`submitit.AutoExecutor(...)`): the job
    is queued on Slurm from there, and the process that builds it trains nothing itself."""
    for node in walk(tree):
        if isinstance(node, ast.Call) and name_of(node.func).split(".")[-1] in SUBMITTERS:
            return node.lineno, name_of(node.func)
    return None


def own_options(tree: ast.Module) -> list[str]:
    """The `--options` a file's parsers declare (`add_argument("--nodes")`)."""
    found = []
    for node in walk(tree):
        if isinstance(node, ast.Call) and name_of(node.func).endswith("add_argument"):
            found += [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                      and a.value.startswith("-")]
    return found


def main_block(stmt: ast.stmt) -> bool:
    """`if __name__ == "__main__":`: what runs only when the file is run, never when it is imported."""
    return isinstance(stmt, ast.If) and "__main__" in ast.dump(stmt.test)


def _runs_something(tree: ast.Module) -> bool:
    """A `__main__` block, or a call made at the top level (`main()`, `fire.Fire(...)`, `app()`)."""
    for stmt in tree.body:
        if main_block(stmt):
            return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            return True
        if isinstance(stmt, ast.For | ast.While | ast.With):
            return True
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and any(
                isinstance(n, ast.Call) and name_of(n.func).split(".")[-1] in ("parse_args", "train", "fit", "main")
                for n in ast.walk(stmt)):
            return True
    return False


def argparse_required(node: ast.Call, rel: str) -> Required | None:
    """The required input an `add_argument` call declares, if it declares one."""
    opts = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if not opts:
        return None
    kw = {k.arg: k.value for k in node.keywords if k.arg}
    if opts[0].startswith("-"):
        required = kw.get("required")
        if isinstance(required, ast.Constant) and required.value is True:
            return Required(name=max(opts, key=len), kind="option", file=rel, line=node.lineno)
        return None
    nargs = kw.get("nargs")
    if "default" in kw or isinstance(nargs, ast.Constant) and nargs.value in ("?", "*"):
        return None
    return Required(name=opts[0], kind="positional", file=rel, line=node.lineno)


def argv_required(tree: ast.Module, rel: str, text: str) -> list[Required]:
    """The positionals a script reads straight from `sys.argv[N]` (`yaml_path = sys.argv[1]`): without them it
    stops with an IndexError. Nothing where it looks at `len(sys.argv)` first: it handles their absence.
    `text`, the module's source, spares the walk where it never indexes `argv`."""
    if "argv[" not in text:
        return []
    reads: dict[int, Required] = {}
    for node in walk(tree):
        if isinstance(node, ast.Call) and name_of(node.func) == "len" and node.args \
                and name_of(node.args[0]) == "sys.argv":
            return []
        if isinstance(node, ast.Assign):
            targets = node.targets[0].elts if isinstance(node.targets[0], ast.Tuple) else node.targets
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            for target, value in zip(targets, values, strict=False):
                n = _argv_index(value)
                if n is not None and isinstance(target, ast.Name):
                    reads.setdefault(n, Required(name=target.id, kind="positional", file=rel, line=node.lineno))
        n = _argv_index(node)
        if n is not None:
            reads.setdefault(n, Required(name=f"sys.argv[{n}]", kind="positional", file=rel, line=node.lineno))
    return [reads[n] for n in sorted(reads) if all(k in reads for k in range(1, n))]


def _argv_index(node: ast.AST) -> int | None:
    """N of `sys.argv[N]` (N >= 1, a constant); None for anything else, a slice included."""
    if isinstance(node, ast.Subscript) and name_of(node.value) == "sys.argv" and isinstance(node.slice, ast.Constant) \
            and isinstance(node.slice.value, int) and node.slice.value >= 1:
        return node.slice.value
    return None


def dataclass_required(tree: ast.Module, classes: set[str], rel: str) -> list[Required]:
    """Fields without a default in the dataclasses an HfArgumentParser is given: `--name` is required."""
    found = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or node.name not in classes:
            continue
        for stmt in node.body:
            if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
                continue
            value = stmt.value
            if value is None or isinstance(value, ast.Call) and name_of(value.func).endswith("field") and not any(
                    k.arg in ("default", "default_factory") for k in value.keywords):
                found.append(Required(name=f"--{stmt.target.id}", kind="field", file=rel, line=stmt.lineno))
    return found


LOCAL_RANK = ("--local_rank", "--local-rank")  # what torch.distributed.launch and deepspeed pass each process


def passes_local_rank(prefix: list[str] | tuple[str, ...], launcher: str) -> bool:
    """Whether the launcher gives each process `--local_rank` itself: `deepspeed`, and the legacy
    `python -m torch.distributed.launch` unless told to use the environment (`--use_env`)."""
    if launcher == "deepspeed":
        return True
    return "torch.distributed.launch" in prefix and not any(w in ("--use_env", "--use-env") for w in prefix)


def missing_inputs(required: list[Required], args: list[str], store_true: set[str],
                   by_launcher: bool = False, cwd: Path | None = None, env: Sequence[str] = (),
                   linked: Mapping[str, Path] | None = None) -> list[Required]:
    """The required inputs `args` (a command's arguments) leave out. Options may be abbreviated, as
    argparse allows; positionals are counted among the words no option takes as its value. `by_launcher`:
    the launcher passes `--local_rank` itself (a required one is not missing); `cwd`: the folder the command
    runs in, where a file the code reads by a fixed relative name must be; `env`: its `VAR=value` words;
    `linked`: what the command links into that folder before it starts (name -> the linked path)."""
    linked = linked or {}
    if by_launcher:
        required = [r for r in required if r.name not in LOCAL_RANK]
    missing = []
    bare = 0
    i = 0
    given: list[str] = []
    while i < len(args):
        word = args[i]
        if word.startswith("-") and len(word) > 1:
            given.append(word.split("=")[0])
            takes_value = "=" not in word and word not in store_true and i + 1 < len(args) \
                and not is_option(args[i + 1])
            i += 2 if takes_value else 1
            continue
        if "=" in word and not word.startswith("-"):  # key=value overrides (Hydra) are not positionals
            given.append(word.split("=")[0].lstrip("+~"))
        else:
            bare += 1
        i += 1
    positionals = [r for r in required if r.kind == "positional"]
    for r in required:
        if r.kind == "positional":
            continue
        if r.kind == "file":  # no word of a command gives it: the folder it runs in does
            top = r.name.split("/")[0]
            if (cwd is None or not (cwd / r.name).is_file()) and not (
                    top in linked and (linked[top].parent / r.name).is_file()):
                missing.append(r)
            continue
        if r.kind == "env":
            if not any(w.split("=", 1)[0] == r.name for w in env):
                missing.append(r)
            continue
        if r.kind == "template":  # a config of the user's own in its place gives it
            if any(w == r.file or w.endswith(("=" + r.file, "/" + r.file)) for w in args):
                missing.append(r)
            continue
        if r.kind == "key":  # `MODEL.PRETRAIN_PATH /w.pth`: the key given as a word of its own
            if r.name not in args:
                missing.append(r)
            continue
        if r.kind == "hydra":
            if r.name not in given:
                missing.append(r)
        elif not any(g == name or len(g) > 2 and name.startswith(g) for g in given
                     for name in (r.name, *r.alternatives)):
            missing.append(r)
    missing += positionals[bare:]
    return missing


def say_missing(missing: list[Required], holes: Sequence[str] = ()) -> str:
    """The inputs as a list; `holes`, the placeholders the docs' command writes in place of its positionals
    (`{path_to_train_config}`), said beside them in order: the name the user knows the input by."""
    said, left = [], list(holes)
    for r in missing:
        if r.kind == "file":
            said.append(f"{r.name} (read from the folder the command runs in, {r.file}:{r.line}: cd to the "
                        "folder that holds it)")
        elif r.kind == "template":
            said.append(f"a config of your own in place of {r.file}, which leaves {r.name} to fill")
        elif r.kind == "env":
            said.append(f"{r.name}=... (the data folder, an environment variable: its default gives no file here, "
                        f"{r.file}:{r.line})")
        elif r.kind != "positional":
            said.append(" or ".join([r.name, *r.alternatives]) + ("=..." if r.kind == "hydra" else ""))
        else:
            hole = f" ({left.pop(0)} in the docs)" if left else ""
            said.append(f"the positional argument {shlex.quote(r.name)}{hole}")
    return ", ".join(said)
