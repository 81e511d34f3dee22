"""Which of the repo's functions the job can reach, read from source: a save or an eval in a function
nothing on the job's path calls is not the benchmark's to switch off, and listing it is noise.

The walk is by name, and errs toward reaching: module-level code runs at import; a function is reached
when its name is used (called, passed, looked up) by reached code: a bare name means the module's own
function of that name when it has one, else any module's; `x.name` and a string reach every function and
method so named, whatever `x` is (a class built from a config is never named in code). A reached class
whose bases are not all the repo's own hands every method to its base (a framework calls its hooks); one
built only on the repo's classes reaches its dunders and what is called by name.

A save inside a save (the checkpointer's `torch.save` under the job's `save_checkpoint(...)`) is folded
into the outer one's row: `_fold_nested_saves`.

The same calls say when a helper's save runs (`lift_to_callers`: at each call, under its condition) and
what comes after training (`train_calls`: the calls of the function the training loop is in).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..model import Analysis, Fact, Span
from .needs import main_block
from .step import name_of
from .switches import switch_off

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*\Z")
_PLAIN_BASES = frozenset({"object", "ABC", "Generic", "Protocol", "NamedTuple", "Enum", "IntEnum", "TypedDict"})


@dataclass
class Def:
    file: str
    name: str
    start: int
    end: int
    refs: set[str]
    owner: str | None = None  # the class a method belongs to


@dataclass
class Klass:
    file: str
    name: str
    bases: list[str]
    refs: set[str]  # its bases, decorators and body outside its methods: what building it uses


@dataclass
class ModuleDefs:
    file: str
    top: set[str] = field(default_factory=set)  # names its module-level code uses: run at import
    main: tuple[int, int] | None = None  # an imported module's `if __name__ == "__main__":` block: never run
    defs: list[Def] = field(default_factory=list)
    classes: list[Klass] = field(default_factory=list)
    loops: list[tuple[int, int]] = field(default_factory=list)  # (first, last line) of each for / while
    decorated: dict[int, Def] = field(default_factory=dict)  # a decorator's line -> the function it wraps
    _owner: list[Def | None] | None = field(default=None, repr=False)  # line -> its innermost function

    def unrun(self, line: int) -> bool:
        return self.main is not None and self.main[0] <= line <= self.main[1]

    def innermost(self, line: int) -> Def | None:
        """The function a line is in (the innermost, for nested ones), from a table built once: a fact
        each in thousands of functions is looked up in constant time, not by a scan of them all."""
        if self._owner is None:
            self._owner = [None] * (max((d.end for d in self.defs), default=0) + 2)
            for d in sorted(self.defs, key=lambda d: d.end - d.start, reverse=True):  # inner ones written last
                self._owner[d.start:d.end + 1] = [d] * (d.end - d.start + 1)
        return self._owner[line] if 0 <= line < len(self._owner) else None


def summarize(tree: ast.Module, file: str, entry: bool) -> ModuleDefs:
    """The module's functions and classes, each with the names its own code uses. An imported module's
    `if __name__ == "__main__":` block does not run: the names it uses are not the job's."""
    out = ModuleDefs(file)
    body = tree.body if entry else [s for s in tree.body if not main_block(s)]
    guard = next((s for s in tree.body if main_block(s)), None) if not entry else None
    if guard is not None:
        out.main = (guard.lineno, guard.end_lineno or guard.lineno)
    out.top = _body_refs(body, out, None)
    own = {d.name for d in out.defs if d.owner is None} | {c.name for c in out.classes}
    for refs in (out.top, *(d.refs for d in out.defs), *(c.refs for c in out.classes)):
        local = {n for n in refs if n in own}
        refs -= local
        refs |= {f"{file}:{n}" for n in local}
    return out


