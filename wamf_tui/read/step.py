"""The training step and its anchors, from data flow.

Names are not enough: an eval function computes `loss = criterion(out, y)` too, and a
constructor assigns `loss_fn = ...`. The training step is where a backward happens (`loss.backward()`,
`scaler.scale(loss).backward()`, `accelerator.backward(loss)`, `fabric.backward(loss)`,
`self.manual_backward(loss)`), outside evaluation functions and `no_grad` / `inference_mode`
ones. From there: the loss is the value the backward consumes, followed back through scaling
and accumulation to the model or loss call; the forward is the model call that produced it; the
batch is that call's input (that data flow is `step_flow`'s); the optimizer step and the grad-norm clip
are the ones in the same step.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import NamedTuple

from ..model import Anchor
from .nodes import walk
from .step_flow import TRAINED, assigned, made, name_of, own_nodes, trained_names, value_of

QUIET_FUNCTIONS = re.compile(r"(^|_)(eval|evaluate|validate|validation|valid|val|test|estimate_loss|sample|"
                             r"generate|predict|inference|infer)(_|$)|^__init__$", re.I)
NO_GRAD = ("no_grad", "inference_mode", "enable_grad=False")
BACKWARD_BY_ARG = ("backward", "manual_backward")  # accelerator.backward(loss), fabric.backward(loss), ...
IN_PLACE = ("add_", "sub_", "addcdiv_", "copy_")  # `p.data.add_(p.grad, alpha=-lr)`: a hand-written update
CLIPS = ("clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grad_norm_fp32")
ROLES = ("loss", "forward", "batch", "backward", "optimizer_step", "grad_clip")
WARM_UP = re.compile(r"warm_?up", re.I)  # `for step in warmup_steps:`: a kernel warm-up before the real loop
OPTIMIZER_METHODS = re.compile(r"^(step_optimizers?|optimizer_step|optimizers_step)$")  # a trainer's own step


def _quiet_decorator(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(any(q in ast.unparse(d) for q in NO_GRAD) for d in fn.decorator_list)


def _scopes(tree: ast.Module) -> list[ast.AST]:
    """The module and every function in it that is not an evaluation or no-grad one."""
    scopes: list[ast.AST] = [tree]
    for node in walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not QUIET_FUNCTIONS.search(node.name) \
                and not _quiet_decorator(node):
            scopes.append(node)
    return scopes


_LOSS_CALL = re.compile(r"loss|criterion|cross_entropy|nll|mse|bce|kl_div|l1", re.I)
_REDUCE = frozenset({"div", "mul", "mean", "sum", "float", "double"})  # a tensor's own scaling and reductions


def _backward_loss(call: ast.Call) -> ast.expr | None:
    """The loss a backward call consumes, or None when `call` is no backward."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr == "backward" and not call.args:  # loss.backward(), scaler.scale(loss).backward()
        target = func.value
        if isinstance(target, ast.Call):  # a tensor made on the spot (a warm-up `torch.empty(...).backward()`),
            if name_of(target.func).endswith("scale"):  # or a loss computed there (`F.cross_entropy(o, y).backward()`)
                return target.args[0] if target.args else None
            reduced: ast.expr = target  # `loss.div(acc_steps).backward()`, `loss.sum().mul(s).backward()`: the
            while isinstance(reduced, ast.Call) and isinstance(reduced.func, ast.Attribute) \
                    and reduced.func.attr in _REDUCE:  # loss, reduced and scaled
                reduced = reduced.func.value
            if isinstance(reduced, ast.Name):
                return reduced
            return target if _LOSS_CALL.search(name_of(target.func).rsplit(".", 1)[-1]) else None
        return target
    if func.attr in BACKWARD_BY_ARG and call.args:  # accelerator.backward(loss), self.manual_backward(loss)
        return call.args[0]
    if func.attr == "backward" and call.args and not isinstance(call.args[0], ast.Constant):
        return call.args[0]  # a DeepSpeed engine: model_engine.backward(loss)
    return None


