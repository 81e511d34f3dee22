"""Which branches of a module the job's resolved values rule out.

Each function (and the module's top level) is walked once with its local names followed from the
settings (`steps = args.checkpointing_steps`, then `isinstance(steps, int)`): an `if` whose test the
values decide runs only one side, and the other side's lines are dead, with the test that kills them.
Where the reading cannot decide (a call, a value a loop changes, a parameter) both sides stay live:
a line is said dead only when the values prove it.
"""

from __future__ import annotations

import ast

from .nodes import walk
from .values import UNKNOWN, Values, setting, truth

Dead = dict[int, str]  # line -> the condition, as written, that the values make false around it


def dead_lines(tree: ast.Module, values: Values) -> Dead:
    """Every line of `tree` inside a branch that `values` (settings by attribute name) never take."""
    dead: Dead = {}
    # module names a function rebinds (`global x`) or `exec` may rewrite (nanoGPT's configurator) are never
    # followed at the top level: their value there is not what the code says
    shared: set[str] | None = {n for node in walk(tree) if isinstance(node, ast.Global) for n in node.names}
    if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("exec", "globals")
           for n in walk(tree)):
        shared = None
    _Walk(values, dead, shared).body(tree.body, {})
    for node in walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            _Walk(values, dead, set()).body(node.body, {})
    return dead


class _Walk:
    def __init__(self, values: Values, dead: Dead, shared: set[str] | None) -> None:
        self.values = values
        self.dead = dead
        self.shared = shared  # names never followed; None: none at all

    def body(self, stmts: list[ast.stmt], env: dict[str, object]) -> None:
        for stmt in stmts:
            self.stmt(stmt, env)

    def stmt(self, stmt: ast.stmt, env: dict[str, object]) -> None:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return  # walked on its own, with its own locals
        if isinstance(stmt, ast.Assign):
            self.expr(stmt.value, env)
            value = self.value(stmt.value, env)
            for target in stmt.targets:
                self.assign(target, value, env)
        elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
            if stmt.value is not None:
                self.expr(stmt.value, env)
            self.assign(stmt.target, UNKNOWN if isinstance(stmt, ast.AugAssign) or stmt.value is None
                        else self.value(stmt.value, env), env)
        elif isinstance(stmt, ast.If):
            self.branch(stmt.test, stmt.body, stmt.orelse, env)
        elif isinstance(stmt, ast.For | ast.AsyncFor | ast.While):
            self.expr(stmt.test if isinstance(stmt, ast.While) else stmt.iter, env)
            _forget(stmt, env)  # a name the loop assigns holds any of its iterations' values
            self.body(stmt.body, env)
            self.body(stmt.orelse, env)
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            for item in stmt.items:
                self.expr(item.context_expr, env)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, UNKNOWN, env)
            self.body(stmt.body, env)
        elif isinstance(stmt, ast.Try):
            self.body(stmt.body, env)
            for handler in stmt.handlers:
                _forget(handler, env)
                self.body(handler.body, env)
            self.body(stmt.orelse, env)
            self.body(stmt.finalbody, env)
        elif isinstance(stmt, ast.Match):
            self.match(stmt, env)
        else:
            _forget(stmt, env)  # `global` and the like: what they assign is not followed
            self.expr(stmt, env)

    def match(self, stmt: ast.Match, env: dict[str, object]) -> None:
        """`match cfg.loss_fn:` on a value the job's values fix: the literal case it equals runs, the others
        (and every case after the one taken) never do. A case the reading cannot judge (a capture, a class
        pattern, a guard) before the one taken leaves the rest as they are."""
        self.expr(stmt.subject, env)
        subject = self.value(stmt.subject, env)
        said = f"{ast.unparse(stmt.subject)} is {subject!r}"
        state = "open" if subject is not UNKNOWN else "unknown"
        for case in stmt.cases:
            pattern = case.pattern
            literal = isinstance(pattern, ast.MatchValue) and isinstance(pattern.value, ast.Constant) \
                and case.guard is None
            if state == "taken":
                self.kill(case.body, said)
            elif state == "open" and literal:
                if pattern.value.value == subject:  # type: ignore[attr-defined]
                    state = "taken"
                    self.body(case.body, env)
                else:
                    self.kill(case.body, said)
            else:
                state = "unknown"
                _forget(case, env)
                self.body(case.body, dict(env))

    def branch(self, test: ast.expr, body: list[ast.stmt], orelse: list[ast.stmt], env: dict[str, object]) -> None:
        self.expr(test, env)
        holds = truth(test, self.values, env)
        if holds is True:
            self.kill(orelse, f"not ({ast.unparse(test)})")
            self.body(body, env)
        elif holds is False:
            self.kill(body, ast.unparse(test))
            self.body(orelse, env)
        else:
            after = [dict(env), dict(env)]
            self.body(body, after[0])
            self.body(orelse, after[1])
            for name in set(after[0]) | set(after[1]):
                a, b = after[0].get(name, UNKNOWN), after[1].get(name, UNKNOWN)
                env[name] = a if a is b or a is not UNKNOWN and type(a) is type(b) and a == b else UNKNOWN

    def expr(self, node: ast.AST, env: dict[str, object]) -> None:
        """The conditional expressions inside (`A(...) if args.with_tracking else B(...)`)."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.IfExp):
                holds = truth(sub.test, self.values, env)
                if holds is not None:
                    self.kill([sub.orelse if holds else sub.body],
                              f"not ({ast.unparse(sub.test)})" if holds else ast.unparse(sub.test))

    def kill(self, nodes: list[ast.stmt] | list[ast.expr], why: str) -> None:
        for node in nodes:
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                self.dead.setdefault(line, why[:160])

    def value(self, node: ast.expr, env: dict[str, object]) -> object:
        if isinstance(node, ast.Name):
            return env.get(node.id, UNKNOWN)
        if isinstance(node, ast.Constant):
            return node.value
        name = setting(node, self.values)
        return self.values[name] if name is not None else UNKNOWN

    def assign(self, target: ast.expr, value: object, env: dict[str, object]) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = UNKNOWN if self.shared is None or target.id in self.shared else value
        else:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    env[sub.id] = UNKNOWN


def _forget(node: ast.AST, env: dict[str, object]) -> None:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            env[sub.id] = UNKNOWN
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            env[sub.name] = UNKNOWN

