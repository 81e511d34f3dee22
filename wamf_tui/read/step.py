"""The training step and its anchors, from data flow.

Names are not enough: an eval function computes `loss = criterion(out, y)` too, and a
constructor assigns `loss_fn = ...`. The training step is where a backward happens (`loss.backward()`,
`scaler.scale(loss).backward()`, `accelerator.backward(loss)`, `fabric.backward(loss)`,
`self.manual_backward(loss)`), outside evaluation functions and `no_grad` / `inference_mode`
ones. From there: the loss is the value the backward consumes, followed back through scaling
and accumulation to the model or loss call; the forward is the model call that produced it; the
batch is that call's input; the optimizer step and the grad-norm clip are the ones in the same step.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Mapping, Sequence
from contextvars import ContextVar
from typing import NamedTuple

from ..model import Anchor

QUIET_FUNCTIONS = re.compile(r"(^|_)(eval|evaluate|validate|validation|valid|val|test|estimate_loss|sample|"
                             r"generate|predict|inference|infer)(_|$)|^__init__$", re.I)
NO_GRAD = ("no_grad", "inference_mode", "enable_grad=False")
BACKWARD_BY_ARG = ("backward", "manual_backward")  # accelerator.backward(loss), fabric.backward(loss), ...
IN_PLACE = ("add_", "sub_", "addcdiv_", "copy_")  # `p.data.add_(p.grad, alpha=-lr)`: a hand-written update
CLIPS = ("clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grad_norm_fp32")
ROLES = ("loss", "forward", "batch", "backward", "optimizer_step", "grad_clip")
WARM_UP = re.compile(r"warm_?up", re.I)  # `for step in warmup_steps:`: a kernel warm-up before the real loop
OPTIMIZER_METHODS = re.compile(r"^(step_optimizers?|optimizer_step|optimizers_step)$")  # a trainer's own step


def name_of(node: ast.AST, calls: bool = False) -> str:
    """`a.b.c` of a name, attribute chain, call or subscript; "" for anything else. With `calls`, a
    call in the chain keeps its parentheses (`Path().parent`), as the source reader matches on them."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = name_of(node.value, calls)
        return f"{base}.{node.attr}" if base else node.attr
    if isinstance(node, ast.Call):
        return name_of(node.func, calls) + ("()" if calls else "")
    if isinstance(node, ast.Subscript):
        return name_of(node.value, calls)
    return ""