def find_step(tree: ast.Module, rel: str, dead: Collection[int] = (), named: Collection[str] = ()
              ) -> list[Anchor] | None:
    """The anchors of the first training step of a module; None when nothing here trains. `dead`: lines the
    job's values never reach (`if args.use_optimizer: optimizer.step()` with the flag off), read past.
    `named`: words of the command; a class of the module they name is read first (DomainBed's `--algorithm
    IGA` builds `algorithms.IGA`, whose own `update` is the step, not the `ERM.update` above it)."""
    token = TRAINED.set(trained_names(tree))
    try:
        return _first_step(tree, rel, dead, named)
    finally:
        TRAINED.reset(token)


def lightning_step(tree: ast.Module, rel: str, dead: Collection[int] = (), named: Collection[str] = ()
                   ) -> list[Anchor] | None:
    """A LightningModule's step: `training_step(self, batch, batch_idx)` returns its loss, and the framework runs
    the backward and the optimizer. The loss, forward and batch behind the first loss it returns (`return loss`,
    `return loss, logs`, `return {"loss": loss}`), read as a backward's; None where no class here has one.
    `named`: what the command or config names (a Hydra `_target_`'s class): that class is read first, with the
    methods it inherits from the module's classes and those it overrides (`return self.shared_step(...)` in the
    base runs the subclass's own `shared_step`)."""
    token = TRAINED.set(trained_names(tree))
    try:
        classes = {c.name: c for c in walk(tree) if isinstance(c, ast.ClassDef)}
        firsts = [classes[n] for n in named if n in classes]
        for cls in dict.fromkeys([*firsts, *classes.values()]):
            methods = _methods(cls, classes)
            step = methods.get("self.training_step")
            if step is None:
                continue
            helpers = {**_helpers(tree, step), **methods}
            for first, ret, loss, scope in _step_returns(step, methods, dead):
                anchors = made(rel, ret, loss, scope.assigns, scope.loops, helpers=helpers)
                if first is not ret:  # read inside a method it hands the batch to: the batch is the step's own
                    anchors = [a if a.role != "batch" else a.model_copy(update={"line": first.lineno})
                               for a in anchors]
                if any(a.role == "loss" for a in anchors):
                    return anchors
        return None
    finally:
        TRAINED.reset(token)


def _methods(cls: ast.ClassDef, classes: Mapping[str, ast.ClassDef]
             ) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """`self.name` -> the method a `cls` object runs: its own, else its bases' in the module (nearest first)."""
    chain: list[ast.ClassDef] = []
    todo = [cls]
    while todo and len(chain) < 8:
        c = todo.pop(0)
        if c not in chain:
            chain.append(c)
            todo += [classes[b.id] for b in c.bases if isinstance(b, ast.Name) and b.id in classes]
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for c in reversed(chain):
        found.update({f"self.{f.name}": f for f in c.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)})
    return found


def _step_returns(step: ast.FunctionDef | ast.AsyncFunctionDef,
                  methods: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef],
                  dead: Collection[int]) -> Iterator[tuple[ast.Return, ast.Return, ast.expr, _Parts]]:
    """Each return of the step (and the return the loss is read at) with the loss it hands back, in order;
    `return self.shared_step(batch, ...)` is read inside the method the object runs (at most two such hops)."""
    parts = _parts(step, dead)
    for ret in sorted((n for n in parts.nodes if isinstance(n, ast.Return) and n.value is not None),
                      key=lambda n: n.lineno):
        loss, at, scope = _returned_loss(ret.value), ret, parts  # type: ignore[arg-type]
        for _ in range(2):
            called = methods.get(name_of(loss.func)) if isinstance(loss, ast.Call) else None
            inner = next((n for n in reversed(own_nodes(called)) if isinstance(n, ast.Return) and n.value is not None),
                         None) if called is not None and called is not step else None
            if called is None or inner is None or (got := _returned_loss(inner.value)) is None:  # type: ignore[arg-type]
                break
            loss, at, scope = got, inner, _parts(called, dead)
        if loss is not None:
            yield ret, at, loss, scope


def _returned_loss(value: ast.expr) -> ast.expr | None:
    """The loss of what a `training_step` returns: the value, a tuple's first item, or a dict's "loss"."""
    if isinstance(value, ast.Tuple) and value.elts:
        return value.elts[0]
    if isinstance(value, ast.Dict):
        return next((v for k, v in zip(value.keys, value.values, strict=True)
                     if isinstance(k, ast.Constant) and k.value == "loss"), None)
    return value if not isinstance(value, ast.Constant) else None


