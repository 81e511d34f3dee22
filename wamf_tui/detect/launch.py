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

import html
import posixpath
import re
import shlex
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from pathlib import Path

from ..model import LaunchCommand
from ..read.launch import NPROC
from ..read.systems.modules import LOADED, not_here

DOCS = (".md", ".rst", ".txt")
_PYTHON = re.compile(r"python[\d.]*")
_ASSIGN = re.compile(r"^\s*(?:export\s+)?([A-Za-z_]\w*)=(.*)$")
_DEFAULT = re.compile(r"\$\{(\w+)(:?)[-=]([^}]*)\}")  # `${A:-d}`: d when A is unset or empty; `${A-d}`: unset
_VAR = re.compile(r"\$\{(\w+)\}|\$(\w+)")
_ARRAY = re.compile(r"^\s*(?:export\s+)?([A-Za-z_]\w*)(\+?)=\((.*)$")  # `ARGS=(`, `ARGS+=(--fp16)`
_ARRAY_USE = re.compile(r"\"?\$\{(\w+)\[[@*]\]\}\"?")  # `${ARGS[@]}`, `"${ARGS[@]}"`: its words
# What a README leaves for its reader to fill: `<your_path>`, `<output dir>`, `[imagenet folder]`, `{step}`,
# `path/to/images`.
_PLACEHOLDER = re.compile(r"<[^\s<>=()$&|;\d][^<>\n]*>|\[[A-Za-z][^\[\]\n]*\s[^\[\]\n]*\]|(?<!\$)\{[A-Za-z_]\w*\}"
                          r"|(?<![\w/.~-])/?(?i:path)/to/[^\s'\"]*"  # `--data_dir path/to/images`
                          r"|\b(?i:your)[ _-][A-Za-z][^\"'()<>\n]*")  # `"('your device id')"`, `your_data_dir`
_OPTS_KEY = re.compile(r"[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*")  # a yacs-style `KEY VALUE` opts key: `MODEL.DEVICE_ID`
_ALL_ARGS = re.compile(r"""(["']?)\$\{?[@*]\}?\1""")
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
NNODES = ("--nnodes", "--num_machines", "--num_nodes", "-N", "--nodes")
_ROOT = "\0root/"  # stands for the repo root in a path; no file name holds a NUL
WRAPPERS = ("exec", "time", "nohup", "env", "command", "stdbuf")
_REDIRECT = re.compile(r"\d?(>>?|<)|&>>?|\d?>&\d")  # `>`, `2>>`, `&>`, `<`, `2>&1`, alone
_REDIRECT_ATTACHED = re.compile(r"(\d?>>?|&>>?|<)[^\s=]")  # `>log`, `2>/dev/null`, `&>out.txt`; not `>=1.0`
# launchers whose parser takes the script's arguments as a remainder and drops a `--` before them: the
# script never sees it (python itself passes it on, and the script's argparse then takes all as positionals)
_CONSUMES_SEPARATOR = ("torchrun", "launch", "deepspeed", "composer")


def commands_in(name: str, text: str) -> list[tuple[int, str]]:
    """(line, command) for every command line of a file: continuation lines joined; in docs only
    code blocks (fenced, indented `::` blocks in reStructuredText) and `$ ` lines."""
    doc = name.lower().endswith(DOCS)
    rst = name.lower().endswith(".rst")
    make = name.endswith("Makefile") or name.endswith(".mk")
    in_block, in_pre = not doc, False
    kept: list[tuple[int, str]] = []
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if doc and (s.startswith("```") or s.startswith("~~~")):
            in_block = not in_block
            kept.append((n, ""))  # a fence ends a command whose last line ends in a stray backslash
            continue
        if doc and (in_pre or "<pre" in s.lower()):  # `<pre>python -m torch.distributed.run ... </pre>`: HTML's
            opened, closed = "<pre" in s.lower(), "</pre" in s.lower()  # code block, its text HTML-escaped
            s = html.unescape(_PRE.sub("", s)).strip()
            in_pre = (in_pre or opened) and not closed
            if s:
                kept.append((n, s))
            if closed:
                kept.append((n, ""))
            continue
        if rst:
            in_block = line.startswith(("   ", "\t")) or s.startswith(".. code")
        if not in_block and not (doc and s.startswith("$ ")):
            continue
        if make:
            if not line.startswith("\t"):
                continue
            if not (kept and kept[-1][1].endswith("\\")):  # a recipe's `@`/`-`, not a continued line's `--flag`
                s = s.lstrip("@-")
        s = s[2:] if s.startswith("$ ") else s
        s = s.lstrip(">").strip()
        if doc and kept and _FLAG_LINE.match(s) and _runs_on(*kept[-1], n):
            kept[-1] = (kept[-1][0], kept[-1][1] + " \\")
        kept.append((n, s))
    return _arrays([(n, c) for n, c in _joined(kept) if c and not c.startswith("#")
                    and not (doc and _ELIDED.search(c))])


