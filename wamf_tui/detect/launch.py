"""How the job is really started: commands found in the repo, read as a shell would.

A job is a command, not a file. Commands come from README and docs code blocks, shell
scripts, Makefiles and sbatch files; each is parsed into the launcher with its own options
(torchrun, accelerate launch, deepspeed, srun, mpirun, python, python -m, the repo's console
scripts), the entry (a script or a module) and its arguments. Paths are resolved from the
folder the command is written for (a `cd` inside the snippet, the document's own folder, or
the repo root), `VAR=${VAR:-default}` defaults are filled in, and `$@` is dropped, so no shell
variable is ever pasted into a proposed command as a literal. Pure: reads text, runs nothing.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable, Container, Mapping
from pathlib import Path

from ..infra.visible import visible
from ..model import LaunchCommand
from ..read.launch import NPROC
from ..read.systems.modules import LOADED, not_here
from ..read.values import is_option
from .shell import ASSIGN, expand, quoted

_PYTHON = re.compile(r"python[\d.]*")
# What a README leaves for its reader to fill: `<your_path>`, `<output dir>`, `[imagenet folder]`, `{step}`,
# `path/to/images`.
_PLACEHOLDER = re.compile(r"<[^\s<>=()$&|;\d][^<>\n]*>|\[[A-Za-z][^\[\]\n]*\s[^\[\]\n]*\]|(?<!\$)\{[A-Za-z_]\w*\}"
                          r"|(?<![\w/.~-])/?(?i:path)/to/[^\s'\"]*"  # `--data_dir path/to/images`
                          r"|\b(?i:your)[ _-][A-Za-z][^\"'()<>\n]*"  # `"('your device id')"`, `your_data_dir`
                          r"|(?<![\w${./-])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*(?![\w.=/}])")  # `LMDB_PATH`: `_caps_hole`
_CAPS = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*")
_CAPS_NOUN = re.compile(r"PATH|DIR|SIZE|GPU|NUM|NAME|FILE|ROOT|PORT|FOLDER|DATA|CKPT|CHECKPOINT|MODEL|CONFIG|STEPS")
_OPTS_KEY = re.compile(r"[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*")  # a yacs-style `KEY VALUE` opts key: `MODEL.DEVICE_ID`
_ALL_ARGS = re.compile(r"""(["']?)\$\{?[@*]\}?\1""")
_ARGS_FROM = re.compile(r"""(["']?)\$\{[@*]:(\d)\}\1""")  # bash's `${@:3}`: the caller's arguments from the third
_SCRIPT_DIR = re.compile(r"""\$\(\s*dirname\s+["']?(?:\$0|\$\{?BASH_SOURCE(?:\[0\])?\}?)["']?\s*\)""")
# Launcher options that take no value: any other option without `=` takes the next word as its value.
_SWITCHES = {
    "python": {"-u", "-O", "-OO", "-B", "-s", "-S", "-E", "-I", "-P", "-b", "-bb", "-q", "-v", "-d", "-R"},
    "torchrun": {"--standalone", "--no-python", "--no_python", "--run-path", "--run_path", "--module", "-m",
                 "--use-env", "--use_env", "--tee-output"},
    "accelerate launch": {"--multi_gpu", "--cpu", "--use_deepspeed", "--use_fsdp", "--use_megatron_lm", "--module",
                          "-m", "--no_python", "--debug", "--quiet", "-q", "--tpu", "--same_network",
                          "--zero3_init_flag", "--offload_param_device", "--main_training_function"},
    "deepspeed": {"--no_python", "--module", "--no_local_rank", "--autotuning", "--force_multi", "--bind_cores_to_rank",
                  "--enable_each_rank_log", "--no_ssh_check"},
    "composer": {"-v", "--verbose", "-m", "--module_mode", "-c", "--command_mode", "--no_python"},  # MosaicML's
    "srun": {"--exclusive", "-l", "--label", "--unbuffered", "-u", "--mpi=pmix", "--overlap"},
    "mpirun": {"--allow-run-as-root", "--oversubscribe", "--tag-output"},
    "mpiexec": {"--allow-run-as-root", "--oversubscribe", "--tag-output"},
}
NNODES = ("--nnodes", "--num_machines", "--num_nodes", "--num-nodes", "-N", "--nodes")
_ROOT = "\0root/"  # stands for the repo root in a path; no file name holds a NUL
_OLD = "\0old"  # `$OLDPWD` after a `cd`: the folder the line was in before it (our run line from a folder outside)
OLDPWD = "$OLDPWD"
WRAPPERS = ("exec", "time", "nohup", "env", "command", "stdbuf")
_REDIRECT = re.compile(r"\d?(>>?|<)|&>>?|\d?>&\d")  # `>`, `2>>`, `&>`, `<`, `2>&1`, alone
# `>log`, `2>/dev/null`, `&>out.txt`; not `>=1.0`, nor a model's special token `'<|im_end|>'` (no shell reads `<|`)
_REDIRECT_ATTACHED = re.compile(r"(\d?>>?|&>>?|<(?!\|))[^\s=]")
# launchers whose parser takes the script's arguments as a remainder and drops a `--` before them: the
# script never sees it (python itself passes it on, and the script's argparse then takes all as positionals)
_CONSUMES_SEPARATOR = ("torchrun", "launch", "deepspeed", "composer")


def parse_launch(command: str, source: str = "", where: str = "", defaults: Mapping[str, str] | None = None,
                 consoles: Mapping[str, str] | None = None,
                 exists: Callable[[str], bool] | None = None) -> LaunchCommand | None:
    """One shell command into launcher, entry and arguments; None when it starts no Python job.

    `where` is the folder (relative to the repo root) of the file the command was found in;
    `exists(path)` says whether a path relative to the root is a file, to pick the folder the
    command is written for. `consoles` maps the repo's console scripts to `module:function`."""
    known = {"PWD": ".", **(defaults or {})}  # the shell's own folder: where the command runs
    holes: dict[str, str] = {}

    def hole(m: re.Match[str]) -> str:  # a placeholder becomes a variable nobody sets: left out, and said
        if _CAPS.fullmatch(m.group(0)) and not _caps_hole(command, m):
            return m.group(0)
        whole = _alone(command, m)  # `--model="<path to the model>"`, `"('your device id')"`: a hole
        if quoted(command, m.start()) and not whole:  # `--prompt "a photo of <new1> cat"` is a value
            return m.group(0)
        name = f"WAMF_HOLE_{len(holes)}"
        holes[name] = m.group(0)
        return "${" + name + "}"

    text = _PLACEHOLDER.sub(hole, command)
    text = _ARGS_FROM.sub(lambda m: f" {known.get('@:' + m.group(2), '')} ", text)
    text = _ALL_ARGS.sub(lambda _: f" {known.get('@', '')} ", text)  # `"$@"`: what the script's caller passed
    text = _SCRIPT_DIR.sub(_ROOT + (where or "."), text)  # the script's own folder, from the root
    cwd: str | None = None
    old: str | None = None  # the folder before the last `cd`, from the root
    for segment in re.split(r"\s*(?:&&|;|\|\|)\s*", text):
        segment, _ = expand(segment, known, line=True)  # as a reader means it: `$FLAGS` may hold several words
        segment = _ANSI_C.sub(lambda m: shlex.quote(m.group(0)), segment)  # `$'a\nb'`: one word, kept as written
        try:
            words = _words(segment)
        except ValueError:
            return None
        if len(words) >= 2 and words[0] == "cd":
            target, _ = expand(words[1], known)
            old, known["OLDPWD"] = (where if cwd is None else cwd), _OLD
            if target.startswith(_ROOT):
                cwd = posixpath.normpath(target[len(_ROOT):])
            else:
                cwd = posixpath.normpath(posixpath.join(where if cwd is None else cwd, target))
            continue
        if len(words) >= 1 and ASSIGN.match(segment) and len(words) == 1:
            name, _, value = words[0].partition("=")
            known[name] = expand(value, known)[0]
            continue
        launch = _parse_words(_unredirected(words), known, consoles or {})
        if launch is None or any(w in ("-h", "--help") for w in launch.args):  # prints the flags, runs nothing
            continue
        launch.unresolved = [holes.get(u, u) for u in launch.unresolved]
        if _EXAMPLE.fullmatch(source):  # the repo's own example, not the user's line nor their queued job
            _inputs_elsewhere(launch)
        launch.left_out = [re.sub(r"\$\{(WAMF_HOLE_\d+)\}", lambda m: holes[m.group(1)], x) for x in launch.left_out]
        launch.source = source
        return _place(launch, where, cwd, exists, old or "")
    return None


_ANSI_C = re.compile(r"\$'(?:[^'\\]|\\.)*'")  # bash's `$'User: {}\nAssistant: '`: one word, its `$` no variable
def _caps_hole(command: str, m: re.Match[str]) -> bool:
    """A README's capitals for what the reader fills in (`--batch BATCH_SIZE LMDB_PATH`,
    `--nproc_per_node=N_GPU`): a word naming a path, size, count or port, given as an option's value or as the
    command's last word. Elsewhere capitals are the command's own (a yacs key `OUTPUT_DIR /out`, `ALL`)."""
    if not _CAPS_NOUN.search(m.group(0)):
        return False
    before = command[:m.start()]
    if before.endswith("="):
        return before.split()[-1].startswith("-") if before.split() else False
    words = before.split()
    after = command[m.end():].lstrip(" \t")
    return bool(words) and words[-1].startswith("-") and not words[-1].startswith("--no") \
        or after == "" or after[0] in "\n;&|"


_EXAMPLE = re.compile(r".+:\d+")  # a command's source in the repo: `README.md:12`, `scripts/train.sh:3`
_INPUT_NAME = re.compile(r"data|train|val|image|img|coco|imagenet|corpus|audio|video|input|weights|pretrain", re.I)
_OUTPUT_NAME = re.compile(r"out|save|log|ckpt|checkpoint|result|dump|cache", re.I)


def _inputs_elsewhere(launch: LaunchCommand) -> None:
    """An example's input path that is not on this machine (open_clip's `--train-data /data/cc12m/...`, a
    README's `--data=~/datasets/ffhq.zip`) is the authors': left out and said, for the user's own."""
    args, i = launch.args, 0
    while i < len(args):
        name, eq, value = args[i].partition("=")
        pair = not eq and i + 1 < len(args) and not is_option(args[i + 1])
        value = value if eq else args[i + 1] if pair else ""
        if name.startswith("-") and value.startswith(("/", "~")) and not_here(value, Path("/")) and (
                LOADED.search(value) or _INPUT_NAME.search(name) and not _OUTPUT_NAME.search(name)):
            launch.left_out.append(f"{name} {value}")
            launch.unresolved.append(value)
            del args[i:i + (2 if pair else 1)]
            continue
        i += 1


def script_call(command: str, known: Mapping[str, str]) -> tuple[str, dict[str, str]] | None:
    """`MODULE=llama3 CONFIG=llama3_8b ./run_train.sh --compile.enable` (or `bash x.sh a b`): the shell script
    it runs, and what that script then knows: the variables set before it, its `$1`... and its `$@`."""
    if ".sh" not in command and ".bash" not in command:  # most commands: no shlex for them
        return None
    segment = re.split(r"\s*(?:&&|;|\|\|?)\s*", command)[0]
    try:
        words = shlex.split(expand(segment, known, line=True)[0], comments=True)
    except ValueError:
        return None
    if any(_PLACEHOLDER.search(w) or "..." in w for w in words):  # `--module <module_name>`: a template
        return None
    assigned, start = _command_start(words)
    env = dict(w.partition("=")[::2] for w in assigned)
    words = _unredirected(words[start:])
    if len(words) >= 2 and words[0] in ("bash", "sh", "source", "."):
        words = words[1:]
    if not words or not words[0].endswith((".sh", ".bash")) or "$" in words[0]:
        return None
    args = words[1:]
    positional = {str(i): args[i - 1] if i <= len(args) else "" for i in range(1, 10)}  # unset ones are empty
    slices = {f"@:{i}": " ".join(shlex.quote(a) for a in args[i - 1:]) for i in range(1, 10)}  # `${@:3}`
    return posixpath.normpath(words[0]), {**env, **positional, **slices, "@": " ".join(shlex.quote(a) for a in args)}


def _alone(text: str, m: re.Match[str]) -> bool:
    """Whether a placeholder is all of its quoted word but for brackets and quotes (`"('your path')"`)."""
    left = len(text[:m.start()]) - len(text[:m.start()].rstrip("(['\""))
    right = len(text[m.end():]) - len(text[m.end():].lstrip(")]'\""))
    before, after = text[m.start() - left:m.start()], text[m.end():m.end() + right]
    return bool(before) and before[0] in "'\"" and after.endswith(before[0])


def _command_start(words: list[str]) -> tuple[list[str], int]:
    """(the `A=1` assignments before a command, where the command starts): past them, wrappers (`nohup`,
    `env`) and `uv run` (the environment, found on its own)."""
    env: list[str] = []
    i = 0
    while i < len(words) and (re.fullmatch(r"[A-Za-z_]\w*=.*", words[i]) or words[i] in WRAPPERS
                              or words[i:i + 2] == ["uv", "run"]):
        if "=" in words[i]:
            env.append(words[i])
        i += 2 if words[i] == "uv" else 1
    return env, i


def _parse_words(words: list[str], known: Mapping[str, str], consoles: Mapping[str, str]) -> LaunchCommand | None:
    env, i = _command_start(words)
    launchers: list[str] = []
    prefix: list[str] = []
    unresolved: list[str] = []
    nproc = nnodes = None
    module = entry = None
    while i < len(words):
        word, missing = expand(words[i], known)
        unresolved += missing
        name = Path(word).name
        if name in ("srun", "mpirun", "mpiexec", "torchrun", "deepspeed", "composer"):
            kind = name
            prefix.append(name)
            i += 1
        elif name == "accelerate" and i + 1 < len(words) and words[i + 1] == "launch":
            kind = "accelerate launch"
            prefix += ["accelerate", "launch"]
            i += 2
        elif (runner := _fabric_runner(words, i)) is not None:  # Fabric's own: `lightning run model`, `fabric run`
            kind = " ".join(runner)
            prefix += runner
            i += len(runner)
        elif _PYTHON.fullmatch(name):
            kind = "python"
            prefix.append("python")
            i += 1
            while i < len(words) and words[i] in _SWITCHES["python"]:
                prefix.append(words[i])
                i += 1
            if i + 1 < len(words) and words[i] == "-m":
                mod = words[i + 1]
                if mod in ("torch.distributed.run", "torch.distributed.launch"):
                    kind = "torchrun"
                    prefix += ["-m", mod]
                    i += 2
                elif mod in ("accelerate.commands.launch",):
                    kind = "accelerate launch"
                    prefix += ["-m", mod]
                    i += 2
                else:
                    launchers.append("python -m")
                    module = mod
                    i += 2
                    break
        elif word.endswith(".py") and "/" in word and not launchers:  # `./train_net.py`: run by its shebang
            kind = "python"
            prefix.append("python")
        elif name in consoles and not launchers:
            launchers.append("console script")
            prefix.append(word)
            entry = consoles[name]
            i += 1
            break
        else:
            break
        launchers.append(kind)
        # the launcher's own options, up to the entry
        while i < len(words) and words[i].startswith("-"):
            opt, eq, val = words[i].partition("=")
            word, missing = expand(words[i], known)
            unresolved += missing
            start = len(prefix)
            prefix.append(word)
            i += 1
            if opt in ("-m", "--module", "--module_mode") and kind in ("torchrun", "accelerate launch", "deepspeed",
                                                                     "composer"):
                prefix.pop()  # the entry's own words say it: `format_command` writes them back
                if i < len(words):
                    module = expand(words[i], known)[0]
                    i += 1
                break
            takes_value = not eq and opt not in _SWITCHES.get(kind, ()) and i < len(words) and (
                not words[i].endswith(".py") and not _is_launcher(words[i]) and not words[i].startswith("-"))
            if takes_value:
                val, more = expand(words[i], known)
                unresolved += more
                missing += more
                prefix.append(val)
                i += 1
            if missing:  # an option whose value the file never gives is left out, not pasted in
                del prefix[start:]
                continue
            val = expand(val, known)[0]
            if val.isdigit() and opt in NPROC:
                nproc = int(val)
            if val.isdigit() and opt in NNODES:
                nnodes = int(val)
        if module:
            break
    if not launchers:
        return None
    script = None
    if module is None and entry is None:
        if i >= len(words):
            return None
        script, missing = expand(words[i], known)
        unresolved += missing
        if not script.endswith(".py"):
            return None
        i += 1
    args: list[str] = []
    left_out: list[str] = []
    for w in words[i:]:  # a word the file never sets is left out, with the option it is the value of
        value, missing = expand(w, known)
        if missing:
            unresolved += missing
            if args and (args[-1].startswith("-") and "=" not in args[-1] or _OPTS_KEY.fullmatch(args[-1])):
                left_out.append(f"{args.pop()} {w}")  # `--data <dir>`, yacs's `OUTPUT_DIR <dir>`: the pair goes
            elif w.startswith("-") and "=" in w:
                left_out.append(w.replace("=", " ", 1))
            elif any(m.startswith("WAMF_HOLE_") for m in missing):  # `data=<PATH>`: a value the reader gives
                left_out.append(w)
            continue
        args.append(value)
    env = [expand(e, known)[0] for e in env]
    launcher = " ".join(dict.fromkeys(launchers))
    if args[:1] == ["--"] and launcher.split()[-1] in _CONSUMES_SEPARATOR:  # `torchrun -m x -- --depth=12`
        args = args[1:]
    return LaunchCommand(command="", launcher=launcher, script=script, module=module, entry=entry, args=args,
                         env=env, prefix=prefix, nproc_per_node=nproc, nnodes=nnodes,
                         unresolved=sorted(set(unresolved)), left_out=left_out)


def _unredirected(words: list[str]) -> list[str]:
    """A command's words without its redirections (`&> $OUTPUT/training.log`, `2>&1`, `> log`) and what it
    pipes into (`| tee log`): the shell's, never the job's arguments."""
    kept: list[str] = []
    skip = False
    for w in words:
        if skip:
            skip = False
        elif w == "|":
            break
        elif _REDIRECT.fullmatch(w):
            skip = not w.endswith(("&1", "&2"))  # `> file` takes the next word; `2>&1` stands alone
        elif not _REDIRECT_ATTACHED.match(w):
            kept.append(w)
    return kept


def _fabric_runner(words: list[str], i: int) -> list[str] | None:
    """The words of Lightning Fabric's launcher at `i`: `lightning run model` (Lightning 2.0-2.1), `fabric run`
    and `fabric run model` (2.2 on). It starts one process a device, with torchrun's rank variables."""
    name = Path(words[i]).name
    if name == "lightning" and words[i + 1:i + 3] == ["run", "model"]:
        return ["lightning", "run", "model"]
    if name == "fabric" and words[i + 1:i + 2] == ["run"]:
        return ["fabric", "run", "model"] if words[i + 2:i + 3] == ["model"] else ["fabric", "run"]
    return None


def _is_launcher(word: str) -> bool:
    name = Path(word).name
    return name in ("srun", "mpirun", "mpiexec", "torchrun", "deepspeed", "accelerate", "composer") or bool(
        _PYTHON.fullmatch(name))


def _place(launch: LaunchCommand, where: str, cwd: str | None, exists: Callable[[str], bool] | None,
           old: str = "") -> LaunchCommand:
    """Pick the folder the command is written for and the entry's path from the repo root; `old` is the folder
    (from the root) `$OLDPWD` names."""
    if launch.entry:  # a console script: its module, from the root or a src/ layout
        name = launch.entry.split(":")[0].replace(".", "/")
        cands = [f"{name}.py", f"{name}/__init__.py", f"src/{name}.py", f"src/{name}/__init__.py"]
    elif launch.module:
        name = launch.module.replace(".", "/")
        cands = [f"{name}.py", f"{name}/__main__.py", f"src/{name}.py", f"src/{name}/__main__.py"]
    else:
        cands = [launch.script] if launch.script else []
    folders = [cwd] if cwd is not None else ([where, ""] if where else [""])
    chosen = folders[0]
    back = next((c for c in cands if _OLDED.match(c)), None)  # `"$OLDPWD"/train.py`: a path from that folder
    if back is not None and exists is not None and exists(path := _from_old(back, old)):
        launch.path = path
    elif exists is not None:
        for folder in folders:
            for cand in cands:
                path = posixpath.normpath(posixpath.join(folder, cand))
                if not path.startswith("../") and exists(path):
                    launch.path, chosen = path, folder
                    break
            if launch.path:
                break
    launch.cwd = "" if chosen in ("", ".") else chosen
    launch.env, launch.args = [_from_cwd(w, launch.cwd, old) for w in launch.env], [_from_cwd(w, launch.cwd, old)
                                                                                    for w in launch.args]
    launch.prefix = [_from_cwd(w, launch.cwd, old) for w in launch.prefix]
    if launch.script:
        launch.script = _from_cwd(launch.script, launch.cwd, old)
    launch.command = format_command(launch)
    return launch


_LINK = re.compile(r"(?:^|&&)\s*ln -sfn (?:\"\$OLDPWD\"|\$OLDPWD)/(\S+) \.(?=\s*&&)")


def linked(run: str, root: Path) -> dict[str, Path]:
    """What a run line links into the benchmark folder from the checkout it starts in (`ln -sfn $OLDPWD/data .
    &&`): each link's name, and the path in the checkout it names."""
    found = {}
    for word in _LINK.findall(run):
        path = root / shlex.split(word)[0]
        found[path.name] = path
    return found


def _from_old(word: str, old: str) -> str:
    """A `$OLDPWD` path's folder from the repo root."""
    m = _OLDED.match(word)
    return posixpath.normpath(posixpath.join(old or ".", (m.group(1) if m else word).lstrip("/") or "."))


def _from_cwd(word: str, cwd: str, old: str = "") -> str:
    """A path the script's own folder gave (`PYTHONPATH=$(dirname $0)/..:$PYTHONPATH`), or `$OLDPWD` gave, from
    the folder the command runs in: no marker reaches a command. From a folder outside the checkout (absolute, or
    `../`) a path back stays `$OLDPWD/...`: the line's own word, whichever checkout (a worktree) it runs from."""
    outside = cwd.startswith(("/", "../")) or cwd == ".."
    word = _OLDED.sub(lambda m: OLDPWD + m.group(1) if outside
                      else posixpath.relpath(_from_old(m.group(0), old), cwd or "."), word)
    return _ROOTED.sub(lambda m: posixpath.relpath(posixpath.normpath(m.group(1)), cwd or "."), word)


# the markers as a word holds them, and as a model's text field shows them (`visible` escapes the NUL)
_ROOTED = re.compile(f"(?:{re.escape(_ROOT)}|{re.escape(visible(_ROOT))})" + r"([^:\s]*)")
_OLDED = re.compile(f"(?:{re.escape(_OLD)}|{re.escape(visible(_OLD))})" + r"(/[^:\s]*|(?![^:\s]))")


CONFIG_FILE = re.compile(r"(?!/|~|\$)[\w./-]+\.(?:ya?ml|json|toml|cfg|ini)")  # one the repo itself would hold


def absent_configs(launch: LaunchCommand, listed: Container[str], names: Container[str]) -> list[str]:
    """The config files a command names that the repo holds nowhere: not at that path from its folder, nor, for
    a bare file name, under that name anywhere in `names` (yolov5's `--data coco.yaml` is found in data/ by the
    job itself). A path with a folder is the shell's, from the command's folder: OpenNMT-py's `-config
    examples/wiki_103.yaml` is absent though `docs/.../wiki_103/wiki_103.yaml` exists."""
    return [v for v in (w.split("=", 1)[-1] for w in launch.args) if CONFIG_FILE.fullmatch(v)
            and posixpath.normpath(posixpath.join(launch.cwd, v)) not in listed and ("/" in v or v not in names)]


_QUOTING = re.compile(r"['\"\\#]")
_BLANKS = re.compile(r"[ \t\r\n]+")


def _words(segment: str) -> list[str]:
    """The shell's words of a command, as `shlex.split` with comments makes them; a line with no quote,
    escape or comment is split on blanks alone, which gives the same words (most docs lines, at a tenth of
    the cost)."""
    if _QUOTING.search(segment):
        return shlex.split(segment, comments=True)
    return [w for w in _BLANKS.split(segment) if w]  # shlex's blanks only: a no-break space stays in a word


def format_command(launch: LaunchCommand, args: list[str] | None = None, entry_words: list[str] | None = None,
                   plain_back: bool = False) -> str:
    """The command as typed from the repo root: `cd` to its folder, variables, launcher, entry, arguments.
    `plain_back`: the folder `$OLDPWD` names needs no quotes (no blank or shell character in its path)."""
    if entry_words is None:
        flag = "--module" if launch.launcher.startswith("deepspeed") else "-m"
        entry_words = [flag, launch.module] if launch.module else ([launch.script] if launch.script else [])
    words = [*launch.env, *launch.prefix, *entry_words, *(launch.args if args is None else args)]
    cmd = " ".join(shell_word(w, plain_back) for w in words)
    return f"cd {shlex.quote(launch.cwd)} && {cmd}" if launch.cwd else cmd


_HYDRA_DELETE = re.compile(r"~[A-Za-z_][\w.]*(?:=[\w.:+-]*)?")


def shell_word(word: str, plain_back: bool = False) -> str:
    """A word as the shell must get it. Hydra's deletion `~callbacks.model_checkpoint` stays bare, as its docs
    write it: bash expands `~name` only when a user of that exact name exists, and no user is named
    `callbacks.model_checkpoint`. A leading `~/` (the docs' home) stays bare for the shell to expand. `$OLDPWD`
    (a path back from the benchmark folder) is left for the shell to expand: bare where its folder's path is
    plain (`$OLDPWD/train.py`), else in double quotes."""
    if _HYDRA_DELETE.fullmatch(word):
        return word
    name, value = _ASSIGNED.match(word).groups(default="")  # type: ignore[union-attr]  # `A=` must stay bare
    if _ANSI_C.fullmatch(value):  # the docs' `$'...'` (a newline as `\n`), for bash to decode as they do
        return name + value
    if value.startswith("~/"):  # the docs' home path: quoted whole, `'~/data'` would reach the job literally
        return name + "~/" + (shlex.quote(value[2:]) if value[2:] else "")
    if OLDPWD not in value:
        return name + shlex.quote(value)
    back = OLDPWD if plain_back else f'"{OLDPWD}"'
    return name + back.join(shlex.quote(p) if p else "" for p in value.split(OLDPWD))


_ASSIGNED = re.compile(r"([A-Za-z_]\w*=)?(.*)", re.S)  # `WAMF_OUT=/a b` quoted whole would be a command name


PLAIN = re.compile(r"[\w@%+=:,./-]*")  # what shlex leaves unquoted


def console_scripts(files: Mapping[str, str]) -> dict[str, str]:
    """The repo's console scripts (`name` -> `module:function`) from pyproject.toml, setup.cfg and setup.py."""
    found: dict[str, str] = {}
    py = files.get("pyproject.toml", "")
    table = re.search(r"^\[project\.scripts\]\s*$(.*?)(?=^\[|\Z)", py, re.M | re.S)
    if table:
        for m in re.finditer(r"""^[ \t]*["']?([\w.-]+)["']?\s*=\s*["']([\w.]+:[\w.]+)["']""", table.group(1), re.M):
            found[m.group(1)] = m.group(2)
    project = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", py, re.M | re.S)
    for m in re.finditer(r"""^[ \t]*scripts\.["']?([\w.-]+?)["']?\s*=\s*["']([\w.]+:[\w.]+)["']""",
                         project.group(1) if project else "", re.M):  # `scripts.tool = "pkg.cli:main"`
        found[m.group(1)] = m.group(2)
    cfg = files.get("setup.cfg", "")
    block = re.search(r"^console_scripts\s*=\s*$(.*?)(?=^\S|\Z)", cfg, re.M | re.S)
    if block:
        for m in re.finditer(r"^\s+([\w.-]+)\s*=\s*([\w.]+:[\w.]+)", block.group(1), re.M):
            found[m.group(1)] = m.group(2)
    for m in re.finditer(r"""["']\s*([\w.-]+)\s*=\s*([\w.]+:[\w.]+)\s*["']""", files.get("setup.py", "")):
        found.setdefault(m.group(1), m.group(2))
    return found