class _Parts(NamedTuple):
    """What the step is read from in one scope: its own nodes past the lines the job's values never reach."""

    nodes: list[ast.AST]
    assigns: list[ast.AST]  # by line
    calls: list[ast.Call]  # by line
    ifs: list[ast.If]
    loops: list[ast.For | ast.AsyncFor]


def _parts(scope: ast.AST, dead: Collection[int]) -> _Parts:
    nodes = [n for n in own_nodes(scope) if getattr(n, "lineno", 0) not in dead]
    return _Parts(nodes,
                  sorted((n for n in nodes if isinstance(n, ast.Assign | ast.AugAssign | ast.AnnAssign)),
                         key=lambda n: n.lineno),  # type: ignore[attr-defined]
                  sorted((n for n in nodes if isinstance(n, ast.Call)), key=lambda n: n.lineno),
                  [n for n in nodes if isinstance(n, ast.If)],
                  [n for n in nodes if isinstance(n, ast.For | ast.AsyncFor)])


def _first_step(tree: ast.Module, rel: str, dead: Collection[int], named: Collection[str] = ()
                ) -> list[Anchor] | None:
    chosen = [f for c in tree.body if isinstance(c, ast.ClassDef) and c.name in named for f in walk(c)
              if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)]
    for scope in [*(s for s in _scopes(tree) if s in chosen), *(s for s in _scopes(tree) if s not in chosen)]:
        nodes, assigns, calls, ifs, loops = _parts(scope, dead)
        backwards = [(call, loss) for call in calls if (loss := _backward_loss(call)) is not None]
        if not backwards:
            continue
        # a warm-up loop that runs the step a few times before the real loop (and resets the state) is not it
        warm = [n for n in nodes if isinstance(n, ast.For | ast.AsyncFor | ast.While)
                and WARM_UP.search(ast.unparse(n.test if isinstance(n, ast.While) else n.iter))]
        real = [(c, x) for c, x in backwards
                if not any(w.lineno <= c.lineno <= (w.end_lineno or w.lineno) for w in warm)]
        # `if scaler is not None: scaler.scale(loss).backward() else: loss.backward()`: fp16's branch is not the
        # default path (bf16 and fp32 runs build no scaler)
        # a probe's backward whose gradients are zeroed before any step (`probe_loss.backward();
        # optimizer.zero_grad()`: "cancel this fake step") is not the step either
        stepped = [b for b in real if not _cancelled(b[0], calls)] or real
        call, loss = next((b for b in stepped if not _fp16_branch(b[0], ifs)),
                          stepped[0] if stepped else backwards[0])
        caller = _caller_of(tree, scope, loss, assigns, dead)
        if caller is None and _handed_in(scope, loss, assigns):
            continue  # `def backward(self, loss): loss.backward()`, called from another module: a wrapper, no step
        anchors = _anchored(rel, call, loss, assigns, calls, ifs, loops, helpers=_helpers(tree, scope))
        if caller is not None:  # `def _backward(_loss): _loss.backward()`: the loss is made where it is called
            site, given, parts, local = caller
            outer = _anchored(rel, site, given, parts.assigns, parts.calls, parts.ifs, parts.loops, local)
            taken = {a.role for a in outer if a.role in ("loss", "forward", "batch")}
            anchors = [a for a in anchors if a.role not in taken] + [a for a in outer if a.role in taken]
        elif isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            anchors = _batch_from_caller(tree, scope, anchors, rel, dead)
        return anchors
    return None


