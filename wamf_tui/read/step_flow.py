"""Where a training step's loss was made: from the value a backward consumes (or a LightningModule's
`training_step` returns), back through scaling, accumulation and the helpers that return it, to the loss
call, the model call that fed it, and the batch that call was given. `step` finds the step; this follows
its data.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from contextvars import ContextVar

from ..model import Anchor
from .nodes import walk


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


def own_nodes(scope: ast.AST) -> list[ast.AST]:
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


# the names whose parameters the module trains: its models, whatever they are called (hifi-gan's `msd`, `mpd`)
TRAINED: ContextVar[frozenset[str]] = ContextVar("trained", default=frozenset())


def trained_names(tree: ast.Module) -> frozenset[str]:
    """Names whose `.parameters()` the module reads (an optimizer's `chain(msd.parameters(), mpd.parameters())`,
    a clip's `model.parameters()`)."""
    names: set[str] = set()
    for n in walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "parameters":
            base = n.func.value
            name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else ""
            if name and name != "self":
                names.add(name)
    return frozenset(names)


def _returned(helper: ast.FunctionDef | ast.AsyncFunctionDef, assigned: ast.AST,
              name: str) -> tuple[ast.expr, int] | None:
    """What a helper returns into `name` (`_loss` of `return _loss, result`, for `loss, result = _forward()`; or
    `output["loss"]`, read off a name) and the return's line; None when it returns anything else there."""
    ret = next((n for n in reversed(own_nodes(helper)) if isinstance(n, ast.Return) and n.value is not None), None)
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


def assigned(name: str, before: int, assigns: list[ast.AST]) -> ast.AST | None:
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
            and not isinstance(value_of(a), ast.Dict | ast.Constant | ast.List | ast.Tuple)]
    return made[-1] if made else assigned(name, before, assigns)


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
        made = assigned(current, line, assigns)
        if made is None:
            continue
        read = _names(value_of(made) or made)
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


def _scaling(node: ast.expr) -> bool:
    """Whether an arithmetic expression only scales (`raw / accum * 2`): a sum (`mean_loss + w * penalty`, IGA's
    objective) makes a new loss of its terms."""
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, ast.Mult | ast.Div | ast.FloorDiv) and _scaling(node.left) and _scaling(node.right)
    return True


def _helper_term(node: ast.expr, helpers: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef]) -> ast.Call | None:
    """The one term of an arithmetic expression that calls a helper of the step (`self._loss_step(batch)` in
    `self._loss_step(batch) * num_tokens`): the loss comes from it, whatever else is computed beside it."""
    def terms(n: ast.expr) -> list[ast.expr]:
        return [*terms(n.left), *terms(n.right)] if isinstance(n, ast.BinOp) else [n]
    calls = [t for t in terms(node) if isinstance(t, ast.Call) and name_of(t.func) in helpers]
    return calls[0] if len(calls) == 1 else None


def _names(node: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]


def value_of(node: ast.AST) -> ast.expr | None:
    return getattr(node, "value", None)


_REDUCTIONS = ("mean", "sum")  # a loss reduced where it is consumed is the loss computed before