def _quiet_decorator(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(any(q in ast.unparse(d) for q in NO_GRAD) for d in fn.decorator_list)


def _scopes(tree: ast.Module) -> list[ast.AST]:
    """The module and every function in it that is not an evaluation or no-grad one."""
    scopes: list[ast.AST] = [tree]
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not QUIET_FUNCTIONS.search(node.name) \
                and not _quiet_decorator(node):
            scopes.append(node)
    return scopes


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """Every node of a scope, not descending into nested functions or classes (they are scopes of their own)."""
    out: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


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


def find_step(tree: ast.Module, rel: str, dead: Collection[int] = ()) -> list[Anchor] | None:
    """The anchors of the first training step of a module; None when nothing here trains. `dead`: lines the
    job's values never reach (`if args.use_optimizer: optimizer.step()` with the flag off), read past."""
    token = _TRAINED.set(_trained_names(tree))
    try:
        return _first_step(tree, rel, dead)
    finally:
        _TRAINED.reset(token)


def lightning_step(tree: ast.Module, rel: str, dead: Collection[int] = ()) -> list[Anchor] | None:
    """A LightningModule's step: `training_step(self, batch, batch_idx)` returns its loss, and the framework runs
    the backward and the optimizer. The loss, forward and batch behind the first loss it returns (`return loss`,
    `return loss, logs`, `return {"loss": loss}`), read as a backward's; None where no class here has one."""
    token = _TRAINED.set(_trained_names(tree))
    try:
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            step = next((f for f in cls.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                         and f.name == "training_step"), None)
            if step is None:
                continue
            parts = _parts(step, dead)
            for ret in sorted((n for n in parts.nodes if isinstance(n, ast.Return) and n.value is not None),
                              key=lambda n: n.lineno):
                loss = _returned_loss(ret.value)  # type: ignore[arg-type]
                anchors = _made(rel, ret, loss, parts.assigns, parts.loops, helpers=_helpers(tree, step)) \
                    if loss is not None else []
                if any(a.role == "loss" for a in anchors):
                    return anchors
        return None
    finally:
        _TRAINED.reset(token)


def _returned_loss(value: ast.expr) -> ast.expr | None:
    """The loss of what a `training_step` returns: the value, a tuple's first item, or a dict's "loss"."""
    if isinstance(value, ast.Tuple) and value.elts:
        return value.elts[0]
    if isinstance(value, ast.Dict):
        return next((v for k, v in zip(value.keys, value.values, strict=True)
                     if isinstance(k, ast.Constant) and k.value == "loss"), None)
    return value if not isinstance(value, ast.Constant) else None


# the names whose parameters the module trains: its models, whatever they are called (hifi-gan's `msd`, `mpd`)
_TRAINED: ContextVar[frozenset[str]] = ContextVar("trained", default=frozenset())


def _trained_names(tree: ast.Module) -> frozenset[str]:
    """Names whose `.parameters()` the module reads (an optimizer's `chain(msd.parameters(), mpd.parameters())`,
    a clip's `model.parameters()`)."""
    names: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "parameters":
            base = n.func.value
            name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else ""
            if name and name != "self":
                names.add(name)
    return frozenset(names)


class _Parts(NamedTuple):
    """What the step is read from in one scope: its own nodes past the lines the job's values never reach."""

    nodes: list[ast.AST]
    assigns: list[ast.AST]  # by line
    calls: list[ast.Call]  # by line
    ifs: list[ast.If]
    loops: list[ast.For | ast.AsyncFor]


def _parts(scope: ast.AST, dead: Collection[int]) -> _Parts:
    nodes = [n for n in _own_nodes(scope) if getattr(n, "lineno", 0) not in dead]
    return _Parts(nodes,
                  sorted((n for n in nodes if isinstance(n, ast.Assign | ast.AugAssign | ast.AnnAssign)),
                         key=lambda n: n.lineno),  # type: ignore[attr-defined]
                  sorted((n for n in nodes if isinstance(n, ast.Call)), key=lambda n: n.lineno),
                  [n for n in nodes if isinstance(n, ast.If)],
                  [n for n in nodes if isinstance(n, ast.For | ast.AsyncFor)])


def _first_step(tree: ast.Module, rel: str, dead: Collection[int]) -> list[Anchor] | None:
    for scope in _scopes(tree):
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
        anchors = _anchored(rel, call, loss, assigns, calls, ifs, loops, helpers=_helpers(tree, scope))
        caller = _caller_of(tree, scope, loss, assigns, dead)
        if caller is None and _handed_in(scope, loss, assigns):
            continue  # `def backward(self, loss): loss.backward()`, called from another module: a wrapper, no step
        if caller is not None:  # `def _backward(_loss): _loss.backward()`: the loss is made where it is called
            site, given, parts, local = caller
            outer = _anchored(rel, site, given, parts.assigns, parts.calls, parts.ifs, parts.loops, local)
            taken = {a.role for a in outer if a.role in ("loss", "forward", "batch")}
            anchors = [a for a in anchors if a.role not in taken] + [a for a in outer if a.role in taken]
        return anchors
    return None


def _helpers(tree: ast.Module, scope: ast.AST) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions a step calls by name that the module defines: its own module-level ones (`compute_loss(x)`)
    and, as `self.name`, its class's methods (`self.train_micro_batch(batch)`); a name defined twice is left
    out (which one runs is not read)."""
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    twice: set[str] = set()
    owner = next((c for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and scope in c.body), None)
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
        and loss.id in {a.arg for a in scope.args.args} and _assigned(loss.id, scope.end_lineno or 0, assigns) is None


def _caller_of(tree: ast.Module, scope: ast.AST, loss: ast.expr, assigns: list[ast.AST], dead: Collection[int]
               ) -> tuple[ast.Call, ast.expr, _Parts, dict[str, ast.FunctionDef | ast.AsyncFunctionDef]] | None:
    """Where a step function that takes its loss as a parameter (timm's `_backward(_loss)`) is called: the call,
    the argument given for the loss, and the caller's own parts and local functions, for the loss to be traced
    there."""
    if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) or not isinstance(loss, ast.Name) \
            or _assigned(loss.id, scope.end_lineno or scope.lineno, assigns) is not None:
        return None
    params = [a.arg for a in scope.args.args]
    if loss.id not in params:
        return None
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


def _returned(helper: ast.FunctionDef | ast.AsyncFunctionDef, assigned: ast.AST,
              name: str) -> tuple[ast.expr, int] | None:
    """What a helper returns into `name` (`_loss` of `return _loss, result`, for `loss, result = _forward()`; or
    `output["loss"]`, read off a name) and the return's line; None when it returns anything else there."""
    ret = next((n for n in reversed(_own_nodes(helper)) if isinstance(n, ast.Return) and n.value is not None), None)
    targets = getattr(assigned, "targets", [])
    if ret is None or ret.value is None or len(targets) != 1:
        return None
    target, value = targets[0], ret.value
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        value = next((v for t, v in zip(target.elts, value.elts, strict=True)
                      if isinstance(t, ast.Name) and t.id == name), None)
    elif not isinstance(target, ast.Name):
        return None
    base = value
    while isinstance(base, ast.Attribute | ast.Subscript):
        base = base.value
    return (value, ret.lineno) if value is not None and isinstance(base, ast.Name) else None


def _not_taken(helper: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call) -> set[int]:
    """The lines of `helper`'s branches that this call's constant arguments rule out: `_shared_step(b, i,
    prefix="train")` never runs the `else:` of `if prefix == 'train':` (its eval loss)."""
    params = [a.arg for a in helper.args.args]
    params = params[1:] if params[:1] == ["self"] else params
    defaults = helper.args.defaults
    bound = {a.arg: d.value for a, d in zip(helper.args.args[len(helper.args.args) - len(defaults):], defaults,
                                              strict=True) if isinstance(d, ast.Constant)}
    bound.update({p: a.value for p, a in zip(params, call.args, strict=False) if isinstance(a, ast.Constant)})
    bound.update({k.arg: k.value.value for k in call.keywords if k.arg and isinstance(k.value, ast.Constant)})
    out: set[int] = set()
    for node in (n for n in ast.walk(helper) if isinstance(n, ast.If)):
        test = node.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq | ast.NotEq) \
                and isinstance(test.left, ast.Name) and test.left.id in bound and isinstance(test.comparators[0],
                                                                                              ast.Constant):
            holds = (bound[test.left.id] == test.comparators[0].value) == isinstance(test.ops[0], ast.Eq)
            for stmt in node.orelse if holds else node.body:
                out.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return out


def _inside(returned: tuple[ast.expr, int]) -> tuple[ast.expr, int, ast.AST | None]:
    """(name to trace, line, source) for what a helper returns: a name is traced on from the return; `output["loss"]`
    is the loss there, read off the output it names."""
    value, line = returned
    return (value, line, None) if isinstance(value, ast.Name) else (value, line, ast.Expr(value=value, lineno=line))


def loop_of(tree: ast.Module, line: int, up: int = 2, stepped: tuple[int, ...] = (),
            text: str = "") -> tuple[tuple[int, int], tuple[int, int]] | None:
    """((start, end) of the outermost loop around `line` in its function, (start, end) of that function, or
    of the module, cut before its next loop). A function with no loop around the line (a `_run_batch` that
    one step) is looked for where the module calls it, `up` callers deep; so is one whose loop holds none
    of the module's optimizer steps (`stepped`, their lines): a micro-batch loop, stepped after it or by a
    caller, kept only when no loop further out is found. None when no loop is found. `text`, the module's
    source, spares the walk for callers of a function whose name it holds only once (its `def`)."""
    scope: ast.AST = tree
    for node in ast.walk(tree):  # the innermost function holding the line
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.lineno <= line <= (
                node.end_lineno or 0) and (scope is tree or node.lineno > getattr(scope, "lineno", 0)):
            scope = node
    loops = [n for n in _own_nodes(scope) if isinstance(n, ast.For | ast.AsyncFor | ast.While)
             and n.lineno <= line <= (n.end_lineno or 0)]
    micro = bool(stepped) and not any(n.lineno <= s <= (n.end_lineno or 0) for n in loops for s in stepped)
    if (not loops or micro) and up and isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) and not (
            text and len(re.findall(rf"\b{re.escape(scope.name)}\b", text)) < 2):
        name, inside = scope.name, (scope.lineno, scope.end_lineno or scope.lineno)
        calls = (n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and not inside[0] <= n.lineno <= inside[1]
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
    later = [n.lineno for n in _own_nodes(scope) if isinstance(n, ast.For | ast.AsyncFor | ast.While)
             and n.lineno > end]
    return (outer.lineno, end), (getattr(scope, "lineno", 1), min([last, *(n - 1 for n in later)]))


def inner_loop(tree: ast.Module, line: int, outer: tuple[int, int]) -> tuple[int, int] | None:
    """The innermost loop around `line` when it sits inside the loop `outer` (a loop over batches in a
    loop over epochs); None when the step's innermost loop is `outer` itself, or outside it."""
    spans = [(n.lineno, n.end_lineno or n.lineno) for n in ast.walk(tree)
             if isinstance(n, ast.For | ast.AsyncFor | ast.While) and n.lineno <= line <= (n.end_lineno or 0)]
    inner = max(spans, default=None)
    return inner if inner and inner != outer and outer[0] < inner[0] and inner[1] <= outer[1] else None


def _targets(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        targets = [node.target]
    else:
        return set()
    names: set[str] = set()
    for t in targets:
        for n in ast.walk(t):
            if isinstance(n, ast.Name | ast.Attribute):
                names.add(name_of(n))
    return names


def _assigned(name: str, before: int, assigns: list[ast.AST]) -> ast.AST | None:
    """The last assignment of `name` above line `before` in the scope."""
    found = None
    for a in assigns:
        if a.lineno < before and name in _targets(a):
            found = a
    return found


def _batch_made(name: str, before: int, assigns: list[ast.AST]) -> ast.AST | None:
    """Where the batch `name` is last made above `before`: past a literal stand-in (`samples = {"is_empty": True}`
    when the loader's batch was bad), which holds no data."""
    made = [a for a in assigns if a.lineno < before and name in _targets(a)
            and not isinstance(_value(a), ast.Dict | ast.Constant | ast.List | ast.Tuple)]
    return made[-1] if made else _assigned(name, before, assigns)


def _loader_loop(name: str, before: int, assigns: list[ast.AST],
                 loops: Sequence[ast.For | ast.AsyncFor]) -> ast.AST | None:
    """Where the forward's input is taken from the loader's batch: the assignment that reads the loop's
    variable (`for step, batch in loader:`, then `latents = vae.encode(batch["pixel_values"])`, ...,
    `model(noisy_latents)`), or the loop itself when the forward takes its variable as it is: the batch as the
    data gives it, before the step transforms it. Followed back through at most six assignments."""
    around = [f for f in loops if f.lineno < before <= (f.end_lineno or f.lineno)]
    todo: list[tuple[str, int, int]] = [(name, before, 0)]
    seen: set[tuple[str, int]] = set()
    while todo and len(seen) < 64:
        current, line, hops = todo.pop(0)
        if (current, line) in seen:
            continue
        seen.add((current, line))
        loop = next((f for f in reversed(around) if current in _names(f.target)), None)
        if loop is not None:
            return loop
        made = _assigned(current, line, assigns)
        if made is None:
            continue
        read = _names(_value(made) or made)
        if any(n in _names(f.target) for f in around for n in read):  # `inputs = batch["x"]`: taken from it
            return made
        if hops < 6:
            todo += [(n, made.lineno, hops + 1) for n in read]
    return None


def _operands(node: ast.expr) -> set[str]:
    """The names an arithmetic expression combines as they are (`raw / accum * 2`), not through an attribute or
    a call (`out.fvu + out.aux`)."""
    if isinstance(node, ast.BinOp):
        return _operands(node.left) | _operands(node.right)
    return {node.id} if isinstance(node, ast.Name) else set()


def _names(node: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]


def _value(node: ast.AST) -> ast.expr | None:
    return getattr(node, "value", None)


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
    """The step's anchors from its backward: the loss it consumes, where that was made (`_made`), and the
    optimizer step and clip after it."""
    anchors = [Anchor(role="backward", file=rel, line=backward.lineno, text=ast.unparse(backward)[:120])]
    anchors += _made(rel, backward, loss, assigns, loops, local, helpers)
    return anchors + _stepped(rel, backward, assigns, calls, ifs)


def _made(rel: str, at: ast.stmt | ast.expr, loss: ast.expr, assigns: list[ast.AST],
          loops: Sequence[ast.For | ast.AsyncFor] = (),
          local: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef] | None = None,
          helpers: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef] | None = None) -> list[Anchor]:
    """The loss, forward and batch behind the `loss` consumed at `at` (a backward call, or a `training_step`'s
    return). `local`: the closures the step's scope defines, called with no arguments (`_forward()`); `helpers`:
    the module's functions and the class's methods it calls with arguments (`self.train_micro_batch(batch)`). A
    loss one of them returns is traced inside it; its batch stays the one the step hands it."""
    anchors: list[Anchor] = []

    def add(role: str, node: ast.AST, text: str = "") -> None:
        anchors.append(Anchor(role=role, file=rel, line=node.lineno, text=text[:120]))

    # the loss: back through `loss = loss / accum`, `loss = raw_loss`, to where it is computed
    source: ast.AST | None = None
    expr: ast.expr | None = loss
    line = at.lineno
    handed: tuple[ast.AST, ast.Call, list[ast.AST]] | None = None  # (statement, call, assigns) at the step's scope
    if isinstance(expr, ast.BinOp):  # backward(loss / accum): the computed term; of several (`loss * len(sub) /
        names = sorted({n.id for n in ast.walk(expr) if isinstance(n, ast.Name)})  # len(batch)`), the left one
        computed = [n for n in names if isinstance(_value(_assigned(n, line, assigns)), ast.Call)]
        left = expr
        while isinstance(left, ast.BinOp):
            left = left.left
        expr = ast.Name(left.id) if isinstance(left, ast.Name) and left.id in computed else \
            ast.Name(computed[0]) if computed else expr
    if isinstance(expr, ast.Attribute) and _assigned(name_of(expr), line, assigns) is not None:
        source = _assigned(name_of(expr), line, assigns)  # `logits, self.loss = model(x, y)`
        line = source.lineno  # type: ignore[union-attr]
    for _ in range(8):
        if not isinstance(expr, ast.Name):
            break  # outputs.loss, out["loss"]: computed by the call that made `outputs`
        node = _assigned(expr.id, line, assigns)
        if node is None:
            break
        source, line = node, node.lineno
        value = _value(node)
        if isinstance(node, ast.AugAssign):
            continue  # loss += part: where `loss` is first computed
        helper = (local or {}).get(value.func.id) if isinstance(value, ast.Call) and isinstance(
            value.func, ast.Name) and not value.args else None
        returned = _returned(helper, node, expr.id) if helper is not None else None
        if helper is not None and returned is not None:  # `loss, out = _forward()`: traced inside the helper
            expr, line, source = _inside(returned)
            assigns = sorted([*assigns, *(n for n in _own_nodes(helper) if isinstance(
                n, ast.Assign | ast.AugAssign | ast.AnnAssign))], key=lambda n: n.lineno)  # type: ignore[attr-defined]
            continue
        called = (helpers or {}).get(name_of(value.func)) if isinstance(value, ast.Call) else None
        returned = _returned(called, node, expr.id) if called is not None else None
        if called is not None and returned is not None and isinstance(value, ast.Call):
            handed = handed or (node, value, assigns)  # `loss = self.train_micro_batch(mb)`: inside, by its own
            expr, line, source = _inside(returned)  # assignments only (a name it takes is the caller's), past
            skipped = _not_taken(called, value)  # the branches the call's own arguments rule out
            assigns = sorted((n for n in _own_nodes(called) if isinstance(n, ast.Assign | ast.AugAssign | ast.AnnAssign)
                              and n.lineno not in skipped), key=lambda n: n.lineno)  # type: ignore[attr-defined]
            continue
        if isinstance(value, ast.Name):
            expr = value  # loss = raw_loss
            continue
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
                name_of(value.func.value) == expr.id:
            continue  # loss = loss.mean(): a reduction of the loss computed above
        if isinstance(value, ast.BinOp):
            names = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
            if expr.id in names:
                continue  # loss = loss / accum: the same name, computed above
            computed = [n for n in sorted(names) if isinstance(_value(_assigned(n, line, assigns)), ast.Call)]
            bare = _operands(value)
            if len(computed) == 1 and computed[0] in bare:  # scaled: raw / accum (not `out.fvu + out.aux`,
                expr = ast.Name(computed[0])  # a loss made here from the model's outputs)
                continue
        break  # a call, or a sum of several computed terms: the loss is here
    if source is not None:
        add("loss", source, ast.unparse(source))
    elif isinstance(loss, ast.Attribute | ast.Subscript | ast.Call):  # `F.cross_entropy(out, y).backward()`:
        add("loss", at, ast.unparse(loss))  # computed on the backward's own line
    # the forward: the model call that made the loss, or that made what the loss call reads
    forward = _forward(source, loss, line, assigns)
    if forward is not None:
        node, call = forward
        add("forward", node, ast.unparse(node))
        if handed is not None:  # the model runs inside a helper: the batch is the one the step hands it
            node, call, assigns = handed
        batch = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg is None), None) \
            or next((k.value for k in call.keywords if not _is_model(k.value)), None)  # `images=images`
        base = batch
        while isinstance(base, ast.Attribute | ast.Subscript):  # `signal.audio_data`, `batch["input_ids"]`
            base = base.value
        if isinstance(base, ast.Name) and batch is not None:
            where = _loader_loop(base.id, node.lineno, assigns, loops) or _batch_made(base.id, node.lineno, assigns)
            add("batch", where if where is not None else node, ast.unparse(batch))
        elif batch is not None:
            add("batch", node, ast.unparse(batch))
    return anchors


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
                                                             for n in ast.walk(_value(a) or a))), None)
        if update is not None:
            add("manual_update", update, ast.unparse(update))
    clip = next((c for c in after if name_of(c.func).split(".")[-1] in CLIPS
                 and (opt is None or c.lineno <= opt.lineno)), None)
    if clip is not None:
        # `if args.clip > 0:` around it: whether it runs by default is the flag's default (see proposals)
        guard = next((i for i in reversed(ifs) if any(n is clip for s in i.body for n in ast.walk(s))), None)
        add("grad_clip", clip, ast.unparse(clip) + (f" if {ast.unparse(guard.test)}" if guard is not None else ""))
    return anchors


