"""Find the job script and the command that launches it.

Candidates come from the repo's tracked files (`git ls-files`, so .gitignore is
respected), ranked by training evidence (a backward, an optimizer step, a trainer's
`fit`/`train`), by being launched in the repo's docs, shell scripts, sbatch files and
Makefiles (`launch`), then by name; generate, download, eval, ... scripts rank below
anything that trains. Bounded in files read and time, and says so when it stops early.
"""

from __future__ import annotations

import posixpath
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ..infra import children, gitcmd
from ..infra.files import read_regular
from ..model import LaunchCommand, ScriptCandidate, ScriptScan
from ..read.subcommands import refine_console
from ..read.values import given_values
from .launch import CONFIG_FILE, absent_configs, console_scripts, format_command, parse_launch, script_call
from .shell import DOCS, Branches, commands_in, comment_commands, docstring_commands, shell_defaults
from .slurm import SOURCE, QueuedJob

ENTRY_NAME = re.compile(
    r"^(train|finetune|fine_tune|pretrain|main|run_\w+|run|sample|generate|infer|inference|eval|evaluate|bench\w*)"
    r"(_\w+)?\.py$"
)
# Scripts that sit beside a trainer but are not the job: ranked down when something trains.
ASIDE_NAME = re.compile(r"(generat|download|prepar|convert|export|eval|infer|sampl|release|test|preprocess|tokeni[sz]|"
                        r"upload|merge|demo|visuali[sz]|plot|benchmark_data|setup)", re.I)
# What a training file calls. Looked for as plain text (`in`), the pattern only where a word must start: one
# pattern of these alternatives took 45 ms over a repo's 1.7 MB of Python, the text search 2 ms.
TRAIN_CALLS = (".backward(", "optimizer.step(", ".fit(", "trainer.train(", "manual_backward(")
_TRAINER = re.compile(r"\b(Trainer|runner\.train)\(")  # mmengine's Runner
_TORCH_WORDS = ("torch", "lightning", "transformers")  # _TORCH's words, looked for first in the same way
_IMPORT = re.compile(r"^[ \t]*(?:from|import)\s+([A-Za-z_][\w.]*)", re.M)
_FROM_IMPORT = re.compile(r"^[ \t]*from\s+([A-Za-z_][\w.]*)\s+import\s+\(?([\w ,]+)", re.M)
# a value the docs leave for the reader to fill in: `your_data`, `experiment_name.yaml`, `path/to/ckpt`
TEMPLATE = re.compile(r"^(your|my)[_-]|[_-]name(\.\w+)?$|^(/?path/to|/path/)|^\.\.\.$", re.I)
CPU_FLAGS = {"--cpu", "--no-cuda", "--no_cuda", "--use_cpu", "--use-cpu"}
# a doc heading for a machine other than a GPU node: its commands are that machine's variant of the job
OTHER_MACHINE = re.compile(r"\b(mac(?:os)?|apple|m[1-4] (?:chip|mac)|mps|cpu|windows|colab|laptop)\b", re.I)
MAX_READ = 3000  # files opened
MAX_LAUNCH_SOURCES = 300
MAX_CANDIDATES = 200
MAX_BYTES = 256 * 1024
TIME_BUDGET_S = 3.0
_TORCH = re.compile(
    r"^[ \t]*(import torch|from torch\b|import lightning|import pytorch_lightning|from transformers)", re.M
)