def _body_refs(body: list[ast.stmt], out: ModuleDefs, owner: str | None) -> set[str]:
    """Names `body` uses when it runs; the functions and classes it defines are recorded, not entered.
    A plain loop over each node's fields, not ast.walk: a walk per module costs a third of its parse."""
    refs: set[str] = set()
    add = refs.add
    stack: list[Any] = list(body)  # nodes of any kind: their fields are read by kind, unchecked
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        kind = type(node)
        if kind is ast.Name:
            add(node.id)
            continue
        if kind is ast.Attribute:
            add("." + node.attr)
            push(node.value)
            continue
        if kind is ast.Constant:
            value = node.value
            if type(value) is str and _IDENTIFIER.match(value):
                add("." + value)  # getattr(self, "save"), a hook named in a string
            continue
        if kind is ast.For or kind is ast.While or kind is ast.AsyncFor:
            out.loops.append((node.lineno, node.end_lineno or node.lineno))
        if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            _define(node, out, owner, stack)
            continue
        if kind is ast.ClassDef:
            _define_class(node, out, stack)
            continue
        for name in _FIELDS.get(kind) or _fields(kind):
            value = getattr(node, name, None)
            if type(value) is list:
                stack += [x for x in value if isinstance(x, ast.AST)]
            elif isinstance(value, ast.AST):
                push(value)
    return refs


_FIELDS: dict[type, tuple[str, ...]] = {}
_NO_NAMES = frozenset({"ctx", "op", "ops", "type_comment", "kind", "conversion", "level", "module", "names",
                       "kwd_attrs", "arg", "id", "attr", "name", "is_async", "simple", "type_ignores"})


def _fields(kind: Any) -> tuple[str, ...]:
    """The fields of a node kind that may hold names (not its operator, context or plain strings)."""
    fields = _FIELDS[kind] = tuple(f for f in kind._fields if f not in _NO_NAMES)
    return fields


def _define(node: ast.FunctionDef | ast.AsyncFunctionDef, out: ModuleDefs, owner: str | None,
            stack: list[Any]) -> None:
    """Record a function; its decorators and defaults run where it is defined."""
    stack += [*node.decorator_list, *node.args.defaults, *(d for d in node.args.kw_defaults if d)]
    made = Def(out.file, node.name, node.lineno, node.end_lineno or node.lineno, _body_refs(node.body, out, None),
               owner)
    out.defs.append(made)
    for d in node.decorator_list:
        out.decorated.update(dict.fromkeys(range(d.lineno, (d.end_lineno or d.lineno) + 1), made))


