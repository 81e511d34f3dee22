"""The run line: the job's command (the user's, or `python SCRIPT`) with the launcher and entry its code needs,
the benchmark's variables first, the wrapper before the entry when a change needs it, and the changes' words
in the order its config system reads them; and the wrapper's own path, never a file of the user's."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from ..detect.launch import OLDPWD, PLAIN, format_command, parse_launch, shell_word
from ..model import Analysis, BenchmarkChange, InitState, LaunchCommand
from ..read.launch import fewest_note, with_processes
from ..read.settings import flag_name
from ..read.systems.registry import system
from ..read.values import is_option
from .benchmark import OUT_DIR

WRAPPER_NAME = "wamf_bench.py"


def needs_wrapper(changes: list[BenchmarkChange]) -> bool:
    return any(c.enabled and ("(wrapper)" in c.how or any(e.startswith("WAMF_") for e in c.env)) for c in changes)


def is_wrapper(script: str) -> bool:
    """Whether a run line's script is the benchmark wrapper (under any name `wrapper_path` gives it)."""
    return re.fullmatch(r"wamf_bench(-\d+)?\.py", Path(script).name) is not None


def wrapper_path(state: InitState) -> str:
    """Next to the contract: `wamf_bench.py`, or `wamf_bench-N.py` when a file of the user's has that name."""
    from .wrapper import WRAPPER

    folder = Path(state.contract_path).parent
    stem, n = Path(WRAPPER_NAME).stem, 1
    path = folder / WRAPPER_NAME
    while path.is_symlink() or path.exists() and _text(path) != WRAPPER:
        n += 1
        path = folder / f"{stem}-{n}.py"
    return str(path)


def _text(path: Path) -> str | None:
    """A file's text if it could be the wrapper (a FIFO or a device named `wamf_bench.py` is not, and
    reading it must not wait or go on forever), else None."""
    from ..infra.files import read_regular
    from .wrapper import WRAPPER

    try:
        return read_regular(path, len(WRAPPER.encode("utf-8")) + 1).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def is_our_wrapper(path: Path) -> bool:
    """Whether the file at `path` is the app's wrapper, byte for byte (not a user's `wamf_bench.py`)."""
    from .wrapper import WRAPPER

    return not path.is_symlink() and _text(path) == WRAPPER


def job_launch(state: InitState) -> LaunchCommand:
    """The job's command as read (the user's answer), or `python SCRIPT` when there is none."""
    if state.launch is not None:
        return state.launch
    return LaunchCommand(command=f"python {shlex.quote(state.script)}", launcher="python", script=state.script,
                         path=state.script, prefix=["python"])


def entry_fixes(state: InitState) -> list[str]:
    """What the run line changes in the job's command so the entry gets what it needs, one clause each."""
    return _fixed(state)[1]


def _fixed(state: InitState) -> tuple[LaunchCommand, list[str]]:
    """The job's command with the launcher its entry needs: torchrun for rank variables, accelerate
    launch for an Accelerator, `python -m` from the package's folder for relative imports."""
    launch = job_launch(state).model_copy(deep=True)
    said = _privileged_port(launch) + _one_node(launch) + _visible_gpus(launch, _gpus(state))
    a = state.analysis
    if a is None or launch.launcher == "console script":
        return launch, said
    codes = {n.code: n for n in a.needs}
    for need in a.needs:
        if need.code == "trains_with" and not any(flag_name(w) in need.spellings for w in launch.args):
            launch.args = [*launch.args, *need.words]
            said.append(f"{Path(a.script).name} {need.why} ({need.file}:{need.line}): {' '.join(need.words)} given")
    plain = launch.launcher in ("python", "python -m")
    queued = codes.get("submits")
    if queued is not None and queued.runs and plain:  # what the cluster job would run, run here
        n, _ = _processes(state)
        launch.module, launch.script, launch.cwd = queued.runs, None, queued.runs_from
        launch.args = _without(launch.args, set(queued.drop))
        launch.prefix = ["torchrun", "--standalone", f"--nproc_per_node={n}"]
        launch.launcher = "torchrun"
        said.append(f"{Path(a.script).name} {queued.why}: runs {queued.runs} here with torchrun, {n} process(es), "
                    f"one per GPU seen (another count: edit --nproc_per_node={n}), without the submitter's own options")
        return launch, said
    if "package" in codes and a.module and launch.launcher == "python":
        launch.module, launch.script, launch.launcher, launch.cwd = a.module, None, "python -m", a.module_root
        said.append(f"{Path(a.script).name} {codes['package'].why}: python -m {a.module}")
    if (imports := codes.get("root_import")) and launch.script and not launch.module \
            and not any(w.startswith("PYTHONPATH=") for w in launch.env):
        root = os.path.relpath(".", launch.cwd or ".")  # the repo root, from the folder the command runs in
        launch.env = [*launch.env, f"PYTHONPATH={root}"]
        said.append(f"{Path(a.script).name} {imports.why} ({imports.file}:{imports.line}): the repo root on PYTHONPATH "
                    "puts this checkout's copy first")  # its value as the line has it: `.`, or `$OLDPWD` from outside
    if "ranks" in codes and plain:
        n, floor = _processes(state)
        launch.prefix = ["torchrun", "--standalone", f"--nproc_per_node={n}", *launch.prefix[1:]]
        launch.launcher = "torchrun"
        said.append(f"{Path(a.script).name} {codes['ranks'].why} ({codes['ranks'].file}:{codes['ranks'].line}): "
                    f"started with torchrun, " + (floor if floor else f"{n} process(es), one per GPU seen")
                    + f" (another count: edit --nproc_per_node={n})")
    elif not plain and launch.nproc_per_node is not None:  # the docs' count, never below what the code enforces
        n, floor = _processes(state)
        if floor and launch.nproc_per_node < n and with_processes(launch, n):
            said.append(f"{Path(a.script).name}: {floor}")
    elif "accelerate" in codes and plain:
        launch.prefix = ["accelerate", "launch", *launch.prefix[1:]]
        launch.launcher = "accelerate launch"
        said.append(f"{Path(a.script).name} {codes['accelerate'].why}: started with accelerate launch")
    elif a.config_system == "hf_trainer" and plain and _gpus(state) != 1 \
            and not any(w.startswith("CUDA_VISIBLE_DEVICES=") for w in launch.env):
        said.append(_one_gpu(launch, a))
    return launch, said