def tracked_files(root: Path) -> list[str]:
    """Tracked and untracked-not-ignored files; falls back to a bounded walk outside git."""
    try:
        out = children.run(  # stoppable: git on a dead network mount must not outlive the app
            gitcmd.argv(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"), 15,
            env=gitcmd.env(), encoding="utf-8", errors="replace",
        )
        if out.returncode == 0:
            return [f for f in out.stdout.split("\0") if f]
    except (OSError, subprocess.TimeoutExpired, gitcmd.Refused):
        pass
    files: list[str] = []
    for p in root.rglob("*"):
        if len(files) >= 200_000:
            break
        if any(part.startswith(".") for part in p.relative_to(root).parts):
            continue
        try:
            if p.is_file():
                files.append(str(p.relative_to(root)))
        except OSError:
            continue
    return files


def scan_scripts(root: str | Path, files: list[str] | None = None, queued: list[QueuedJob] | None = None
                 ) -> ScriptScan:
    """The repo's likely entry points, ranked, each with the best command found for it. `queued`: the
    user's own Slurm jobs in the repo, whose commands come first: that is how the job really runs."""
    root = Path(root)
    deadline = time.monotonic() + TIME_BUDGET_S
    files = tracked_files(root) if files is None else files
    listed = set(files)
    names = {f.rsplit("/", 1)[-1] for f in files}
    scan = ScriptScan(files_seen=len(files))
    scan.folders = sorted({f.split("/", 1)[0] + "/" for f in files if "/" in f})[:30]
    consoles = scan.consoles = _consoles(root, listed)
    cands: dict[str, ScriptCandidate] = {}
    launch_sources = [f for f in files if _launches_here(f)]
    launch_sources.sort(key=lambda f: (not Path(f).name.lower().startswith("readme"), f.count("/"), f))
    py = [f for f in files if f.endswith(".py") and "/site-packages/" not in f]
    # Entry-point names first, so the budget goes to the likeliest files.
    py.sort(key=lambda f: (not ENTRY_NAME.match(Path(f).name), f.count("/"), f))
    read = 0
    texts: dict[str, str | None] = {}  # dispatchers of console scripts, read once for all their commands

    def found(launch: LaunchCommand | None) -> None:
        if launch and launch.path:
            launch.absent = absent_configs(launch, listed, names)
            refine_console(launch, lambda p: texts[p] if p in texts else texts.setdefault(p, _read(root / p)),
                           listed.__contains__, py)
            scan.launches.append(launch)

    for job in queued or []:  # `cd $SLURM_SUBMIT_DIR` is the job's own folder
        job_vars = {"SLURM_SUBMIT_DIR": "."}
        for _, cmd in _script_commands(f"{job.id}.sbatch", job.script):
            job_vars.update(shell_defaults(cmd, job_vars))
            found(parse_launch(cmd, job.source, job.folder, job_vars, consoles, listed.__contains__))
    trains: set[str] = set()
    tops = _tops(listed)
    imports: dict[str, set[str]] = {}  # script -> the repo files it imports
    for rel in launch_sources[:MAX_LAUNCH_SOURCES] + py:
        if read >= MAX_READ or time.monotonic() > deadline:
            scan.stopped_early = f"stopped after reading {read} of {len(files)} files (limit reached)"
            break
        read += 1
        text = _read(root / rel)
        if text is None:
            continue
        if rel.endswith(".py"):
            score, reasons = _score(rel, text)
            imports[rel] = _repo_imports(text, listed, tops)
            if "trains" in reasons:  # `_score` searched for it already: once per file, the scan's largest cost
                trains.add(rel)
            if score >= 6 or rel in trains:
                c = cands.setdefault(rel, ScriptCandidate(path=rel, score=0))
                c.score += score
                c.reasons += reasons
            where = str(Path(rel).parent) if "/" in rel else ""
            for n, cmd in docstring_commands(text) + comment_commands(text, Path(rel).name):
                found(parse_launch(cmd, f"{rel}:{n}", where, {}, consoles, listed.__contains__))
            continue
        where = str(Path(rel).parent) if "/" in rel else ""
        for launch in _launches_in(rel, text, where, {}, consoles, listed.__contains__,
                                   lambda p: texts[p] if p in texts else texts.setdefault(p, _read(root / p))):
            found(launch)
    _unfold_the_only(scan.launches)
    for launch in scan.launches:
        c = cands.setdefault(launch.path or "", ScriptCandidate(path=launch.path or "", score=0))
        more = sum(r.startswith("launched in") for r in c.reasons)
        c.score += 6 if more == 0 else 1 if more < 4 else 0  # launched at all counts most; more places a little
        if _queued(launch) and not any(r.startswith(f"launched in {SOURCE}") for r in c.reasons):
            c.score += 12  # the user's own job, in the queue now: the strongest evidence there is
        if launch.source.lower().startswith("readme") and not any(
                r.lower().startswith("launched in readme") for r in c.reasons):
            c.score += 3  # the repo's own README, over a README deep in an example or extension folder
        c.reasons.append(f"launched in {launch.source}")
        if c.launch is None or _better(launch, c.launch):
            c.launch = launch
    for c in cands.values():
        if c.launch is not None:
            c.launch = _spelled_out(c.launch, scan.launches)
    runners: dict[str, str] = {}  # a module that trains -> a launched script that imports it and trains there
    for c in cands.values():
        via = sorted(imports.get(c.path, set()) & trains)
        if c.path not in trains and via:  # `scripts/train.py` whose loop lives in the package it imports
            trains.add(c.path)
            c.score += 6
            c.reasons.append(f"trains (in {via[0]})")
            if c.launch is not None:
                runners.setdefault(via[0], c.path)
        if c.launch is None and "has __main__" not in c.reasons:  # a library module: the entry calls it
            c.score -= 6
    for path, runner in runners.items():  # LLaVA's train.py, never launched, run by the launched train_mem.py
        run = cands.get(path)
        if run is not None and run.launch is None:
            run.score -= 6
            run.reasons.append(f"run through {runner}")
    if trains:  # generate, download, convert, eval ... scripts rank below anything that trains
        for c in cands.values():
            if c.path not in trains:
                c.score -= 12 if ASIDE_NAME.search(Path(c.path).name) else 6
                c.reasons.append("does not train" + (" (by its name)" if ASIDE_NAME.search(Path(c.path).name) else ""))
    for c in cands.values():
        if c.launch is not None and _zoo(c.launch, scan.launches, listed):
            _config_left_to_user(c.launch, listed)
            c.reasons.append("a model zoo: its docs train it on many configs, so the config is yours to name")
    scan.candidates = sorted(cands.values(), key=lambda c: (-c.score, c.path))[:MAX_CANDIDATES]
    return scan


def _consoles(root: Path, listed: set[str]) -> dict[str, str]:
    """The repo's console scripts, from its packaging files."""
    return console_scripts({n: _read(root / n) or "" for n in ("pyproject.toml", "setup.cfg", "setup.py")
                            if n in listed})


def entry_points(root: Path) -> tuple[dict[str, str], frozenset[str]]:
    """(console scripts, Python files) of a repo, for reading a run line without the whole scan: `check
    --repo` then finds `tune run RECIPE`'s recipe and a console script's module as the app did."""
    files = tracked_files(root)
    return _consoles(root, set(files)), frozenset(f for f in files if f.endswith(".py"))


def _script_commands(name: str, text: str) -> Iterator[tuple[int, str]]:
    """`commands_in`, with a script's own `cd DIR` lines kept before the commands that follow them: a
    shell script runs top-down in one folder. Docs are copied a block at a time, so a doc's `cd tools/`
    holds to the end of its code block."""
    doc = name.lower().endswith(DOCS)
    fences = [n for n, line in enumerate(text.splitlines(), 1) if line.strip().startswith(("```", "~~~"))] \
        if doc else []
    moves, since = "", 0
    for n, cmd in commands_in(name, text):
        if doc and any(since < f < n for f in fences):  # a new block: back in the folder the doc starts in
            moves = ""
        if re.fullmatch(r"cd\s+\S+", cmd):
            # a doc's `cd $HOME/project` or `cd /path/to/repo` is the reader's own checkout: its root
            home = doc and cmd.split()[1].startswith(("$", "/", "~"))
            moves, since = ("" if home else moves + f"{cmd} && "), n
            continue
        yield n, moves + cmd


def _launches_in(rel: str, text: str, where: str, known: dict[str, str], consoles: dict[str, str],
                 exists: Callable[[str], bool], follow: Callable[[str], str | None] | None,
                 via: str = "") -> Iterator[LaunchCommand | None]:
    """The launches of a doc or a shell script, read top-down with the variables it sets and the branches it
    takes; a command that runs one of the repo's shell scripts (`CONFIG=llama3_8b ./run_train.sh`) gives that
    script's launches too, with what the caller set and passed (`source`: `README.md:151 via run_train.sh:43`).
    Paths in a called script are the caller's: it runs in the caller's folder."""
    defaults = dict(known)
    branches = Branches()
    headings = _headings(text) if rel.lower().endswith(DOCS) else {}
    folded = _folded(text) if rel.lower().endswith(DOCS) else set()
    for n, cmd in _script_commands(rel, text):
        if not rel.lower().endswith(DOCS) and not branches.read(cmd, defaults):
            continue
        # variables as a reader typing the file top-down has them (a doc may set them a block earlier)
        defaults.update(shell_defaults(cmd, defaults))
        source = f"{via} via {rel}:{n}" if via else f"{rel}:{n}"
        launch = parse_launch(cmd, source, where, defaults, consoles, exists)
        heading = next((headings[k] for k in sorted(headings, reverse=True) if k < n), "")
        if launch is not None and OTHER_MACHINE.search(heading):
            launch.other_machine = heading
        if launch is not None and n in folded:
            launch.folded = True
        yield launch
        call = script_call(cmd, defaults) if follow is not None else None
        if call is None:
            continue
        script, passed = call
        script = next((p for p in (posixpath.normpath(posixpath.join(where, script)), script) if exists(p)), "")
        called = follow(script) if script and script != rel and follow is not None else None
        if called is not None:
            yield from _launches_in(script, called, where, passed, consoles, exists, None, source)


def _headings(text: str) -> dict[int, str]:
    """What heads each line of a doc: its section's Markdown heading and the short lead-in lines since
    (`To run on Mac silicon devices:`, `**On CPU**`), outside code blocks; keyed by the line they start at."""
    found: dict[int, str] = {}
    fenced, section = False, ""
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and stripped.startswith("#"):
            section = stripped.lstrip("#").strip()
            found[n] = section
        elif not fenced and len(stripped) < 80 and (stripped.endswith(":")
                                                    or re.fullmatch(r"\*\*[^*]+\*\*:?", stripped)):
            section = f"{section} / {stripped}"
            found[n] = section
    return found


def _folded(text: str) -> set[int]:
    """The lines of a doc inside a `<details>` block: what the page folds away (torchtune's "Command to reproduce
    final row" of a memory table, under a summary), where the page's own command is in plain view."""
    lines, depth = set(), 0
    for n, line in enumerate(text.splitlines(), 1):
        low = line.lower()
        depth += low.count("<details")
        if depth:
            lines.add(n)
        depth = max(depth - low.count("</details>"), 0)
    return lines


def _unfold_the_only(launches: list[LaunchCommand]) -> None:
    """A folded command stays a variant only where its page shows the same entry's command in plain view too:
    a page that folds every section (yolov5's README, its training commands under a `Training` summary)
    folds its main command with the rest."""
    def page(x: LaunchCommand) -> tuple[str | None, str]:
        return x.path, x.source.rsplit(":", 1)[0]
    plain = {page(x) for x in launches if not x.folded}
    for x in launches:
        x.folded = x.folded and page(x) in plain


def _tops(listed: set[str]) -> frozenset[str]:
    """The names an absolute import of a repo file starts with: its top-level modules and packages, at the
    root or under `src/`."""
    return frozenset(p.split("/")[1 if p.startswith("src/") else 0].removesuffix(".py") for p in listed
                     if p.endswith(".py") and p.count("/") >= (1 if p.startswith("src/") else 0))


def _repo_imports(text: str, listed: set[str], tops: frozenset[str]) -> set[str]:
    """The repo files a script imports by absolute name (`from pkg.train_util import X`), found by path;
    `tops`, what such a name starts with (`torch`, `os` are passed over at once)."""
    found = set()
    for m in _IMPORT.finditer(text):
        parts = m.group(1).split(".")
        if parts[0] not in tops:
            continue
        for base in ("", "src/"):
            for cand in (f"{base}{'/'.join(parts)}.py", f"{base}{'/'.join(parts)}/__init__.py"):
                if cand in listed:
                    found.add(cand)
        if len(parts) > 1 and f"{'/'.join(parts[:-1])}.py" in listed:  # `from pkg.mod import name`
            found.add(f"{'/'.join(parts[:-1])}.py")
    for m in _FROM_IMPORT.finditer(text):  # `from pkg import train_util`
        if m.group(1).split(".")[0] not in tops:
            continue
        for name in re.split(r"[,\s()]+", m.group(2)):
            cand = f"{m.group(1).replace('.', '/')}/{name}.py"
            if name and cand in listed:
                found.add(cand)
    return found


def _launches_here(rel: str) -> bool:
    name = Path(rel).name.lower()
    return rel.endswith((".sh", ".bash", ".sbatch", ".slurm", "Makefile", ".mk")) or name.startswith("readme") or (
        rel.lower().endswith((".md", ".rst")) and not name.startswith(("changelog", "license", "contributing")))


def _score(rel: str, text: str) -> tuple[int, list[str]]:
    """How much a Python file looks like the job's entry point, and why."""
    score, reasons = 0, []
    name = Path(rel).name
    if ENTRY_NAME.match(name):
        score += 5
        reasons.append("entry-point name")
    if any(w in text for w in _TORCH_WORDS) and _TORCH.search(text):
        score += 4
        reasons.append("uses torch")
    if re.search(r"""__name__\s*==\s*['"]__main__['"]""", text):
        score += 2
        reasons.append("has __main__")
    if any(c in text for c in TRAIN_CALLS) or ("Trainer(" in text or "runner.train(" in text) and _TRAINER.search(text):
        score += 6
        reasons.append("trains")
    score -= rel.count("/")
    if re.search(r"(^|/)tests?/|(^|/)test_|_test\.py$|(^|/)test\.py$", rel):
        score -= 10
    return score, reasons


# flags that make a training script evaluate, test or time its throughput instead of training
EVAL_ONLY = re.compile(r"^--?(eval|evaluate|eval[-_]only|test|test[-_]only|throughput|inference|predict|"
                       r"validate|validate[-_]only|val[-_]only)$", re.I)


def _better(new: LaunchCommand, old: LaunchCommand) -> bool:
    """The launch to show for a script: the user's queued job, then one with nothing left unresolved, then
    one whose config files the repo holds (a benchmark page's line for another project has none), then one
    with no value the docs left as a template (`experiment=experiment_name.yaml`), then one that does not ask
    for the CPU (the README's `trainer=cpu` example is not the GPU job), then one not from a docs page nor a
    script's docstring, then a real launcher. One under a doc heading for another machine (`To run on Mac
    silicon devices:`) is that machine's variant, one from a folder of an older version's pages that
    version's, and one a page folds away in `<details>` a variant beside its main command: each ranks below
    every other the job has, even one with holes."""
    def rank(x: LaunchCommand) -> tuple[bool, ...]:
        values = given_values(x.args)  # `--exp_name` is no value
        synopsis = any(w.startswith("[") or w.endswith("]") and "[" not in w for w in x.args)  # `[--tag <t>]`
        return (_queued(x), not _evaluates_only(x), not x.other_machine, not _old_pages(x), not x.folded, not synopsis,
                not x.unresolved, not x.absent,
                not any(TEMPLATE.search(v) for v in values),
                not any(v.lower() == "cpu" for v in values) and not any(w.lower() in CPU_FLAGS for w in x.args),
                not _docs_page(x), not _docstring(x), x.launcher not in ("python", "python -m"))

    return rank(new) > rank(old)


def _spelled_out(chosen: LaunchCommand, launches: list[LaunchCommand]) -> LaunchCommand:
    """The bare entry the docs give (a README's `torchrun ... train_gpt2.py`), where the repo has exactly one
    launch script that runs it with settings (llm.c's pyrun_gpt2_124M.sh and its 25 flags): that script's
    line, the job as its authors run it, with the launcher the docs gave. Several such scripts are a set of
    recipes (OLMo's), none of them the job; a docs line with a flag more is no such thing either
    (makemore's `--sample-only` samples and exits)."""
    if chosen.args:
        return chosen
    scripts = [x for x in launches if x.path == chosen.path and x.args and not x.unresolved
               and x.source.rsplit(":", 1)[0].endswith((".sh", ".bash", ".sbatch", ".slurm"))]
    return scripts[0] if len(scripts) == 1 and scripts[0].launcher == chosen.launcher else chosen


ZOO_CONFIGS, ZOO_FILES = 10, 5  # this many configs documented for one entry, in this many files: a model zoo


def _configs(launch: LaunchCommand, listed: set[str]) -> list[tuple[int, str]]:
    """(word index, file) of the repo's config files a command names; a Python one only from a config folder."""
    return [(i, v) for i, w in enumerate(launch.args) if (v := w.split("=", 1)[-1])
            and (CONFIG_FILE.fullmatch(v) or v.endswith(".py") and "config" in posixpath.dirname(v).lower())
            and posixpath.normpath(posixpath.join(launch.cwd, v)) in listed]


def _zoo(launch: LaunchCommand, launches: list[LaunchCommand], listed: set[str]) -> bool:
    """A model zoo's entry (mmpretrain's `tools/train.py CONFIG`, documented once per model in a README of its
    own): no one config is the job."""
    same = [x for x in launches if x.path == launch.path]
    named = {v for x in same for _, v in _configs(x, listed)}
    files = {x.source.rsplit(":", 1)[0] for x in same if _configs(x, listed)}
    return len(named) >= ZOO_CONFIGS and len(files) >= ZOO_FILES and bool(_configs(launch, listed))


def _config_left_to_user(launch: LaunchCommand, listed: set[str]) -> None:
    """The config the chosen command names taken out of it, for the user to name: a positional the parser
    requires is then asked for; a flag is said to be left to them."""
    i, _ = _configs(launch, listed)[0]
    word = launch.args[i]
    flag = word.split("=", 1)[0] if "=" in word else launch.args[i - 1] if i and launch.args[i - 1].startswith("-") \
        else None
    drop = {i, i - 1} if flag and "=" not in word else {i}
    launch.args = [w for k, w in enumerate(launch.args) if k not in drop]
    if flag:
        launch.left_out.append(f"{flag} <your config>")
    launch.command = format_command(launch)


def _evaluates_only(launch: LaunchCommand) -> bool:
    """A command that switches the job to evaluation, testing or throughput alone (`main.py --eval
    --resume ckpt`, `--eval_only=True`): another job than the training one, whatever else it gets right."""
    for word in launch.args:
        flag, eq, value = word.partition("=")
        if EVAL_ONLY.match(flag) and (not eq or value.strip("'\"").lower() in ("true", "1", "yes")):
            return True
    return False


def _docs_page(launch: LaunchCommand) -> bool:
    """A command from a docs page that is not a README: most illustrate a flag or a feature (a guide's
    `torchrun pretrain_gpt.py --data-parallel-sharding-strategy no_shard`), where a README or a launch
    script gives the whole job."""
    name = Path(launch.source.rsplit(":", 1)[0]).name.lower()
    return name.endswith(DOCS) and not name.startswith("readme")


# a folder of pages kept for an older version of the project: their flags may be gone from its parser
_OLD_PAGES = re.compile(r"(^|/)(legacy|deprecated|archived?|old|outdated|obsolete)(/|$)", re.I)


def _old_pages(launch: LaunchCommand) -> bool:
    """A command from a folder kept for an older version (`docs/source/legacy/FAQ.md`): it ranks below every
    current one, as a command for another machine does (`-rnn_size` there is an option the parser dropped)."""
    return _OLD_PAGES.search(posixpath.dirname(launch.source.rsplit(":", 1)[0].split(" via ")[-1])) is not None


def _docstring(launch: LaunchCommand) -> bool:
    """A command from a script's own docstring: a usage example (yolov5's multi-GPU line trains a 128-image
    sample), where the README gives the job as its authors run it."""
    return launch.source.rsplit(":", 1)[0].endswith(".py")


def _queued(launch: LaunchCommand) -> bool:
    return launch.source.startswith(SOURCE)


def _read(path: Path) -> str | None:
    try:
        data = read_regular(path, MAX_BYTES)
    except OSError:
        return None
    if b"\0" in data[:4096]:
        return None
    return data.decode("utf-8", errors="replace")
