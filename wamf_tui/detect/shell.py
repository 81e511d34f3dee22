"""Commands as a shell script or a doc holds them: a doc's code blocks and `$ ` lines, continued lines
joined, arrays and variables expanded as a reader typing the file top-down has them, and the branches a
script takes. Read, never run."""

from __future__ import annotations

import html
import re
import shlex
from collections.abc import Callable, Iterable, Iterator, Mapping

DOCS = (".md", ".rst", ".txt")


ASSIGN = re.compile(r"^\s*(?:export\s+)?([A-Za-z_]\w*)=(.*)$")


_DEFAULT = re.compile(r"\$\{(\w+)(:?)[-=]([^}]*)\}")  # `${A:-d}`: d when A is unset or empty; `${A-d}`: unset


_VAR = re.compile(r"\$\{(\w+)\}|\$(\w+)")


_ARRAY = re.compile(r"^\s*(?:export\s+)?([A-Za-z_]\w*)(\+?)=\((.*)$")  # `ARGS=(`, `ARGS+=(--fp16)`


_HEREDOC_READ = re.compile(r"""^\s*read\s+(?:-\w+\s+(?:''\s+|""\s+)?)*([A-Za-z_]\w*)\s*<<-?\s*['"]?(\w+)['"]?\s*$""")
_ARRAY_USE = re.compile(r"\"?\$\{(\w+)\[[@*]\]\}\"?")  # `${ARGS[@]}`, `"${ARGS[@]}"`: its words


def commands_in(name: str, text: str) -> list[tuple[int, str]]:
    """(line, command) for every command line of a file: continuation lines joined; in docs only
    code blocks (fenced, indented `::` blocks in reStructuredText) and `$ ` lines."""
    doc = name.lower().endswith(DOCS)
    rst = name.lower().endswith(".rst")
    make = name.endswith("Makefile") or name.endswith(".mk")
    in_block, in_pre = not doc, False
    kept: list[tuple[int, str]] = []
    here: tuple[int, str, str, list[str]] | None = None  # a here-document read into a variable: line, name, end
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if here is not None:  # `read -r -d '' CMD <<EOF` ... `EOF`: `CMD='its lines'`, continuations joined
            if s == here[2]:
                joined = re.sub(r"[ \t]*\\?\n[ \t]*", " ", "\n".join(here[3])).strip()
                kept.append((here[0], f"{here[1]}={shlex.quote(joined)}"))
                here = None
            else:
                here[3].append(line)
            continue
        if not doc and (h := _HEREDOC_READ.match(line)) is not None:
            here = (n, h.group(1), h.group(2), [])
            continue
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
        if not in_block and not (doc and (s.startswith("$ ") or _QUOTED_COMMAND.match(s))):
            continue  # a doc's command: in a code block, after a `$ ` prompt, or quoted (`> python train.py`)
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


# a markdown quote that is a command (`> python -m torch.distributed.launch ... train.py`), not prose
_QUOTED_COMMAND = re.compile(r">\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:python3?|torchrun|accelerate|deepspeed|bash|sh"
                             r"|srun|\./[\w./-]+)\s")
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


_COMMENTED = re.compile(r"^[ \t]*#[ \t]*(?:\$[ \t]*)?(" + _LAUNCH_WORD.pattern.replace(r"\s", r"[ \t]") + r".*)$",
                        re.M)


def comment_commands(text: str, name: str) -> list[tuple[int, str]]:
    """(line, command) for the launches a script's comments show for itself (`# torchrun --standalone
    --nproc_per_node=8 train_gpt2.py`): how its author starts it, where there is no docstring to say so. Only
    a command that names the script's own file; not a synopsis."""
    if name not in text:  # most files never name themselves: the scan over every line is skipped
        return []
    own = re.compile(rf"(?:^|[\s/]){re.escape(name)}(?=\s|$)")
    return [(text.count("\n", 0, m.start()) + 1, m.group(1).strip()) for m in _COMMENTED.finditer(text)
            if own.search(m.group(1)) and "..." not in m.group(1) and not re.search(r"\[-?\w*\]|\[--?\w", m.group(1))]


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
                    array[1].append(expand(w, {**earlier, **found})[0])
            if closed:
                found[f"{array[0]}[@]"] = " ".join(shlex.quote(w) for w in array[1])
                array = None
            continue
        m = ASSIGN.match(line)
        if not m:
            continue
        value = m.group(2).strip()
        try:
            words = shlex.split(value, comments=True)
        except ValueError:
            continue
        if len(words) != 1:
            continue
        found[m.group(1)] = expand(words[0], {**earlier, **found})[0]
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
        value, missing = expand(w, known)
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


def expand(word: str, known: Mapping[str, str], line: bool = False) -> tuple[str, list[str]]:
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
        if not line or quoted(word, m.start()):
            return value
        alone = (m.start() == 0 or word[m.start() - 1].isspace()) and (
            m.end() == len(word) or word[m.end()].isspace())
        return value if alone else shlex.quote(value)

    return _VAR.sub(var, word), missing


def _array_words(m: re.Match[str], known: Mapping[str, str]) -> str:
    """An array's use, shell-quoted: `"${A[@]}"` gives each element as one word, a bare `${A[@]}` splits
    each on spaces (an element `"--fp8-format hybrid"` is then two words, as the shell passes it)."""
    value = known.get(f"{m.group(1)}[@]")
    if value is None:
        return m.group(0)
    if m.group(0).startswith('"'):
        return value
    return " ".join(shlex.quote(w) for element in shlex.split(value) for w in element.split())


def quoted(text: str, pos: int) -> bool:
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
