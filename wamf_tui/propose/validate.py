"""A run line held against the job's code: would it start, and start the job it names?

`wamf-tui check CONTRACT --repo ROOT` runs this over the contract's `run` line; the app runs it
before it writes, and `--yes` too. It reads the entry (never runs it): the entry exists; the launcher
gives the entry what it needs (rank variables, an Accelerator, relative imports, a `__main__`);
every required input is there; every flag exists in the entry's parser and an exec-style
configurator gets `--key=value`. What cannot be proven from the code (a parser that lives in an
installed package, `parse_known_args`) is a warning, never a pass in disguise.
"""

from __future__ import annotations

import glob
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..detect.launch import CONFIG_FILE, linked, parse_launch
from ..model import Analysis, LaunchCommand
from ..read.launch import launch_problems
from ..read.needs import TORCHRUN_FAMILY, missing_inputs, passes_local_rank, say_missing
from ..read.subcommands import called, dispatch, reader, refine_console
from ..read.systems.base import flag_name
from ..read.systems.registry import system
from .raises import start_failures
from .run_line import is_our_wrapper, is_wrapper


@dataclass
class Verdict:
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def check_run(run: str, root: Path, analysis: Analysis | None = None, consoles: dict[str, str] | None = None,
              wrapper_dir: Path | None = None, read: bool = True, writing: str | None = None,
              seen: frozenset[str] = frozenset(), job: LaunchCommand | None = None,
              documented: Sequence[str] = ()) -> Verdict:
    """Problems (the run line cannot work as written) and warnings (what the code cannot prove).
    With `read` False (the app, on its event loop) no file is read: an entry without a given analysis
    is not checked, and a console subcommand's module comes from `job`, the command detection read;
    `writing` names the wrapper about to be written with the contract; `seen`, files detection found."""
    v = Verdict()
    exists = lambda p: p in seen or (root / p).is_file()  # noqa: E731

    def refine(found: LaunchCommand) -> None:  # `tool pretrain ...` is read in the module its subcommand runs
        if read:
            refine_console(found, reader(root), exists, seen | ({analysis.script} if analysis else set()))
        elif job is not None and job.path and dispatch(found) and (found.entry, dispatch(found)) == (
                job.entry, dispatch(job)):
            found.path = job.path

    launch = parse_launch(run, "run", "", {}, consoles or {}, exists)
    if launch is None:
        v.problems.append("the run line starts no Python job (no python, launcher or console script)")
        return v
    args = launch.args
    if launch.script and is_wrapper(launch.script):
        script = Path(launch.script)
        # relative: from where the run line runs it (the contract's folder, for a contract checked elsewhere)
        places = [script] if script.is_absolute() else [root / (launch.cwd or "") / script,
                                                         (wrapper_dir or root) / script]
        if not any(w.is_file() or writing and w.resolve() == Path(writing).resolve() for w in places):
            v.problems.append(f"the benchmark wrapper {launch.script} does not exist")
        elif (theirs := next((w for w in places if w.exists() and not is_our_wrapper(w)
                              and not (writing and w.resolve() == Path(writing).resolve())), None)):
            v.problems.append(f"{theirs.name} there is a file of yours, not the benchmark wrapper: the run line "
                              "would run it (propose the run line again: the wrapper takes another name)")
        launch, args = _past_wrapper(launch, consoles or {}, exists, refine)
        if launch is None:
            v.problems.append("the wrapper is given no job script")
            return v
    absent = _absent_files(launch, args, root, job, read)
    if absent:
        where = f" (from {launch.cwd}/)" if launch.cwd else ""
        v.problems.append(f"{', '.join(absent)}: named by the run line but not in the repo{where}; give "
                          + ("its path" if len(absent) == 1 else "their paths"))
    if launch.path:
        refine(launch)
    else:
        entry = launch.script or launch.module or launch.entry or "the entry"
        v.problems.append(f"{entry} is not a file of the repo" + (f" (from {launch.cwd}/)" if launch.cwd else ""))
        return v
    if analysis is None or analysis.script != launch.path:
        if not read:
            v.warnings.append(f"{launch.path} was not read; the run line was not checked against it")
            return v
        from ..read.analyze import analyze_script

        analysis = analyze_script(root / launch.path, root, args, called(launch))
    v.problems += _needs(launch, analysis, args)
    problems, doubts = launch_problems(launch, analysis)  # the process count and spawning the code enforces
    v.problems += problems
    v.warnings += doubts
    missing = missing_inputs(analysis.required, args, {n for n, d in analysis.flags.items() if d == "False"},
                             passes_local_rank(launch.prefix, launch.launcher), root / (launch.cwd or ""),
                             launch.env, linked(run, root))
    if missing:
        v.problems.append(f"{Path(launch.path).name} requires {say_missing(missing)}")
    v.problems += [f"{Path(launch.path).name} stops at start: {r.name} raises when {r.guard} ({r.file}:{r.line})"
                   for r in start_failures(analysis, args)]
    flags_problems, flags_warnings = _flags(args, analysis, launch.path, documented)
    v.problems += flags_problems
    v.warnings += flags_warnings
    return v