def _define_class(node: ast.ClassDef, out: ModuleDefs, stack: list[Any]) -> None:
    stack += [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
    inner = _body_refs(node.body, out, node.name)
    bases = [b.attr if isinstance(b, ast.Attribute) else b.id for b in node.bases
             if isinstance(b, (ast.Name, ast.Attribute))]
    out.classes.append(Klass(out.file, node.name, bases, inner | {"." + b for b in bases}))


def reached(modules: list[ModuleDefs], roots: set[str]) -> set[tuple[str, int]]:
    """(file, first line) of every function the job can reach from module-level code and `roots`."""
    names = {"." + r for r in roots}.union(*(m.top for m in modules))
    defs = [d for m in modules for d in m.defs]
    classes = {c.name: c for m in modules for c in m.classes}
    open_ = {name for name in classes if _open(name, classes, set())}
    live: set[str] = set()  # classes reached
    done: set[tuple[str, int]] = set()
    grew = True
    while grew:
        grew = False
        for c in classes.values():
            if c.name not in live and _named(c.file, c.name, names):
                live.add(c.name)
                names |= c.refs
                grew = True
        for d in defs:
            if (d.file, d.start) in done:
                continue
            if "." + d.name in names or d.owner is None and _named(d.file, d.name, names) \
                    or d.owner in live and (d.owner in open_ or d.name.startswith("__")):
                done.add((d.file, d.start))
                names |= d.refs
                grew = True
    return done


def _named(file: str, name: str, names: set[str]) -> bool:
    """Used by reached code: bare in its own module or in one that imports it, or as `x.name`."""
    return f"{file}:{name}" in names or name in names or "." + name in names


def _open(name: str, classes: dict[str, Klass], seen: set[str]) -> bool:
    """A base outside the repo (a framework's) may call any method; the repo's own bases are looked into."""
    seen.add(name)
    for base in classes[name].bases:
        if base in _PLAIN_BASES or base in seen:
            continue
        if base not in classes or _open(base, classes, seen):
            return True
    return False


def _inside(modules: list[ModuleDefs], live: set[tuple[str, int]]) -> Callable[[str, int], bool]:
    """Whether a line runs: at module level of a module read, or in a function the walk reached."""
    by_file = {m.file: m for m in modules}

    def inside(file: str, line: int) -> bool:
        module = by_file.get(file)
        if module is None:
            return True
        if module.unrun(line):
            return False
        innermost = module.innermost(line)
        return innermost is None or (file, innermost.start) in live

    return inside


def _step_reached(result: Analysis, inside: Callable[[str, int], bool], found: bool = False) -> bool:
    """The walk reached the training step itself (its loss, backward and optimizer step); else it missed a way
    in (a framework, a caller it cannot see), and nothing is left out by it. `found`: a step must be known."""
    step = [a for a in result.anchors if a.role in ("loss", "backward", "optimizer_step")]
    return all(inside(a.file, a.line) for a in step) and (bool(step) or not found)


def drop_unreached(result: Analysis, modules: list[ModuleDefs], roots: set[str]) -> None:
    """Leave out the saves, evals, uploads and trackers in functions the job never reaches, and the output
    folders and seeds of parsers there (another tool's `main()` in a module it imports)."""
    live = reached(modules, roots)
    inside = _inside(modules, live)
    if not _step_reached(result, inside):
        return
    for kind in ("checkpoints", "evals", "uploads", "trackers", "output_dirs", "seeds", "processes",
                 "precision"):
        facts: list[Fact] = getattr(result, kind)
        setattr(result, kind, [f for f in facts if inside(f.file, f.line)])
    _fold_nested_saves(result, modules, roots, live)


def drop_unreached_options(result: Analysis, modules: list[ModuleDefs], roots: set[str]) -> None:
    """Leave out the options declared only in functions the entry never reaches: OpenNMT's train entry shares
    its options module with translate, whose `translate_opts(parser)` declares `--output`. Walked from the
    entry's own code and `roots` alone, not from the names the rest of the repo mentions (`drop_unreached`'s):
    another entry calling `translate_opts` does not put its options in this one's parser. Only for a job whose
    training step the walk reaches: without one it cannot tell a way in it missed."""
    inside = _inside(modules, reached(modules, roots))
    if not _step_reached(result, inside, found=True):
        return
    for flag, sites in result.flag_sites.items():
        if not any(inside(file, int(line)) for file, _, line in (s.rpartition(":") for s in sites)):
            result.flags.pop(flag, None)
            result.off_values.pop(flag, None)


def _fold_nested_saves(result: Analysis, modules: list[ModuleDefs], roots: set[str],
                       live: set[tuple[str, int]]) -> None:
    """A save inside a save (`torch.save` deep in the checkpointer that the job's `save_checkpoint(...)`
    calls) is how that save writes: it runs when, and only when, the outer one does, so the outer one's
    row stands for it; so does an eval a save runs (a post-save hook's evaluation of the checkpoint).
    Found by walking again with the repo's save functions never called (the names of the saves found,
    where the repo defines them, called anywhere): what only they reached goes."""
    defined = {d.name for m in modules for d in m.defs}
    # a call of the repo's own function (`self.save_checkpoint()`, a helper's call), not `torch.save`
    names = {c.name for c in result.checkpoints if "." not in c.name} & defined
    if not names:
        return
    cut = {n for name in names for n in (name, "." + name)} | {f"{m.file}:{name}" for m in modules for name in names}
    trimmed = [ModuleDefs(m.file, m.top - cut, m.main, [Def(d.file, d.name, d.start, d.end, d.refs - cut, d.owner)
                                                        for d in m.defs],
                          [Klass(k.file, k.name, k.bases, k.refs - cut) for k in m.classes]) for m in modules]
    still = reached(trimmed, roots - names)  # a save's name in code read as text only is a call of that save too
    by_file = {m.file: m for m in modules}

    def nested(c: Fact) -> bool:
        where = by_file[c.file].innermost(c.line) if c.file in by_file else None
        return where is not None and (c.file, where.start) in live and (c.file, where.start) not in still

    for c in result.checkpoints:  # `def save_checkpoint(f): if args.skip_model_save: return; torch.save(...)`:
        where = by_file[c.file].innermost(c.line) if c.file in by_file else None  # its calls take that switch
        if where is None or where.name not in names or not nested(c) \
                or not switch_off(c.off_switch, result.flags, result.off_values):
            continue
        for outer in result.checkpoints:
            if outer.name.rsplit(".", 1)[-1] == where.name and not switch_off(outer.off_switch, result.flags,
                                                                               result.off_values):
                outer.off_switch = c.off_switch
    result.checkpoints = [c for c in result.checkpoints if not nested(c)]
    result.evals = [e for e in result.evals if not nested(e)]  # an eval after each save: the save's row


def lift_to_callers(result: Analysis, module: ModuleDefs, sites: dict[str, list[Fact]],
                    far: dict[str, list[Fact]], unrun: Callable[[str, int], bool],
                    fits: list[tuple[str, int]] | None = None) -> None:
    """A save, eval, upload or tracker no setting switches off inside a helper of the module's own (`def
    save(self): ... torch.save(...)`; a class's `__init__`, called as the class) runs when, and only when,
    the helper is called: it is read at each call instead, under that call's conditions (`if step %
    save_interval == 0: self.save()`, `if cfg.enable_tensorboard: TensorBoardLogger(...)`). Where the call is
    itself a fact (a helper named `save_checkpoint`), the calls stand for it and the inner one goes. Not out
    of a function the training step or loop is in (`main()`), nor where no call says more than the inner one.
    A tracker keeps its name (what it is decides how it is switched off); the others take the helper's.
    `far`: the calls of the module's functions and classes from the other modules read (`if args.push_to_hub:
    push_folder_to_hub(...)` in the entry, the upload inside it); `unrun`: whether a file's line never runs;
    `fits`: a library's whole training loop started (`trainer.fit(...)`): where the job trains too."""
    trains = [(a.file, a.line) for a in result.anchors if a.role in ("loss", "backward", "optimizer_step")]
    trains += fits or []
    if result.train_loop is not None:
        trains.append((result.train_loop.file, result.train_loop.start))
    for kind in ("checkpoints", "evals", "uploads", "trackers"):
        facts: list[Fact] = getattr(result, kind)
        out: list[Fact] = []
        seen: set[tuple[str, int]] = set()
        named = {(x.file, x.line) for x in facts}  # a call is never where the fact inside its helper is
        for f in facts:
            calls = _calls_of_helper(f, result, module, sites, far, trains)
            if calls and all((s.file, s.line) in named for s in calls):
                continue  # each call is a save itself (`save_checkpoint(...)`): they stand for this one
            if not any(switch_off(s.off_switch, result.flags, result.off_values)
                       or s.guard and "__name__" not in s.guard and not unrun(s.file, s.line) for s in calls):
                out.append(f)
                continue
            for s in calls:
                if (s.file, s.line) not in named and (s.file, s.line) not in seen:
                    seen.add((s.file, s.line))
                    out.append(s.model_copy(update={"name": f.name}) if kind == "trackers" else s)
        setattr(result, kind, out)


def _calls_of_helper(f: Fact, result: Analysis, module: ModuleDefs, sites: dict[str, list[Fact]],
                     far: dict[str, list[Fact]], trains: list[tuple[str, int]]) -> list[Fact]:
    """The calls, from elsewhere in the module or from another module (of a function or class, not a
    method), of the function `f` sits in, when no setting switches `f` off where it is and that function is
    not where the job trains; else none."""
    if f.file != module.file or switch_off(f.off_switch, result.flags, result.off_values):
        return []
    helper = module.decorated.get(f.line) or module.innermost(f.line)  # `@eval_mode(model)` acts on its calls
    if helper is None or any(file == module.file and helper.start <= line <= helper.end for file, line in trains):
        return []
    called = helper.owner if helper.name == "__init__" and helper.owner else helper.name  # a class is called
    outside = far.get(called, []) if helper.owner is None or helper.name == "__init__" else []
    return [s for s in sites.get(called, []) if not helper.start <= s.line <= helper.end] + outside


def train_calls(result: Analysis, helpers: list[tuple[ModuleDefs, dict[str, list[Fact]]]]) -> list[Span]:
    """Each call of the function the training loop is in, from its module (`train(...)` in `main()`), to
    the end of the calling function: a save after it runs once, when training is done. A call inside a loop
    of the caller (`for epoch in ...: train(...); save(...)`) trains one epoch: what follows it in that loop
    runs at each epoch's end (`loop` set), and only what follows the loop runs once training is done."""
    scope = result.train_scope
    trainer = next((d for m, _ in helpers for d in m.defs if scope and d.file == scope.file and d.start <= scope.start
                    and d.end == scope.end), None) if scope else None
    if trainer is None:
        return []
    out = []
    for module, sites in helpers:
        if module.file != trainer.file:
            continue
        for s in sites.get(trainer.name, []):
            caller = module.innermost(s.line)
            end = caller.end if caller else 10**9
            around = [lp for lp in module.loops if lp[0] < s.line <= lp[1] and (caller is None or caller.start < lp[0])]
            if around:
                epochs = min(around, key=lambda lp: lp[1] - lp[0])  # the innermost loop around the call
                out.append(Span(file=s.file, start=s.line, end=epochs[1], loop=epochs[0]))
                out.append(Span(file=s.file, start=s.line, end=end))  # past the loop: once, after training
            else:
                out.append(Span(file=s.file, start=s.line, end=end))
    return out


def evaluates(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A function that evaluates a model, whatever its name (DomainBed's `misc.accuracy`): it switches one to
    eval mode (`network.eval()`) and runs without gradients (`with torch.no_grad():`, or so decorated), and
    never steps or backpropagates (EDM's `training_loop`, which evaluates its EMA too, trains)."""
    def no_grad(n: ast.AST) -> bool:
        return (n.func.attr if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) else
                n.attr if isinstance(n, ast.Attribute) else "") in ("no_grad", "inference_mode")
    nodes = list(ast.walk(node))
    called = [n.func.attr for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
    to_eval = "eval" in called and not {"backward", "step"} & set(called)
    return to_eval and (any(no_grad(d) for d in node.decorator_list) or any(
        isinstance(n, ast.With | ast.AsyncWith) and any(no_grad(i.context_expr) for i in n.items) for n in nodes))


def evaluating_callback(node: ast.ClassDef) -> bool:
    """A trainer callback of the repo's whose hooks evaluate (ControlNet's `ImageLogger(Callback)`: the model
    put in eval mode and sampled without gradients every n batches): where it is built, an eval is added."""
    return any(name_of(b).endswith("Callback") for b in node.bases) and any(
        isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) and evaluates(f) for f in node.body)


def eval_helper_calls(result: Analysis, helpers: set[tuple[str, str]], calls: dict[tuple[str, str], list[Fact]]
                      ) -> None:
    """Each call of a function that evaluates (`evaluates`), from anywhere read, is an eval where it is
    called, under that call's conditions (`if step % checkpoint_freq == 0: ... misc.accuracy(...)`); each
    build of a callback that evaluates (`evaluating_callback`) where it is built."""
    known = {(e.file, e.line) for e in result.evals}
    for key in sorted(helpers):
        for c in calls.get(key, []):
            if (c.file, c.line) not in known:
                known.add((c.file, c.line))
                result.evals.append(c.model_copy(update={"name": key[1]}))


def reached_effects(a: Analysis) -> Analysis:
    """The job's effects its values let run: one under a condition they make false (`if args.log_wandb:` with
    the flag off) stays in the reading, said as never reached, and gets no row, switch, price or trial claim."""
    return a.model_copy(update={k: [f for f in getattr(a, k) if not f.dead]
                                for k in ("checkpoints", "evals", "uploads", "trackers")})