def _batch_from_caller(tree: ast.Module, scope: ast.FunctionDef | ast.AsyncFunctionDef, anchors: list[Anchor],
                       rel: str, dead: Collection[int]) -> list[Anchor]:
    """A step function handed its batch (`update_policy(tracker, policy, batch, ...)`): the batch row moves to
    where the caller takes what it passes (`batch = next(dl_iter)`), the data as the loader gives it."""
    batch = next((a for a in anchors if a.role == "batch"), None)
    try:
        base = ast.parse(batch.text, mode="eval").body if batch is not None else None
    except SyntaxError:
        return anchors
    while isinstance(base, ast.Attribute | ast.Subscript):  # `batch["input_ids"]`
        base = base.value
    params = [a.arg for a in scope.args.args]
    if batch is None or not isinstance(base, ast.Name) or base.id not in params \
            or any(base.id in _target_names(n) for n in own_nodes(scope) if isinstance(n, ast.Assign | ast.AugAssign)
                   and n.lineno < batch.line):
        return anchors
    index = params.index(base.id) - (params[:1] == ["self"])
    inside = range(scope.lineno, (scope.end_lineno or scope.lineno) + 1)
    site = next((n for n in walk(tree) if isinstance(n, ast.Call) and n.lineno not in inside and n.lineno not in dead
                 and (isinstance(n.func, ast.Name) and n.func.id == scope.name
                      or isinstance(n.func, ast.Attribute) and n.func.attr == scope.name)), None)
    if site is None:  # looked for in the whole module once, before any scope's parts are made
        return anchors
    holding = [s for s in _scopes(tree) if s is tree or getattr(s, "lineno", 0) <= site.lineno <= (
        getattr(s, "end_lineno", 0) or 0)]
    outer = max(holding, key=lambda s: getattr(s, "lineno", 0))  # the innermost scope that makes the call
    given = site.args[index] if 0 <= index < len(site.args) and not any(
        isinstance(a, ast.Starred) for a in site.args[:index + 1]) else next(
        (k.value for k in site.keywords if k.arg == base.id), None)
    made_at = assigned(given.id, site.lineno, _parts(outer, dead).assigns) if isinstance(given, ast.Name) else None
    if made_at is None:
        return anchors
    return [a if a is not batch else a.model_copy(update={"line": made_at.lineno}) for a in anchors]


def _target_names(node: ast.Assign | ast.AugAssign) -> set[str]:
    """The names an assignment binds."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _helpers(tree: ast.Module, scope: ast.AST) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions a step calls by name that the module defines: its own module-level ones (`compute_loss(x)`)
    and, as `self.name`, its class's methods (`self.train_micro_batch(batch)`); a name defined twice is left
    out (which one runs is not read)."""
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    twice: set[str] = set()
    owner = next((c for c in tree.body if isinstance(c, ast.ClassDef) and scope in c.body), None)
    bodies = [("", tree.body), *([("self.", owner.body)] if owner is not None else [])]
    for prefix, body in bodies:
        for f in (n for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)):
            key = prefix + f.name
            if key in found:
                twice.add(key)
            found[key] = f
    return {k: f for k, f in found.items() if k not in twice}


def _handed_in(scope: ast.AST, loss: ast.expr, assigns: list[ast.AST]) -> bool:
    """Whether the loss a backward consumes is a parameter of its function, never assigned there."""
    return isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) and isinstance(loss, ast.Name) \
        and loss.id in {a.arg for a in scope.args.args} \
        and assigned(loss.id, scope.end_lineno or scope.lineno, assigns) is None


def _caller_of(tree: ast.Module, scope: ast.AST, loss: ast.expr, assigns: list[ast.AST], dead: Collection[int]
               ) -> tuple[ast.Call, ast.expr, _Parts, dict[str, ast.FunctionDef | ast.AsyncFunctionDef]] | None:
    """Where a step function that takes its loss as a parameter (timm's `_backward(_loss)`) is called: the call,
    the argument given for the loss, and the caller's own parts and local functions, for the loss to be traced
    there."""
    if not _handed_in(scope, loss, assigns):
        return None
    params = [a.arg for a in scope.args.args]
    index = params.index(loss.id) - (params[:1] == ["self"])
    for outer in _scopes(tree):
        parts = _parts(outer, dead)
        inside = range(scope.lineno, (scope.end_lineno or scope.lineno) + 1)  # its own `self._opt.backward(loss)`
        site = next((n for n in parts.calls if len(n.args) > index >= 0 and n.lineno not in inside and (
            isinstance(n.func, ast.Name) and n.func.id == scope.name
            or isinstance(n.func, ast.Attribute) and n.func.attr == scope.name)), None)
        if site is not None:
            local = {f.name: f for f in ast.walk(outer) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                     and f is not outer}
            return site, site.args[index], parts, local
    return None