def _absent_files(launch: LaunchCommand, args: Sequence[str], root: Path, job: LaunchCommand | None,
                  read: bool) -> list[str]:
    """The config files the run line names that are not there, so the job would stop at once: a path with a
    folder is the shell's, looked for from the command's folder (read only with `read`); a bare name the job
    may find itself (yolov5's `--data coco.yaml` in `data/`), so only one detection found under no folder
    (`job.absent`: the quickstart's `toy_en_de.yaml`, written by the user from the page)."""
    named = [v for v in (w.split("=", 1)[-1] for w in args) if CONFIG_FILE.fullmatch(v)]
    absent = [v for v in named if v in (job.absent if job else ()) or read and "/" in v
              and not (root / (launch.cwd or "") / v).is_file()]
    return absent + [v for v in _data_paths(args) if read and not glob.glob(str(root / (launch.cwd or "") / v))]


# data a command names by a relative path: a pattern of shards, or a file in a format only data comes in
DATA_FILES = re.compile(r"(?!/|~|\$)[\w./-]*(?:[*?][\w./*?-]*|\.(?:bin|npy|npz|arrow|parquet|idx|mds|tfrecords?"
                        r"|h5|hdf5))")
OUT_FLAG = re.compile(r"out|save|log|dump|write|export", re.I)


def _data_paths(args: Sequence[str]) -> list[str]:
    """The data files or shard patterns the command gives an input flag by a relative path
    (`--input_bin "dev/data/fineweb10B/fineweb_train_*.bin"`); none given to an output flag."""
    found = []
    for i, word in enumerate(args):
        flag, eq, value = word.partition("=")
        if not eq:
            flag, value = (args[i - 1] if i and args[i - 1].startswith("-") else ""), word
        if "/" in value and DATA_FILES.fullmatch(value) and not OUT_FLAG.search(flag) and ".." not in value.split("/"):
            found.append(value)
    return found


def _past_wrapper(launch: LaunchCommand, consoles: dict[str, str], exists: Callable[[str], bool],
                  refine: Callable[[LaunchCommand], None]) -> tuple[LaunchCommand | None, list[str]]:
    """The job the wrapper runs: `wamf_bench.py SCRIPT ...`, `-m MODULE ...` or `--entry MOD:FN NAME ...`,
    with the launcher that starts the wrapper."""
    args = launch.args
    if not args:
        return None, []
    if args[0] == "-m" and len(args) > 1:
        inner = f"python -m {args[1]}"
        rest = args[2:]
    elif args[0] == "--entry" and len(args) > 2:
        module = args[1].split(":")[0]
        name = args[2]
        job = parse_launch(shlex.join(args[2:]), "run", "", {}, {name: args[1]}, exists)
        if job is not None:
            refine(job)
            job.launcher, job.prefix = launch.launcher, launch.prefix
        return job if job is not None and job.path else LaunchCommand(
            command="", launcher=launch.launcher, entry=module), args[3:]
    else:
        inner = f"python {args[0]}"
        rest = args[1:]
    # from the folder the run line runs in, its path from the root (`cd /x/repo.wamf-bench && ... "$OLDPWD"/train.py`)
    job = parse_launch(f"cd {shlex.quote(launch.cwd)} && {inner}" if launch.cwd else inner, "run", "", {}, consoles,
                       exists)
    if job is None:
        return None, rest
    job.launcher, job.prefix, job.cwd = launch.launcher, launch.prefix, launch.cwd
    return job, rest


def _needs(launch: LaunchCommand, a: Analysis, args: Sequence[str]) -> list[str]:
    problems = []
    name = Path(launch.path or "").name
    family = any(launch.launcher.startswith(f) or f" {f}" in launch.launcher for f in TORCHRUN_FAMILY)
    for need in a.needs:
        if need.code == "ranks" and not family:
            problems.append(f"{name} {need.why} ({need.file}:{need.line}); {launch.launcher} sets no rank "
                            "variables: start it with torchrun")
        elif need.code == "accelerate" and launch.launcher in ("python", "python -m"):
            problems.append(f"{name} {need.why}; python alone runs it as one fp32 process: use accelerate launch")
        elif need.code == "package" and launch.launcher == "python" and launch.script:
            problems.append(f"{name} {need.why}: run it as python -m {a.module or '...'}")
        elif need.code == "submits":
            problems.append(f"{name} {need.why}: run " + (f"python -m {need.runs}" if need.runs else
                                                           "the module it submits") + " with torchrun instead")
        elif need.code == "no_main" and launch.launcher != "console script" and not launch.entry:
            problems.append(f"{name} {need.why}: the command would exit without training")
        elif need.code == "trains_with" and not any(flag_name(w) in need.spellings for w in args):
            problems.append(f"{name} {need.why} ({need.file}:{need.line}): the command would train nothing")
    return problems


def _flags(args: list[str], a: Analysis, entry: str, documented: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """Every word of the run line against the entry's own parser (its config system's module says which it
    refuses and which it cannot prove); `documented`: the repo's own command for the entry, whose flags are
    proof where the parser cannot be read whole."""
    return system(a).refusal(a, args, Path(entry).name, documented)