def _forward(source: ast.AST | None, loss: ast.expr, line: int,
             assigns: list[ast.AST]) -> tuple[ast.AST, ast.Call] | None:
    """(statement, call) of the forward that produced the loss."""
    value = _value(source) if source is not None else loss
    if isinstance(value, ast.Attribute | ast.Subscript):  # outputs.loss: `outputs = model(**batch)`
        base = value.value
        while isinstance(base, ast.Attribute | ast.Subscript):
            base = base.value
        if isinstance(base, ast.Call) and _looks_like_model(base) and source is not None:
            return source, base  # `loss = model(**batch).loss`: the model call on the loss's own line
        if isinstance(base, ast.Name):
            node = _assigned(base.id, line, assigns)
            call = _value(node) if node is not None else None
            if node is not None and isinstance(call, ast.Call):
                if not _looks_like_model(call) and _stores_into(node):  # out["d_loss"] = gan_loss.d_loss(fake, real)
                    return _forward(node, loss, node.lineno, assigns)
                return node, call
        return None
    if not isinstance(value, ast.Call):  # model(x).sum() * scale: the model call inside
        inner = next((c for c in ast.walk(value) if isinstance(c, ast.Call) and _looks_like_model(c)), None) \
            if value is not None else None
        if inner is not None and source is not None:
            return source, inner
        # `loss_d = loss_s + loss_f`: each term's own loss call, and the model call it reads
        for name in (n for n in ast.walk(value) if isinstance(n, ast.Name)) if value is not None else ():
            node = _assigned(name.id, line, assigns)
            if node is not None and isinstance(_value(node), ast.Call) and (
                    found := _forward(node, loss, node.lineno, assigns)) is not None:
                return found
        return None
    if _looks_like_model(value) and source is not None:
        return source, value  # logits, loss = model(x, y)
    base = value.func.value if isinstance(value.func, ast.Attribute) else None
    made: list[tuple[ast.AST, ast.Call]] = []  # criterion(out, y), out.pow(2).mean(): the calls that made them
    for arg in [*value.args, *([base] if base is not None else [])]:
        inner = arg
        while isinstance(inner, ast.Attribute | ast.Subscript | ast.Call) and not isinstance(inner, ast.Name):
            inner = inner.func if isinstance(inner, ast.Call) else inner.value
        if isinstance(inner, ast.Name):
            node = _assigned(inner.id, line, assigns)
            for _ in range(4):  # `pred = torch.chunk(pred, 2)`, `out = {"total": out}`: a rewrap of what was made
                held = _value(node) if node is not None else None  # above
                call = _call_of(held)
                if node is None or held is None or call is not None and _looks_like_model(call) or not any(
                        isinstance(n, ast.Name) and n.id == inner.id for n in ast.walk(held)):
                    break
                node = _assigned(inner.id, node.lineno, assigns)
            call = _call_of(_value(node)) if node is not None else None
            if call is not None and not _looks_like_model(call):  # recons = Signal(out["audio"]): out = model(x)
                call, node = _made_by_model(call, node, assigns) or (call, node)
            if call is not None:
                made.append((node, call))  # type: ignore[arg-type]
    if made:  # the model's output over the target's: `mse_loss(model_pred, target)`
        return next(((n, c) for n, c in made if _looks_like_model(c)), made[0])
    if source is not None and (value.args or any(_is_model(k.value) for k in value.keywords)):
        return source, value  # `model.loss(x)`, `loss_fn(net=ddp, images=x)`: the call runs the model
    return None