_ELIDED = re.compile(r"(?:^|\s)(?:\.\.\.|…)(?=\s|$)")  # `train.py ... --lr 1`: a sketch, the rest left out


_FLAG_LINE = re.compile(r"--?[A-Za-z]")
_PRE = re.compile(r"</?(?:pre|code)\b[^>]*>", re.I)


def _runs_on(n: int, previous: str, line: int) -> bool:
    """Whether a docs line that is only flags goes on the command above it, written a flag a line with no
    backslashes (a guide that says to join the lines): the line just before, a command, not a comment."""
    return n == line - 1 and bool(previous) and not previous.startswith("#") and not previous.endswith("\\")


def _arrays(commands: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """A shell array written over several lines (`ARGS=(`, a flag a line, `)`) as one command, its lines
    kept apart so a comment on one ends there."""
    out: list[tuple[int, str]] = []
    open_: list[str] | None = None
    for n, c in commands:
        if open_ is not None:
            open_.append(c)
            if _closes(c):
                out[-1] = (out[-1][0], "\n".join(open_))
                open_ = None
            continue
        out.append((n, c))
        m = _ARRAY.match(c)
        if m is not None and not _closes(m.group(3)):
            open_ = [c]
    if open_ is not None:
        out[-1] = (out[-1][0], "\n".join(open_))
    return out


def _closes(line: str) -> bool:
    """Whether an array's line ends it (`)`, not one inside a comment or quotes)."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return False
    return bool(words) and words[-1].endswith(")")


def _joined(lines: Iterable[tuple[int, str]], starts: Callable[[str], bool] = bool) -> Iterator[tuple[int, str]]:
    """(first line, command) with `\\` continuation lines joined; a command begins only on a line
    `starts` accepts, and goes on over any line while it ends in a backslash."""
    buf, start = "", 0
    for n, s in lines:
        if buf and _restarts(buf, s):  # a doc's two commands glued by a stray backslash: the first ends here
            yield start, buf
            buf = ""
        if not buf and not starts(s):
            continue
        if not buf:
            start = n
        if s.endswith("\\"):
            buf += s[:-1] + " "
            continue
        yield start, buf + s
        buf = ""


_LAUNCHERS = ("python", "python3", "torchrun", "accelerate", "deepspeed")


def _restarts(buf: str, line: str) -> bool:
    r"""Whether a continuation line begins a new command: a launcher word after the joined text has already
    named its script (`torchrun ... train.py \` then `python train.py \`); `srun ... \` then `python x.py`
    is one command, its script still to come."""
    first = line.split(" ", 1)[0]
    return first in _LAUNCHERS and any(w.endswith(".py") for w in buf.split())


# Blank and comment lines, then the docstring. Each line break is matched only by `\n` (with `\s*` a run of
# blank lines could be split in exponentially many ways: a file of blank lines never finished).
_DOCSTRING = re.compile(r"""\A(?:[ \t\f]*(?:#[^\n]*)?\r?\n)*[ \t\f]*[rRuU]?(\"\"\"|\'\'\')(.*?)\1""", re.S)
_LAUNCH_WORD = re.compile(r"(?:[A-Za-z_]\w*=\S+\s+)*"
                          r"(?:python[\d.]*|torchrun|accelerate|deepspeed|srun|mpirun|mpiexec)\s")


def docstring_commands(text: str) -> list[tuple[int, str]]:
    """(line, command) for the commands a script's own docstring shows (`$ torchrun ... train.py`,
    `Usage: python train.py --config x.yaml`): a job with no README says how it runs here. A usage
    synopsis (`[options]`, `...`) is not a command."""
    m = _DOCSTRING.match(text)
    if not m:
        return []
    first = text[:m.start(2)].count("\n") + 1
    lines = ((n, re.sub(r"^(?:\$|>>>|usage:)\s*", "", line.strip(), flags=re.I))
             for n, line in enumerate(m.group(2).splitlines(), first))
    return [(n, c) for n, c in _joined(lines, lambda s: bool(_LAUNCH_WORD.match(s + " ")))
            if "..." not in c and not re.search(r"\[-?\w*\]", c)]


def shell_defaults(text: str, known: Mapping[str, str] | None = None) -> dict[str, str]:
    """Variables a shell script sets before its commands: `A=1`, `export A=x`, `A=${A:-8}` (its default), and
    arrays (`ARGS=(` over lines `)`, `ARGS+=(--fp16)`), kept under `ARGS[@]` as their words, shell-quoted.
    `known`: what earlier commands set (an array `+=` extends)."""
    found: dict[str, str] = {}
    earlier = known or {}
    array: tuple[str, list[str]] | None = None  # an array being read, over several lines
    for line in text.splitlines():
        a = _ARRAY.match(line) if array is None else None
        if a is not None:
            name = f"{a.group(1)}[@]"
            array = (a.group(1), shlex.split(found.get(name, earlier.get(name, ""))) if a.group(2) else [])
            line = a.group(3)
        if array is not None:
            try:
                words = shlex.split(line, comments=True)
            except ValueError:
                array = None
                continue
            closed = _closes(line)
            if closed:
                words[-1] = words[-1][:-1]
            for w in words:
                use = _ARRAY_USE.fullmatch(w)
                if use is not None:  # `("${OTHER[@]}")`: another array's elements
                    array[1].extend(shlex.split(found.get(f"{use.group(1)}[@]", earlier.get(f"{use.group(1)}[@]", ""))))
                elif w:
                    array[1].append(_expand(w, {**earlier, **found})[0])
            if closed:
                found[f"{array[0]}[@]"] = " ".join(shlex.quote(w) for w in array[1])
                array = None
            continue
        m = _ASSIGN.match(line)
        if not m:
            continue
        value = m.group(2).strip()
        try:
            words = shlex.split(value, comments=True)
        except ValueError:
            continue
        if len(words) != 1:
            continue
        found[m.group(1)] = _expand(words[0], {**earlier, **found})[0]
    return found


class Branches:
    """Which branch of a script's `if`/`elif`/`else` runs, read from the variables known there: a test of
    `-z`, `-n`, `==`, `=`, `!=`, `-eq` or `-ne` on known values decides it, joined by `&&`, `||` and `!`.
    A branch that cannot run is skipped (run_train.sh's `if [ -n "$COMM_MODE" ]` debug launch, with
    COMM_MODE empty); one that cannot be decided is read as before, both ways."""

    def __init__(self) -> None:
        self._open: list[tuple[bool | None, bool]] = []  # per `if`: (this branch runs, an earlier one surely ran)

    def read(self, command: str, known: Mapping[str, str]) -> bool:
        """Whether `command` runs (False too for the `if` lines themselves), updating the branches."""
        head, _, cond = command.strip().partition(" ")
        cond = re.sub(r";?\s*then\s*$", "", cond)
        if head == "if" and not re.search(r"\bfi\s*$", command):
            runs = _test(cond, known)  # inside a branch that cannot run, the outer one decides
            self._open.append((runs, runs is True))
        elif head in ("elif", "else") and self._open:
            _, ran = self._open[-1]
            runs = False if ran else _test(cond, known) if head == "elif" else True  # True: read, as None is
            self._open[-1] = (runs, ran or runs is True and head == "elif")
        elif head == "fi" and self._open:
            self._open.pop()
        elif head in ("then", "do", "done"):
            pass
        else:
            return self._live()
        return False

    def _live(self) -> bool:
        return all(runs is not False for runs, _ in self._open)


def _test(cond: str, known: Mapping[str, str]) -> bool | None:
    """A shell condition's value, or None when it cannot be told from the text."""
    result: bool | None = True
    op = "&&"
    for part in re.split(r"\s*(&&|\|\|)\s*", cond.strip()):
        if part in ("&&", "||"):
            op = part
            continue
        value = _one_test(part, known)
        if op == "&&":
            result = False if False in (result, value) else None if None in (result, value) else True
        else:
            result = True if True in (result, value) else None if None in (result, value) else False
    return result


def _one_test(test: str, known: Mapping[str, str]) -> bool | None:
    try:
        words = shlex.split(test)
    except ValueError:
        return None
    negate = bool(words) and words[0] == "!"
    words = words[1:] if negate else words
    if len(words) < 3 or (words[0], words[-1]) not in (("[", "]"), ("[[", "]]")):
        return None
    values = []
    for w in words[1:-1]:
        value, missing = _expand(w, known)
        if missing or "$" in value:
            return None
        values.append(value)
    if len(values) == 2 and values[0] in ("-z", "-n"):
        result = (values[1] == "") == (values[0] == "-z")
    elif len(values) == 3 and values[1] in ("=", "==", "!="):
        result = (values[0] == values[2]) == (values[1] != "!=")
    elif len(values) == 3 and values[1] in ("-eq", "-ne") and all(re.fullmatch(r"-?\d+", v) for v in values[::2]):
        result = (int(values[0]) == int(values[2])) == (values[1] == "-eq")
    else:
        return None
    return result != negate


def _expand(word: str, known: Mapping[str, str], line: bool = False) -> tuple[str, list[str]]:
    """`word` with `${A:-d}` and known `$A` filled in; the names still unresolved. With `line` (a whole
    command line, split into words afterwards) a value stands as one word where the variable is part of
    one (`--out=$OUT_DIR`, `"$X"`), and splits where it stands alone (`$FLAGS`)."""
    def default(m: re.Match[str]) -> str:  # `${A:-d}`: d when A is unset or empty; `${A-d}`: when unset
        value = known.get(m.group(1))
        return (value or m.group(3)) if m.group(2) else (m.group(3) if value is None else value)

    word = _DEFAULT.sub(default, word)
    if line:  # an array's words, each one word whether the use is quoted or not
        word = _ARRAY_USE.sub(lambda m: _array_words(m, known), word)
    missing: list[str] = []

    def var(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if name not in known:
            missing.append(name)
            return m.group(0)
        value = known[name]
        if not line or _quoted(word, m.start()):
            return value
        alone = (m.start() == 0 or word[m.start() - 1].isspace()) and (
            m.end() == len(word) or word[m.end()].isspace())
        return value if alone else shlex.quote(value)

    return _VAR.sub(var, word), missing


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
        whole = _alone(command, m)  # `--model="<path to the model>"`, `"('your device id')"`: a hole
        if _quoted(command, m.start()) and not whole:  # `--prompt "a photo of <new1> cat"` is a value
            return m.group(0)
        name = f"WAMF_HOLE_{len(holes)}"
        holes[name] = m.group(0)
        return "${" + name + "}"

    text = _PLACEHOLDER.sub(hole, command)
    text = _ALL_ARGS.sub(lambda _: f" {known.get('@', '')} ", text)  # `"$@"`: what the script's caller passed
    text = _SCRIPT_DIR.sub(_ROOT + (where or "."), text)  # the script's own folder, from the root
    cwd: str | None = None
    for segment in re.split(r"\s*(?:&&|;|\|\|)\s*", text):
        segment, _ = _expand(segment, known, line=True)  # as a reader means it: `$FLAGS` may hold several words
        try:
            words = shlex.split(segment, comments=True)
        except ValueError:
            return None
        if len(words) >= 2 and words[0] == "cd":
            target, _ = _expand(words[1], known)
            if target.startswith(_ROOT):
                cwd = posixpath.normpath(target[len(_ROOT):])
            else:
                cwd = posixpath.normpath(posixpath.join(where if cwd is None else cwd, target))
            continue
        if len(words) >= 1 and _ASSIGN.match(segment) and len(words) == 1:
            name, _, value = words[0].partition("=")
            known[name] = _expand(value, known)[0]
            continue
        launch = _parse_words(_unredirected(words), known, consoles or {})
        if launch is None or any(w in ("-h", "--help") for w in launch.args):  # prints the flags, runs nothing
            continue
        launch.unresolved = [holes.get(u, u) for u in launch.unresolved]
        if _EXAMPLE.fullmatch(source):  # the repo's own example, not the user's line nor their queued job
            _inputs_elsewhere(launch)
        launch.left_out = [re.sub(r"\$\{(WAMF_HOLE_\d+)\}", lambda m: holes[m.group(1)], x) for x in launch.left_out]
        launch.source = source
        return _place(launch, where, cwd, exists)
    return None


_EXAMPLE = re.compile(r".+:\d+")  # a command's source in the repo: `README.md:12`, `scripts/train.sh:3`
_INPUT_NAME = re.compile(r"data|train|val|image|img|coco|imagenet|corpus|audio|video|input|weights|pretrain", re.I)
_OUTPUT_NAME = re.compile(r"out|save|log|ckpt|checkpoint|result|dump|cache", re.I)


def _inputs_elsewhere(launch: LaunchCommand) -> None:
    """An example's input path that is not on this machine (open_clip's `--train-data /data/cc12m/...`, a
    README's `--data=~/datasets/ffhq.zip`) is the authors': left out and said, for the user's own."""
    args, i = launch.args, 0
    while i < len(args):
        name, eq, value = args[i].partition("=")
        pair = not eq and i + 1 < len(args) and not args[i + 1].startswith("-")
        value = value if eq else args[i + 1] if pair else ""
        if name.startswith("-") and value.startswith(("/", "~")) and not_here(value, Path("/")) and (
                LOADED.search(value) or _INPUT_NAME.search(name) and not _OUTPUT_NAME.search(name)):
            launch.left_out.append(f"{name} {value}")
            launch.unresolved.append(value)
            del args[i:i + (2 if pair else 1)]
            continue
        i += 1


def _array_words(m: re.Match[str], known: Mapping[str, str]) -> str:
    """An array's use, shell-quoted: `"${A[@]}"` gives each element as one word, a bare `${A[@]}` splits
    each on spaces (an element `"--fp8-format hybrid"` is then two words, as the shell passes it)."""
    value = known.get(f"{m.group(1)}[@]")
    if value is None:
        return m.group(0)
    if m.group(0).startswith('"'):
        return value
    return " ".join(shlex.quote(w) for element in shlex.split(value) for w in element.split())


def script_call(command: str, known: Mapping[str, str]) -> tuple[str, dict[str, str]] | None:
    """`MODULE=llama3 CONFIG=llama3_8b ./run_train.sh --compile.enable` (or `bash x.sh a b`): the shell script
    it runs, and what that script then knows: the variables set before it, its `$1`... and its `$@`."""
    if ".sh" not in command and ".bash" not in command:  # most commands: no shlex for them
        return None
    segment = re.split(r"\s*(?:&&|;|\|\|?)\s*", command)[0]
    try:
        words = shlex.split(_expand(segment, known, line=True)[0], comments=True)
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
    return posixpath.normpath(words[0]), {**env, **positional, "@": " ".join(shlex.quote(a) for a in args)}


def _alone(text: str, m: re.Match[str]) -> bool:
    """Whether a placeholder is all of its quoted word but for brackets and quotes (`"('your path')"`)."""
    left = len(text[:m.start()]) - len(text[:m.start()].rstrip("(['\""))
    right = len(text[m.end():]) - len(text[m.end():].lstrip(")]'\""))
    before, after = text[m.start() - left:m.start()], text[m.end():m.end() + right]
    return bool(before) and before[0] in "'\"" and after.endswith(before[0])


def _quoted(text: str, pos: int) -> bool:
    """Whether `pos` in a shell command lies inside quotes."""
    quote = ""
    escaped = False
    for ch in text[:pos]:
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
    return bool(quote)


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
        word, missing = _expand(words[i], known)
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
            word, missing = _expand(words[i], known)
            unresolved += missing
            start = len(prefix)
            prefix.append(word)
            i += 1
            if opt in ("-m", "--module", "--module_mode") and kind in ("torchrun", "accelerate launch", "deepspeed",
                                                                     "composer"):
                prefix.pop()  # the entry's own words say it: `format_command` writes them back
                if i < len(words):
                    module = _expand(words[i], known)[0]
                    i += 1
                break
            takes_value = not eq and opt not in _SWITCHES.get(kind, ()) and i < len(words) and (
                not words[i].endswith(".py") and not _is_launcher(words[i]) and not words[i].startswith("-"))
            if takes_value:
                val, more = _expand(words[i], known)
                unresolved += more
                missing += more
                prefix.append(val)
                i += 1
            if missing:  # an option whose value the file never gives is left out, not pasted in
                del prefix[start:]
                continue
            val = _expand(val, known)[0]
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
        script, missing = _expand(words[i], known)
        unresolved += missing
        if not script.endswith(".py"):
            return None
        i += 1
    args: list[str] = []
    left_out: list[str] = []
    for w in words[i:]:  # a word the file never sets is left out, with the option it is the value of
        value, missing = _expand(w, known)
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
    env = [_expand(e, known)[0] for e in env]
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


def _is_launcher(word: str) -> bool:
    name = Path(word).name
    return name in ("srun", "mpirun", "mpiexec", "torchrun", "deepspeed", "accelerate", "composer") or bool(
        _PYTHON.fullmatch(name))


def _place(launch: LaunchCommand, where: str, cwd: str | None, exists: Callable[[str], bool] | None) -> LaunchCommand:
    """Pick the folder the command is written for and the entry's path from the repo root."""
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
    if exists is not None:
        for folder in folders:
            for cand in cands:
                path = posixpath.normpath(posixpath.join(folder, cand))
                if not path.startswith("../") and exists(path):
                    launch.path, chosen = path, folder
                    break
            if launch.path:
                break
    launch.cwd = "" if chosen in ("", ".") else chosen
    launch.command = format_command(launch)
    return launch


_CONFIG_FILE = re.compile(r"(?!/|~|\$)[\w./-]+\.(?:ya?ml|json|toml|cfg|ini)")  # one the repo itself would hold


def absent_configs(launch: LaunchCommand, listed: Container[str], names: Container[str]) -> list[str]:
    """The config files a command names that the repo holds nowhere: not at that path from its folder, nor
    under that name anywhere in `names` (yolov5's `--data coco.yaml` is found in data/ by the job itself)."""
    return [v for v in (w.split("=", 1)[-1] for w in launch.args) if _CONFIG_FILE.fullmatch(v)
            and posixpath.normpath(posixpath.join(launch.cwd, v)) not in listed and v.rsplit("/", 1)[-1] not in names]


def format_command(launch: LaunchCommand, args: list[str] | None = None, entry_words: list[str] | None = None) -> str:
    """The command as typed from the repo root: `cd` to its folder, variables, launcher, entry, arguments."""
    if entry_words is None:
        flag = "--module" if launch.launcher.startswith("deepspeed") else "-m"
        entry_words = [flag, launch.module] if launch.module else ([launch.script] if launch.script else [])
    words = [*launch.env, *launch.prefix, *entry_words, *(launch.args if args is None else args)]
    cmd = " ".join(_shell_word(w) for w in words)
    return f"cd {shlex.quote(launch.cwd)} && {cmd}" if launch.cwd else cmd


_HYDRA_DELETE = re.compile(r"~[A-Za-z_][\w.]*(?:=[\w.:+-]*)?")


def _shell_word(word: str) -> str:
    """A word as the shell must get it. Hydra's deletion `~callbacks.model_checkpoint` stays bare, as its docs
    write it: bash expands `~name` only when a user of that exact name exists, and no user is named
    `callbacks.model_checkpoint`."""
    return word if _HYDRA_DELETE.fullmatch(word) else shlex.quote(word)


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