def loop_of(tree: ast.Module, line: int, up: int = 2, stepped: tuple[int, ...] = (),
            text: str = "") -> tuple[tuple[int, int], tuple[int, int]] | None:
    """((start, end) of the outermost loop around `line` in its function, (start, end) of that function, or
    of the module, cut before its next loop). A function with no loop around the line (a `_run_batch` that
    one step) is looked for where the module calls it, `up` callers deep; so is one whose loop holds none
    of the module's optimizer steps (`stepped`, their lines): a micro-batch loop, stepped after it or by a
    caller, kept only when no loop further out is found. None when no loop is found. `text`, the module's
    source, spares the walk for callers of a function whose name it holds only once (its `def`)."""
    scope: ast.AST = tree
    for node in walk(tree):  # the innermost function holding the line
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.lineno <= line <= (
                node.end_lineno or 0) and (scope is tree or node.lineno > getattr(scope, "lineno", 0)):
            scope = node
    loops = [n for n in own_nodes(scope) if isinstance(n, ast.For | ast.AsyncFor | ast.While)
             and n.lineno <= line <= (n.end_lineno or 0)]
    micro = bool(stepped) and not any(n.lineno <= s <= (n.end_lineno or 0) for n in loops for s in stepped)
    if (not loops or micro) and up and isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) and not (
            text and len(re.findall(rf"\b{re.escape(scope.name)}\b", text)) < 2):
        name, inside = scope.name, (scope.lineno, scope.end_lineno or scope.lineno)
        calls = (n.lineno for n in walk(tree) if isinstance(n, ast.Call) and not inside[0] <= n.lineno <= inside[1]
                 and (n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", None)) == name)
        found = next((found for call in calls if (found := loop_of(tree, call, up - 1, text=text))), None)
        if found or not loops:
            return found
    if not loops:
        return None
    outer = min(loops, key=lambda n: n.lineno)
    end = outer.end_lineno or outer.lineno
    last = getattr(scope, "end_lineno", None) or (tree.body[-1].end_lineno if tree.body else None) or line
    # up to the next loop of the function: a save inside a later loop (the real one, after a warm-up
    # loop, or an eval loop) is not "after the training loop"
    later = [n.lineno for n in own_nodes(scope) if isinstance(n, ast.For | ast.AsyncFor | ast.While)
             and n.lineno > end]
    return (outer.lineno, end), (getattr(scope, "lineno", 1), min([last, *(n - 1 for n in later)]))


def inner_loop(tree: ast.Module, line: int, outer: tuple[int, int]) -> tuple[int, int] | None:
    """The innermost loop around `line` when it sits inside the loop `outer` (a loop over batches in a
    loop over epochs); None when the step's innermost loop is `outer` itself, or outside it."""
    spans = [(n.lineno, n.end_lineno or n.lineno) for n in walk(tree)
             if isinstance(n, ast.For | ast.AsyncFor | ast.While) and n.lineno <= line <= (n.end_lineno or 0)]
    inner = max(spans, default=None)
    return inner if inner and inner != outer and outer[0] < inner[0] and inner[1] <= outer[1] else None


def _cancelled(backward: ast.Call, calls: list[ast.Call]) -> bool:
    """Whether the first of `zero_grad()` and an optimizer step after `backward` is the `zero_grad()`: its
    gradients are thrown away, never stepped."""
    for c in calls:
        if c.lineno <= backward.lineno or not isinstance(c.func, ast.Attribute):
            continue
        if c.func.attr == "zero_grad":
            return True
        if c.func.attr == "step" or OPTIMIZER_METHODS.match(c.func.attr):
            return False
    return False


def _fp16_branch(node: ast.AST, ifs: list[ast.If]) -> bool:
    """Whether `node` sits in the body of an `if` on the fp16 loss scaler (`if scaler is not None:`), whose
    `else` is the path a bf16 or fp32 run takes."""
    return any(i.orelse and any(isinstance(n, ast.Name | ast.Attribute) and "scaler" in ast.unparse(n).lower()
                                for n in ast.walk(i.test))
               and i.body[0].lineno <= node.lineno <= (i.body[-1].end_lineno or i.body[-1].lineno) for i in ifs)


def _anchored(rel: str, backward: ast.Call, loss: ast.expr, assigns: list[ast.AST], calls: list[ast.Call],
              ifs: list[ast.If], loops: Sequence[ast.For | ast.AsyncFor] = (),
              local: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef] | None = None,
              helpers: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef] | None = None) -> list[Anchor]:
    """The step's anchors from its backward: the loss it consumes, where that was made (`made`), and the
    optimizer step and clip after it."""
    anchors = [Anchor(role="backward", file=rel, line=backward.lineno, text=ast.unparse(backward)[:120])]
    anchors += made(rel, backward, loss, assigns, loops, local, helpers)
    return anchors + _stepped(rel, backward, assigns, calls, ifs)