_PORTS = ("--master_port", "--master-port", "--main_process_port", "--main-process-port")


def _privileged_port(launch: LaunchCommand) -> list[str]:
    """A launcher port below 1024 (`--master_port 1` in a docstring's example) left out: only root may bind
    it, and the launcher picks a free default of its own."""
    words = launch.prefix
    for i, word in enumerate(words):
        opt, eq, value = word.partition("=")
        if opt in _PORTS and not eq and i + 1 < len(words):
            value = words[i + 1]
        if opt in _PORTS and value.isdigit() and int(value) < 1024:
            launch.prefix = _without(words, {opt})
            return [f"{opt} {value} left out: a port below 1024 is privileged; the launcher picks its own"]
    return []


# the launcher options that join one node to others: the benchmark runs on the node it is on
_NODE_OPTIONS = {"--nnodes", "--node_rank", "--node-rank", "--master_addr", "--master-addr", "--rdzv_endpoint",
                 "--rdzv-endpoint", "--rdzv_id", "--rdzv-id", "--rdzv_backend", "--rdzv-backend", "--num_nodes",
                 "--num-nodes", "--main_address", "--main-address", "--num_machines", "--machine_rank",
                 "--main_process_ip", "--main-process-ip", "--hostfile"}


def _one_node(launch: LaunchCommand) -> list[str]:
    """A command the docs give for several nodes (`--num-nodes=2 --node-rank=0 --main-address=...`) waits
    for the others for ever when started alone: the benchmark runs one node's share, on the node it is on."""
    if not launch.nnodes or launch.nnodes < 2:
        return []
    gone = list(dict.fromkeys(w.split("=")[0] for w in launch.prefix if w.split("=")[0] in _NODE_OPTIONS))
    if not gone:
        return []
    launch.prefix = _without(launch.prefix, _NODE_OPTIONS)
    said = f"the command joins {launch.nnodes} nodes: the benchmark runs one node's share, on this node " \
           f"({', '.join(gone)} left out; the global batch is one node's)"
    launch.nnodes = None
    return [said]


def _visible_gpus(launch: LaunchCommand, n: int) -> list[str]:
    """A docs' `CUDA_VISIBLE_DEVICES=4,5,6,7` names the author's GPUs: on a node that lacks one of them CUDA
    sees fewer than the launcher starts ranks for, or none, and the job crashes. The same count from GPU 0,
    at most the node's, and no more processes than GPUs left."""
    for i, word in enumerate(launch.env):
        name, _, value = word.partition("=")
        ids = value.strip("'\"").split(",")
        if name != "CUDA_VISIBLE_DEVICES" or n <= 0 or not all(x.strip().isdigit() for x in ids) \
                or all(int(x) < n for x in ids):
            continue
        k = min(len(ids), n)
        launch.env[i] = f"CUDA_VISIBLE_DEVICES={','.join(map(str, range(k)))}"
        fewer = launch.nproc_per_node is not None and launch.nproc_per_node > k and with_processes(launch, k)
        return [f"{word} names GPUs this node ({n} GPU(s)) lacks: {launch.env[i]} instead"
                + (f", {k} process(es)" if fewer else "")]
    return []