def made(rel: str, at: ast.stmt | ast.expr, loss: ast.expr, assigns: list[ast.AST],
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
        computed = [n for n in names if isinstance(value_of(assigned(n, line, assigns)), ast.Call)]
        left = expr
        while isinstance(left, ast.BinOp):
            left = left.left
        expr = ast.Name(left.id) if isinstance(left, ast.Name) and left.id in computed else \
            ast.Name(computed[0]) if computed else expr
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _REDUCTIONS \
            and isinstance(expr.func.value, ast.Name) and assigned(expr.func.value.id, line, assigns) is not None:
        expr = expr.func.value  # `accelerator.backward(losses.mean())`: the per-sample losses computed above
    if isinstance(expr, ast.Attribute) and assigned(name_of(expr), line, assigns) is not None:
        source = assigned(name_of(expr), line, assigns)  # `logits, self.loss = model(x, y)`
        line = source.lineno  # type: ignore[union-attr]
    for _ in range(8):
        if not isinstance(expr, ast.Name):
            break  # outputs.loss, out["loss"]: computed by the call that made `outputs`
        node = assigned(expr.id, line, assigns)
        if node is None:
            break
        value = value_of(node)
        if isinstance(value, ast.Constant) and isinstance(source, ast.AugAssign):
            source = at  # `total = 0`, then `total += term` per part: the whole is the one the backward gets
            break
        source, line = node, node.lineno
        if isinstance(node, ast.AugAssign):
            continue  # loss += part: where `loss` is first computed
        helper = (local or {}).get(value.func.id) if isinstance(value, ast.Call) and isinstance(
            value.func, ast.Name) and not value.args else None
        returned = _returned(helper, node, expr.id) if helper is not None else None
        if helper is not None and returned is not None:  # `loss, out = _forward()`: traced inside the helper
            expr, line, source = _inside(returned)
            assigns = sorted([*assigns, *(n for n in own_nodes(helper) if isinstance(
                n, ast.Assign | ast.AugAssign | ast.AnnAssign))], key=lambda n: n.lineno)  # type: ignore[attr-defined]
            continue
        if isinstance(value, ast.BinOp) and (term := _helper_term(value, helpers or {})) is not None:
            value = term  # `self._loss_step(batch) * num_tokens`: the helper's loss, scaled by a count made here
        called = (helpers or {}).get(name_of(value.func)) if isinstance(value, ast.Call) else None
        returned = _returned(called, node, expr.id) if called is not None else None
        if called is not None and returned is not None and isinstance(value, ast.Call):
            handed = handed or (node, value, assigns)  # `loss = self.train_micro_batch(mb)`: inside, by its own
            expr, line, source = _inside(returned)  # assignments only (a name it takes is the caller's), past
            skipped = _not_taken(called, value)  # the branches the call's own arguments rule out
            assigns = sorted((n for n in own_nodes(called) if isinstance(n, ast.Assign | ast.AugAssign | ast.AnnAssign)
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
            computed = [n for n in sorted(names) if isinstance(value_of(assigned(n, line, assigns)), ast.Call)]
            bare = _operands(value)
            if len(computed) == 1 and computed[0] in bare and _scaling(value):  # raw / accum (not `out.fvu + out.aux`,
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


def _forward(source: ast.AST | None, loss: ast.expr, line: int,
             assigns: list[ast.AST]) -> tuple[ast.AST, ast.Call] | None:
    """(statement, call) of the forward that produced the loss."""
    value = value_of(source) if source is not None else loss
    if isinstance(value, ast.Attribute | ast.Subscript):  # outputs.loss: `outputs = model(**batch)`
        base = value.value
        while isinstance(base, ast.Attribute | ast.Subscript):
            base = base.value
        if isinstance(base, ast.Call) and _looks_like_model(base) and source is not None:
            return source, base  # `loss = model(**batch).loss`: the model call on the loss's own line
        if isinstance(base, ast.Name):
            node = assigned(base.id, line, assigns)
            call = value_of(node) if node is not None else None
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
        # `loss_d = loss_s + loss_f`: each term's own loss call, and the model call it reads; a term made of
        # others (`mean = total / n`, `total += env_loss` per part) is followed back to them
        for name in (n for n in ast.walk(value) if isinstance(n, ast.Name)) if value is not None else ():
            node = assigned(name.id, line, assigns)
            if node is not None and isinstance(value_of(node), ast.Call | ast.BinOp | ast.Name) and (
                    found := _forward(node, loss, node.lineno, assigns)) is not None:
                return found
        return None
    if _looks_like_model(value) and source is not None:
        return source, value  # logits, loss = model(x, y)
    chained = next((c for c in ast.walk(value.func) if isinstance(c, ast.Call) and _looks_like_model(c)), None)
    if chained is not None and source is not None:
        return source, chained  # model(x).pow(2).mean(): the model call its methods reduce
    base = value.func.value if isinstance(value.func, ast.Attribute) else None
    made: list[tuple[ast.AST, ast.Call]] = []  # criterion(out, y), out.pow(2).mean(): the calls that made them
    for arg in [*value.args, *([base] if base is not None and not _is_model(base) else [])]:  # a model's own
        # assignment (`model = wrap(inner_model)`) is where it is built, never what it output
        inner = arg
        while isinstance(inner, ast.Attribute | ast.Subscript | ast.Call) and not isinstance(inner, ast.Name):
            inner = inner.func if isinstance(inner, ast.Call) else inner.value
        if isinstance(inner, ast.Name):
            node = assigned(inner.id, line, assigns)
            for _ in range(4):  # `pred = torch.chunk(pred, 2)`, `out = {"total": out}`: a rewrap of what was made
                held = value_of(node) if node is not None else None  # above
                call = _call_of(held)
                if node is None or held is None or call is not None and _looks_like_model(call) or not any(
                        isinstance(n, ast.Name) and n.id == inner.id for n in ast.walk(held)):
                    break
                node = assigned(inner.id, node.lineno, assigns)
            call = _call_of(value_of(node)) if node is not None else None
            if call is not None and not _looks_like_model(call):  # recons = Signal(out["audio"]): out = model(x)
                call, node = _made_by_model(call, node, assigns) or (call, node)
            if call is not None:
                made.append((node, call))  # type: ignore[arg-type]
    by_model = next(((n, c) for n, c in made if _looks_like_model(c)), None)
    if by_model is not None:  # the model's output over the target's: `mse_loss(model_pred, target)`
        return by_model
    if base is not None and _is_model(base) and source is not None:
        return source, value  # `model.loss(reals, noise, sigma)`: a method of the model runs it (not where it is built)
    if made:
        return made[0]
    if source is not None and (value.args or any(_is_model(k.value) for k in value.keywords)):
        return source, value  # `model.loss(x)`, `loss_fn(net=ddp, images=x)`: the call runs the model
    return None


# what a model, or the name it is held by, is called (`model`, `self.net`, `ddp`, `unet`)
_MODEL_WORDS = re.compile(r"model|net|module|forward|engine|transformer|gpt|llm|unet|vae|generator|discriminator"
                          r"|encoder|decoder|backbone|denoiser|policy|ddp", re.I)


def _is_model(node: ast.expr) -> bool:
    """A name that holds the trained model (`net=ddp`): one whose parameters the module trains, or named so."""
    return isinstance(node, ast.Name) and (node.id in TRAINED.get() or bool(_MODEL_WORDS.search(node.id)))


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
            above = assigned(base.id, node.lineno, assigns)
            made = _call_of(value_of(above)) if above is not None else None
            if made is not None and above is not None and _looks_like_model(made):
                return made, above
    return None


def _looks_like_model(call: ast.Call) -> bool:
    if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Call):
        return False  # `model(x).sum()`: a reduction of what the model returned, not the model
    name = name_of(call.func).lower()
    if re.search(r"loss|criterion", name.rsplit(".", 1)[-1]):
        return False  # `gan_loss.discriminator_loss(fake, real)`: a loss over the model's output
    if name.rsplit(".", 1)[-1] in TRAINED.get():
        return True
    return bool(_MODEL_WORDS.search(name)) or name in ("self",)