def _stepped(rel: str, backward: ast.Call, assigns: list[ast.AST], calls: list[ast.Call],
             ifs: list[ast.If]) -> list[Anchor]:
    """The optimizer step (or the hand-written update) and the grad clip that follow a backward."""
    anchors: list[Anchor] = []

    def add(role: str, node: ast.AST, text: str = "") -> None:
        anchors.append(Anchor(role=role, file=rel, line=node.lineno, text=text[:120]))

    after = [c for c in calls if c.lineno >= backward.lineno]
    # an engine that takes the loss (DeepSpeed's `model.backward(loss)`) steps itself: `model.step()`
    engine = name_of(backward.func.value) if isinstance(backward.func, ast.Attribute) and backward.args else ""
    steps = [c for c in after if isinstance(c.func, ast.Attribute) and (
        c.func.attr == "step" and (re.search(r"opt|scaler", name_of(c.func.value), re.I)
                                   or engine and name_of(c.func.value) == engine)
        or OPTIMIZER_METHODS.match(c.func.attr))]
    opt = next((c for c in steps if not _fp16_branch(c, ifs)), steps[0] if steps else None)
    if opt is not None:
        add("optimizer_step", opt, ast.unparse(opt))
    else:  # weights updated by hand (`p -= lr * p.grad`): the step has no optimizer to count
        update = next((a for a in [*assigns, *(c for c in calls if isinstance(c.func, ast.Attribute)
                                                and c.func.attr in IN_PLACE)]
                       if a.lineno > backward.lineno and any(isinstance(n, ast.Attribute) and n.attr == "grad"
                                                             for n in ast.walk(value_of(a) or a))), None)
        if update is not None:
            add("manual_update", update, ast.unparse(update))
    clip = next((c for c in after if name_of(c.func).split(".")[-1] in CLIPS
                 and (opt is None or c.lineno <= opt.lineno)), None)
    if clip is not None:
        # `if args.clip > 0:` around it: whether it runs by default is the flag's default (see proposals)
        guard = next((i for i in reversed(ifs) if any(n is clip for s in i.body for n in ast.walk(s))), None)
        add("grad_clip", clip, ast.unparse(clip) + (f" if {ast.unparse(guard.test)}" if guard is not None else ""))
    return anchors




def compute_loss_lines(tree: ast.Module, rel: str, trainers: Collection[str]) -> list[Anchor]:
    """The loss and forward of a Trainer class of the repo that the job builds and that overrides
    `compute_loss(self, model, inputs, ...)`: there the library's `training_step` gets its loss, so a row there
    records what the job computes, not what the Trainer logs of it. The loss is the first assignment of a name
    `loss` (`(loss, outputs) = super().compute_loss(...)`); the forward, a call of its `model` parameter."""
    found: list[Anchor] = []
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name in trainers):
        method = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "compute_loss"), None)
        if method is None or len(method.args.args) < 3:
            continue
        model = method.args.args[1].arg
        forward = min((n for n in walk(method) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                       and n.func.id == model), key=lambda n: n.lineno, default=None)
        loss = min((n for n in walk(method) if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "loss" for target in n.targets for t in ast.walk(target))),
                   key=lambda n: n.lineno, default=None)
        for role, node in (("loss", loss), ("forward", forward)):
            if node is not None:
                found.append(Anchor(role=role, file=rel, line=node.lineno, text=ast.unparse(node)[:120]))
    return found