# what a model, or the name it is held by, is called (`model`, `self.net`, `ddp`, `unet`)
_MODEL_WORDS = re.compile(r"model|net|module|forward|engine|transformer|gpt|llm|unet|vae|generator|discriminator"
                          r"|encoder|decoder|backbone|denoiser|policy|ddp", re.I)


def _is_model(node: ast.expr) -> bool:
    """A name that holds the trained model (`net=ddp`): one whose parameters the module trains, or named so."""
    return isinstance(node, ast.Name) and (node.id in _TRAINED.get() or bool(_MODEL_WORDS.search(node.id)))


def _stores_into(node: ast.AST) -> bool:
    """`output["loss"] = ...`: a statement that fills a key or attribute of a container, not one that makes it."""
    return isinstance(node, ast.Assign) and all(isinstance(t, ast.Subscript | ast.Attribute) for t in node.targets)


def _call_of(value: ast.AST | None) -> ast.Call | None:
    """The call a value comes from: `unet(x)[0]`, `model(x).logits` and `model(x)` all come from a call."""
    while isinstance(value, ast.Subscript | ast.Attribute):
        value = value.value
    return value if isinstance(value, ast.Call) else None


def _made_by_model(call: ast.Call, node: ast.AST | None, assigns: list[ast.AST]) -> tuple[ast.Call, ast.AST] | None:
    """The model call one step above a wrapping or reshaping of its output (`recons = AudioSignal(out["audio"], sr)`
    or `shifted = logits[..., :-1, :].contiguous()` after `out = generator(x)`, `logits = model(x).logits`), or None."""
    receiver = [call.func.value] if isinstance(call.func, ast.Attribute) else []
    for arg in [*call.args, *receiver]:
        base = arg
        while isinstance(base, ast.Attribute | ast.Subscript):
            base = base.value
        if isinstance(base, ast.Name) and node is not None:
            above = _assigned(base.id, node.lineno, assigns)
            made = _call_of(_value(above)) if above is not None else None
            if made is not None and above is not None and _looks_like_model(made):
                return made, above
    return None


def _looks_like_model(call: ast.Call) -> bool:
    name = name_of(call.func).lower()
    if re.search(r"loss|criterion", name.rsplit(".", 1)[-1]):
        return False  # `gan_loss.discriminator_loss(fake, real)`: a loss over the model's output
    if name.rsplit(".", 1)[-1] in _TRAINED.get():
        return True
    return bool(_MODEL_WORDS.search(name)) or name in ("self",)