def _one_gpu(launch: LaunchCommand, a: Analysis) -> str:
    """transformers' Trainer in one process wraps the model in nn.DataParallel over every GPU it sees, which
    multiplies the global batch by the node's GPUs: pinned to one GPU, the command's batch is the job's. Not where
    the job splits the model over the GPUs itself (`from_pretrained(..., device_map="auto")`)."""
    name = Path(a.script).name
    if any(p.name == "device_map" for p in a.parallelism):
        return f"{name} runs transformers' Trainer in one process over a model it places on the GPUs itself " \
               "(device_map): every GPU it sees stays in use"
    launch.env = [*launch.env, "CUDA_VISIBLE_DEVICES=0"]
    return f"{name} runs transformers' Trainer in one process, which spreads each batch over every GPU it sees " \
           "(nn.DataParallel) and so multiplies the batch by their number: CUDA_VISIBLE_DEVICES=0 keeps the " \
           "command's batch on one GPU (for several, start it with torchrun)"


def _gpus(state: InitState) -> int:
    hw = state.detected.hardware
    return len(hw.gpus) if hw is not None and hw.gpus else 0


def _without(args: list[str], options: set[str]) -> list[str]:
    """`args` less the given options and their values (`--nodes 4`, `--nodes=4`, `--use-volta32`)."""
    kept: list[str] = []
    skip = False
    for word in args:
        if skip and not is_option(word) and "=" not in word:  # `key=value` is an override, not a value
            skip = False
            continue
        skip = word in options
        if not skip and word.split("=")[0] not in options:
            kept.append(word)
    return kept


def _processes(state: InitState) -> tuple[int, str]:
    """(processes, why when the code sets the count): one a GPU seen, at least one, never below the count
    the code exits under."""
    return fewest_note(state.analysis, _gpus(state))


def job_args(run: str) -> list[str] | None:
    """The job's own arguments in a run line, past the launcher and the wrapper; None if unreadable."""
    launch = parse_launch(run)
    if launch is None:
        return None
    args = launch.args
    if launch.script and is_wrapper(launch.script):
        skip = 2 if args[:1] == ["-m"] else 3 if args[:1] == ["--entry"] else 1
        args = args[skip:]
    return args


def run_command(state: InitState) -> str:
    """The `run` line: the job's command, with its launcher and arguments, the entry fixed to get what it
    needs, benchmark variables first and switches last; the wrapper (absolute path) before the entry when
    a row needs it."""
    launch, _ = _fixed(state)
    enabled = [c for c in state.changes if c.enabled]
    env = sorted({e for c in enabled for e in c.env})
    # two rows switched off through one setting give it once (a row's flags are words: `--save_strategy no`)
    flags = [f for words in dict.fromkeys(tuple(c.flags) for c in enabled) for f in words]
    overridden = {f.split("=")[0] for f in flags if f.startswith(("-", "+", "~")) or "=" in f}  # not a value (`no`)
    dropped = {d for c in enabled for d in c.drop}
    args: list[str] = []
    original = launch.args
    i = 0
    while i < len(original):  # the command's own args, minus those overridden or switched off
        a = original[i]
        name = a.split("=")[0]
        if name in dropped and (state.analysis is None or state.analysis.flags.get(name) in ("False", "True")):
            i += 1  # a store_true switch: the word alone
        elif name in dropped:  # a flag and all its values (`--val_prompts a b`, nargs="+")
            i += 1
            while "=" not in a and i < len(original) and not is_option(original[i]):
                i += 1
        elif name in overridden:
            takes_value = "=" not in a and i + 1 < len(original) and not is_option(original[i + 1])
            i += 2 if takes_value else 1
        else:
            args.append(a)
            i += 1
    entry: list[str] | None = None
    own = any(c.folder for c in enabled)
    folder = bench_folder(state)
    if needs_wrapper(enabled):
        if not any(e.startswith("WAMF_OUT=") for e in env):  # `MLFLOW_TRACKING_URI=file:$WAMF_OUT/...` sets none
            env.append(f"WAMF_OUT={folder}")
        wrapper = wrapper_path(state)
        try:
            wrapper.encode("utf-8")
        except UnicodeEncodeError:  # a folder name that is not UTF-8 cannot be written into the contract:
            wrapper = os.path.relpath(wrapper, Path(state.repo_path) / (launch.cwd or ""))  # relative to where it runs
        if launch.launcher == "console script":
            name = launch.prefix[-1]
            launch.prefix = ["python"]
            entry = [wrapper, "--entry", launch.entry or "", name]
        elif launch.module:
            entry = [wrapper, "-m", launch.module]
        else:
            entry = [wrapper, launch.script or state.script]
        if launch.launcher in ("python", "python -m", "console script"):
            launch.prefix = ["python", *[w for w in launch.prefix[1:] if w.startswith("-")]]
    launch.env = [*launch.env, *(e for e in env if e.split("=")[0] not in {x.split("=")[0] for x in launch.env})]
    words = system(state.analysis).line(state.analysis, args, flags) if state.analysis is not None else [*args, *flags]
    words, launch.env = [w.replace(OUT_DIR, folder) for w in words], [e.replace(OUT_DIR, folder) for e in launch.env]
    if own:  # in the order its parser reads them (a yacs opts list comes last)
        return _own_folder_line(state, launch, words, entry, folder, [x for c in enabled for x in c.links])
    return format_command(launch, words, entry)


def bench_folder(state: InitState) -> str:
    """Where the benchmark run writes: beside the checkout, never in it (`~/src/nanoGPT.wamf-bench` for
    `~/src/nanoGPT`), on the disk the user keeps the repo on; its absolute path, since the job's own words
    (`--output_dir=...`) never see a variable the same line sets."""
    repo = Path(state.repo_path)
    folder = str(repo.parent / f"{repo.name}.wamf-bench")
    try:
        folder.encode("utf-8")
    except UnicodeEncodeError:  # a path that is not UTF-8 cannot be written into the contract: from the root
        return "../wamf-bench"
    return folder


def _own_folder_line(state: InitState, launch: LaunchCommand, words: list[str], entry: list[str] | None,
                     folder: str, reads: list[str]) -> str:
    """`mkdir -p F && cd F && ln -sfn $OLDPWD/data . && python $OLDPWD/train.py ...`: what the job reads by a
    relative path is linked in from the checkout, where it is there now; one it would make through a dangling
    link would land in the checkout."""
    repo = Path(state.repo_path)
    here = launch.cwd or "."
    launch, words, entry = _from_own_folder(launch, words, entry, repo)
    plain = bool(PLAIN.fullmatch(str(repo.resolve())))
    links = "".join(f"ln -sfn {shell_word(f'{OLDPWD}/' + os.path.normpath(os.path.join(here, top)), plain)} . && "
                    for top in dict.fromkeys(reads) if (repo / here / top).exists())
    command = format_command(launch, words, entry, plain_back=plain)
    return f"mkdir -p {shlex.quote(folder)} && cd {shlex.quote(folder)} && {links}{command}"


def _checkouts(here: Path, word: str) -> bool:
    """Whether a relative word of the docs' command names a path of the checkout: one there now, or one a step
    the docs give first makes in a folder of the checkout (`data/wiki1m.txt` beside `data/download_wiki.sh`).
    Not `Qwen/Qwen2-0.5B`, a name no folder of the checkout starts."""
    path = here / word
    try:
        return path.exists() or "/" in word.rstrip("/") and path.parent != here and path.parent.is_dir()
    except OSError:  # a word too long for a file name
        return False


def _from_own_folder(launch: LaunchCommand, words: list[str], entry: list[str] | None,
                     repo: Path) -> tuple[LaunchCommand, list[str], list[str] | None]:
    """The command run from the benchmark folder, outside the checkout: every word that names a file or folder
    of the checkout (the script, a config, the launcher's own) by `$OLDPWD`, the folder the line left, so it
    names the checkout the line starts in (the optimizer's worktree too); `python -m` gets that root on its
    path."""
    here = launch.cwd or "."

    def rebased(word: str) -> str:
        if ("/" in word or "." in word) and not word.startswith(("/", "~", "$", "-")) and _checkouts(repo / here, word):
            path = os.path.normpath(os.path.join(here, word))
            return OLDPWD if path == "." else f"{OLDPWD}/{path}"
        return word

    def each(word: str) -> str:
        name, eq, value = word.partition("=")
        return f"{name}={rebased(value)}" if eq and not name.startswith(("/", ".")) else rebased(word)

    launch = launch.model_copy(update={"cwd": ""})  # the line's own `cd` goes to the benchmark folder
    launch.env = [each(e) for e in launch.env]
    launch.prefix = [each(w) for w in launch.prefix]  # a launcher's own config (`--config_file fsdp.yaml`)
    if launch.module and not any(e.startswith("PYTHONPATH=") for e in launch.env):
        launch.env.append(f"PYTHONPATH={OLDPWD}" if here == "." else f"PYTHONPATH={OLDPWD}/{here}")
    if launch.script:
        launch.script = rebased(launch.script)
    return launch, [each(w) for w in words], [each(w) for w in entry] if entry is not None else None
