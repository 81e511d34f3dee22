"""One module of a job read with `ast` (never imported, never executed): `Reader` visits its tree once and
records the training facts the benchmark conversion and the correctness plan need (saves, evals, uploads,
trackers, seeds, length settings, anchors of the step), each at file:line. `read.analyze` drives it over
the entry and the repo modules the entry imports.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

from ..model import Analysis, Anchor, Fact, StepControl
from .crawl import (
    imported_modules,
)
from .guarded import LEAVES, GuardedReader
from .guards import (
    field_default,
    interval_terms,
    starts_ahead,
    tests_setting,
)
from .hydra_reader import HydraReader
from .known_calls import (
    CHECKPOINTS,
    CHECKPOINTS_BY_LAST,
    CONSTANT_FLAGS,
    EVAL_CALLS,
    HF_HOOK,
    HYDRA_APP,
    NOT_EVAL,
    PL_HOOK,
    SAVE_HOOKS,
    SAVER,
    SEEDS,
    SEEDS_BY_LAST,
    TRACKERS,
    TRACKERS_BY_LAST,
    UPLOADS,
    acts_on,
)
from .lengths import BOUND, length_role
from .options import (
    OptionsReader,
    dotted_name,
    literal_text,
)
from .outputs import OUT_NAMES
from .step import QUIET_FUNCTIONS
from .tyro_config import (
    FOLDER,
    ConfigClasses,
)

TRL_PING = "TRL usage report to the Hub"  # sent as each TRL trainer is built, unless telemetry is off


class Reader(OptionsReader, GuardedReader, HydraReader, ast.NodeVisitor):
    def __init__(self, result: Analysis, rel: str, defaults: dict[str, object] | None = None,
                 classes: ConfigClasses | None = None) -> None:
        self.r = result
        self.rel = rel
        self.globals_seen = set(result.module_globals)
        self.guards: list[ast.expr] = []
        self.counted: list[bool] = []  # per guard: its `x % n == 0` counter is past the first step there
        self.blocks: list[set[str]] = []  # per statement list on the path: counters `+=`'d in it so far
        self.given: list[set[tuple[str, str]]] = []  # per statement list: (condition, counter) an `if` counted
        self.loops: list[int] = []  # where each enclosing loop's body starts in `blocks`
        self.counters: list[ast.stmt | set[str]] = []  # per enclosing loop: the loop, then (once asked for)
        # every counter `+=`'d anywhere in its body
        self.roles: set[str] = {a.role for a in result.anchors}
        self.optional: dict[str, tuple[int, int]] = {}  # role -> (its anchor's index, its function's line) when
        # found under a condition a setting decides
        self.function = 0  # the first line of the function being read (0: module level)
        self.function_node: ast.FunctionDef | ast.AsyncFunctionDef | None = None  # the function being read
        self.off_by_default: set[str] = set()  # its parameters that default to False or None
        self.imports: list[str] = []
        self.hydra_cfg: str | None = None  # the name of a @hydra.main function's config argument
        self.hydra_file: Path | None = None  # its YAML, relative to the script's folder
        self.hydra_version = ""  # its `version_base`, as written
        self.hydra_line = 0
        self.hydra_passes: set[str] = set()  # the functions the @hydra.main function hands its config (`train`)
        self.hf_classes: set[str] = set()  # the dataclasses an HfArgumentParser is given
        self.hf_parsers: set[str] = set()  # the repo's own subclasses of an HfArgumentParser (`ArgumentParserPlus`)
        self.flags_parse = False  # the entry parses flags into dataclasses
        self.file_parse = False  # ... or also a file, or keeps the words they lack
        self.hf_line = 0  # the line of the first HfArgumentParser call
        self.name_tuples: dict[str, list[str]] = {}  # `types = (ScriptArguments, SFTConfig)`: the names it holds
        self.seeded_from: dict[str, str] = {}  # `seed = args.global_seed * world + rank`: seed -> global_seed
        self.accelerate_trackers: list[int] = []  # the trackers `Accelerator(log_with=...)` names, by index
        self.log_kwargs: dict[str, ast.expr] = {}  # `kwargs["log_with"] = args.report_to`, for `Accelerator(**kwargs)`
        self.cli_function: tuple[str, int] | None = None  # a function whose parameters are the flags, and where
        self.lightning_cli = 0  # the line of a LightningCLI call
        self.classes: list[tuple[str, list[str]]] = []  # the classes being read, with their bases
        self.trainer_built: str | None = None  # file:line where an HF / TRL Trainer is built
        self.trainer_classes: set[str] = set()  # the Trainer classes built here: their modules run the step
        self.depth = 0  # functions around the node being read: 0 at module level
        self.configured = False  # an exec-style configurator has run (module level, in reading order)
        self.quiet = 0  # inside an eval function, a no_grad block or a constructor: no loss anchor
        self.local: set[str] = set()  # the module's own functions and methods
        self.aliases: dict[str, str] = {}  # `import torch as th`: th -> torch
        self.consts: dict[str, object] = {}  # names the module fixes to a literal (`read.constants`)
        self.folders: dict[str, str] = {}  # names the module fixes to a path under a relative folder (`out`)
        self.sites: dict[str, list[Fact]] = {}  # each call of one of them (`save()`, `self.save()`), as a fact
        self.far: dict[tuple[str, str], list[Fact]] = {}  # each call of another repo module's function or class,
        # by (its file, its name): `push_to_hub(...)` from `from pkg.utils import push_to_hub`
        self.repo_file: Callable[[str], str | None] = lambda module: None  # a module name -> the repo file
        self.from_names: dict[str, tuple[str, str]] = {}  # `from m import f as g`: g -> (m, f)
        self.save_hooks: set[str] = set()  # its functions handed to accelerate as save-state hooks
        self.factories: list[tuple[str, list[str], int]] = []  # (config class, fields left out, line) of each
        # `ArgumentGroupFactory(Config, exclude=[...])`: an argparse group made from a dataclass's fields
        self.ahead: set[str] = set()  # names set past 0 (`start = last + 1`): a loop from one never starts at 0
        self.fits: list[int] = []  # `trainer.train()`, `trainer.fit(model)`: a library's whole training loop
        self.spellings: dict[str, tuple[list[str], bool]] = {}  # a False-default option: its names, bare or not
        self.fit_switches: list[tuple[int, str]] = []  # (a training call's line, the setting its `if` needs)
        self.resumed: list[int] = []  # anchors at a `trainer.train(resume_from_checkpoint=...)`, until a plain one
        self.defaults = defaults if defaults is not None else {}  # class fields' defaults, all modules read
        self.config_classes = classes if classes is not None else ConfigClasses()  # tyro's sections
        self.options = 0  # the parser options this module declares

        self._dispatch = {
            ast.If: self.visit_If, ast.Import: self.visit_Import, ast.ImportFrom: self.visit_ImportFrom,
            ast.FunctionDef: self.visit_FunctionDef, ast.AsyncFunctionDef: self.visit_FunctionDef,
            ast.Assign: self.visit_Assign, ast.Call: self.visit_Call, ast.Attribute: self.visit_Attribute,
            ast.With: self.visit_With, ast.AsyncWith: self.visit_With, ast.ClassDef: self.visit_ClassDef,
            ast.For: self.visit_loop, ast.AsyncFor: self.visit_loop, ast.While: self.visit_loop,
            ast.AugAssign: self.visit_AugAssign, ast.Compare: self.visit_Compare, ast.IfExp: self.visit_IfExp,
        }

    def visit(self, node: ast.AST) -> None:
        """NodeVisitor's walk without its per-node method lookup, and leaves skipped: about twice as fast."""
        method = self._dispatch.get(type(node))
        if method is not None:
            method(node)
        else:
            self.generic_visit(node)

    def generic_visit(self, node: ast.AST) -> None:
        visit = self.visit
        for field in node._fields:  # ast.iter_child_nodes, without its two generators
            value = getattr(node, field, None)
            if isinstance(value, list):
                for child in value:
                    if isinstance(child, ast.AST) and not isinstance(child, LEAVES):
                        visit(child)
            elif isinstance(value, ast.AST) and not isinstance(value, LEAVES):
                visit(value)

    def _walk_chain(self, node: ast.expr) -> None:
        """Down `a.b.c` without a visit per link: only what ends the chain (a call, a subscript) can matter."""
        while isinstance(node, ast.Attribute):
            node = node.value
        if not isinstance(node, LEAVES):
            self.visit(node)

    # --- helpers ------------------------------------------------------------

    def anchor(self, role: str, node: ast.AST, once: bool = True, tentative: bool = False) -> None:
        """The first `role` found; a tentative one (`losses = ...`, or under a condition a setting decides)
        gives way to the next the same function has on its default path (`loss = torch.sum(losses)`)."""
        if self.quiet and role == "loss":
            return  # never a loss in an eval function, a no_grad block or a constructor
        optional = any(tests_setting(g) for g in self.guards)
        if once and role in self.roles:
            # a loss under `if args.kd_dir is not None:` (a feature a setting turns on) gives way to one the
            # same function computes on its default path (its `else:`)
            weak = self.optional.get(role)
            if weak is not None and not optional and weak[1] == self.function:
                self.r.anchors[weak[0]] = Anchor.model_construct(role=role, file=self.rel, line=node.lineno)
                if not tentative:
                    del self.optional[role]
            return
        self.roles.add(role)
        if (optional or tentative) and role in ("loss", "forward"):
            self.optional[role] = (len(self.r.anchors), self.function)
        self.r.anchors.append(Anchor.model_construct(role=role, file=self.rel, line=node.lineno))

    def _counter(self, name: str) -> bool:
        """Whether the function being read adds to `name` (`num_steps += 1`): a counter, not a setting."""
        return self.function_node is not None and any(
            isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == name
            for n in ast.walk(self.function_node))

    def fact(self, kind: str, name: str, node: ast.AST, off: str | None = None) -> None:
        getattr(self.r, kind).append(self.made(name, node, off))

    def made(self, name: str, node: ast.AST, off: str | None = None) -> Fact:
        """`name` at `node`, with the conditions it runs under here and the setting that switches it off."""
        guard = ast.unparse(self.guards[-1])[:120] if self.guards else None
        interval = None if off else self.interval_off()
        outer = interval[0] if interval else next((g for g in reversed(self.guards) if interval_terms(g)), None)
        if outer is not None and outer is not self.guards[-1]:  # the interval's `if` around it, then its own
            guard = f"{ast.unparse(outer)} ... {guard}"[:160]
        return Fact.model_construct(
            name=name, file=self.rel, line=node.lineno, off_switch=off or (interval and interval[1]) or self.guard(),
            guard=guard, counted=any(self.counted), dead=self.fixed_false(),
            every=None if off else self.fixed_interval(), unset=None if off else self.unset_flag())

    def _far_call(self, name: str) -> tuple[str, str] | None:
        """(file, name) of the repo function or class a call names through an import: `f(...)` after `from m
        import f`, `mod.f(...)` after `from pkg import mod` or `import pkg.mod`. None for a library's."""
        head, dot, rest = name.partition(".")
        if not dot:
            module, called = self.from_names.get(name, ("", ""))
        elif "." not in rest and head in self.from_names:
            module, called = ".".join(self.from_names[head]), rest
        else:
            module, _, called = name.rpartition(".")
            if module not in self.imports:
                return None
        file = self.repo_file(module) if module else None
        return (file, called) if file and file != self.rel else None

    # --- visiting -----------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        self.imports += imported_modules(node, self.rel)
        self.aliases.update((a.asname, a.name) for a in node.names if a.asname)
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        modules = imported_modules(node, self.rel)
        self.imports += modules
        if modules:
            self.from_names.update((a.asname or a.name, (modules[0], a.name)) for a in node.names)
        if node.module in ("hydra", "hydra.experimental") and {a.name for a in node.names} & HYDRA_APP \
                and self.rel == self.r.script:  # the entry's own: not `hydra.utils`' instantiate, which any library
            self.r.config_system = "hydra"  # may use, nor a library module's compose (fairseq's, under argparse)
        elif node.module and "omegaconf" in node.module and self.r.config_system not in ("hydra", "argparse") \
                and self.rel == self.r.script:  # a parser read before it is the job's (Megatron's argparse); a
            self.r.config_system = "omegaconf"  # library's own use of OmegaConf (detectron2's LazyConfig) is not
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for d in node.decorator_list:
            name = dotted_name(d.func if isinstance(d, ast.Call) else d)
            if name.endswith("hydra.main"):
                continue
            elif name.startswith(("click.", "typer")) or name.endswith(".command"):
                self.r.config_system = self.r.config_system if self.r.config_system != "unknown" else "click"
        if node.name in ("training_step", "compute_loss") and self.classes:  # the module's or trainer's override
            self.r.kind = "training"
            for n in ast.walk(node):
                if isinstance(n, ast.Return) and n.value is not None:
                    self.anchor("loss", n)
                    break
            if any("LightningModule" in b for b in self.classes[-1][1]) and "grad_clip" not in self.roles:
                self.roles.add("grad_clip")
                self.r.anchors.append(Anchor(role="grad_clip", file=self.rel, line=node.lineno,
                                             text=f"{PL_HOOK} of {self.classes[-1][0]}"))
        # the parameters themselves hold nothing to read; their defaults and the decorators might
        visit = self.visit
        for child in (*node.decorator_list, *node.args.defaults, *node.args.kw_defaults):
            if child is not None and not isinstance(child, LEAVES):
                visit(child)
        quiet = bool(QUIET_FUNCTIONS.search(node.name)) or any(
            "no_grad" in dotted_name(d) or "inference_mode" in dotted_name(d) for d in node.decorator_list)
        self.quiet += quiet
        self.depth += 1
        # its body runs when called
        outer = (self.blocks, self.given, self.loops, self.counters, self.function, self.off_by_default,
                 self.function_node)
        self.blocks, self.given, self.loops, self.counters, self.function = [], [], [], [], node.lineno
        self.function_node = node
        self.off_by_default = {a.arg for a, d in zip(node.args.args[::-1], node.args.defaults[::-1], strict=False)
                               if isinstance(d, ast.Constant) and d.value in (False, None)}
        self.statements(node.body)
        (self.blocks, self.given, self.loops, self.counters, self.function, self.off_by_default,
         self.function_node) = outer
        self.depth -= 1
        self.quiet -= quiet

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.classes.append((node.name, [dotted_name(b) for b in node.bases]))
        fields = {}
        for stmt in node.body:  # a config class's field defaults: a key a YAML file leaves out takes its default
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                fields[stmt.target.id] = dotted_name(stmt.annotation)
                if stmt.value is not None:
                    self.defaults.setdefault(stmt.target.id, field_default(stmt.value))
                if FOLDER.search(stmt.target.id) and isinstance(stmt.value, ast.Constant) and isinstance(
                        stmt.value.value, str) and stmt.value.value and not stmt.value.value.startswith(("/", "~")):
                    self.config_classes.folders.append((".".join(c for c, _ in self.classes), stmt.target.id,
                                                        self.rel, stmt.lineno))
                if length_role(stmt.target.id):
                    self.config_classes.lengths.append((".".join(c for c, _ in self.classes), stmt.target.id,
                                                        self.rel, stmt.lineno, literal_text(stmt.value)
                                                        if stmt.value is not None else None))
        if fields:  # tyro makes `--section.name` of each field, `--section.no-name` of each bool
            qualified = ".".join(c for c, _ in self.classes)
            self.config_classes.fields.setdefault(qualified, {}).update(fields)
            seed = next((s for s in node.body if isinstance(s, ast.AnnAssign) and dotted_name(s.target) == "seed"),
                        None)
            if seed is not None:
                self.config_classes.where.setdefault(qualified, (self.rel, seed.lineno))
        self.generic_visit(node)
        self.classes.pop()

    def visit_Compare(self, node: ast.Compare) -> None:
        """`self.step < self.config.training.steps`: a bound a tyro job's step flag may name."""
        for side in (node.left, *node.comparators):
            if isinstance(side, ast.Attribute) and BOUND.match(side.attr) and "epoch" not in side.attr:
                chain = dotted_name(side)
                if chain.count(".") >= 2:
                    self.config_classes.bounds.setdefault(chain, (self.rel, node.lineno))
        self.generic_visit(node)

    def visit_With(self, node: ast.With) -> None:
        quiet = any("no_grad" in dotted_name(i.context_expr) or "inference_mode" in dotted_name(i.context_expr)
                    for i in node.items)
        if quiet and not self.quiet and self.loops and any(interval_terms(g) for g in self.guards):
            # the model run under no_grad every n steps inside the loop (build-nanogpt's validation loss, its
            # HellaSwag pass and its samples, written inline): an eval, where it is written
            call = next((n for n in ast.walk(node) if isinstance(n, ast.Call)
                         and _MODEL_CALL.search(dotted_name(n.func).lower())), None)
            if call is not None:
                self.fact("evals", f"{dotted_name(call.func)} under no_grad", call)
        self.quiet += quiet
        self.generic_visit(node)
        self.quiet -= quiet

    def visit_Assign(self, node: ast.Assign) -> None:
        targets = node.targets
        if len(targets) == 1 and isinstance(t := targets[0], ast.Subscript) and isinstance(t.value, ast.Name) \
                and isinstance(t.slice, ast.Constant) and t.slice.value == "log_with":
            self.log_kwargs[t.value.id] = node.value
        if len(targets) == 1 and isinstance(targets[0], ast.Name) and isinstance(node.value, ast.Tuple | ast.List):
            self.name_tuples[targets[0].id] = [e.id for e in node.value.elts if isinstance(e, ast.Name)]
        if len(targets) == 1 and isinstance(targets[0], ast.Name) and "seed" in targets[0].id.lower() and (read := [
                n.attr for n in ast.walk(node.value) if isinstance(n, ast.Attribute) and "seed" in n.attr.lower()]):
            self.seeded_from[targets[0].id] = read[0]
        if len(targets) == 1 and starts_ahead(node.value):
            self.ahead.add(ast.unparse(targets[0]))
        elif len(targets) == 1:  # `step = 0` again: from 0 now
            self.ahead.discard(ast.unparse(targets[0]))
        names = [n.id for t in targets for n in (t.elts if isinstance(t, ast.Tuple | ast.List) else (t,))
                 if isinstance(n, ast.Name)]
        callee = dotted_name(node.value.func) if isinstance(node.value, ast.Call) else ""
        constructor = callee.split(".")[-1][:1].isupper()  # loss_fn = nn.MSELoss() builds, does not compute
        if any("loss" in n.lower() and not _FUNCTION_NAME.search(n) for n in names) \
                and isinstance(node.value, ast.Call | ast.BinOp) and not constructor:
            if _MODEL_CALL.search(callee.lower()):
                self.anchor("forward", node)  # `model(x)`, `self.model.forward(x)`; not `loss_func_modelopt(...)`
            self.anchor("loss", node, tentative="loss" not in names)  # `losses = ...`, reduced below
        elif isinstance(node.value, ast.Call):
            callee = dotted_name(node.value.func).lower()
            if callee.split(".")[-1] in ("model", "net", "module", "forward"):  # not get_model(): a constructor
                self.anchor("forward", node)
        if not self.depth and self.rel == self.r.script and not self.configured:
            # what `--key=value` may set in a configurator script: the globals it finds when it runs
            new = [n for n in dict.fromkeys(names) if n not in self.globals_seen][:500]
            self.r.module_globals += new
            self.globals_seen.update(new)  # a set: a list searched per assignment was quadratic in the module
        # plain constants at module level: configurator scripts (nanoGPT) and constant configs
        for t in targets:
            if isinstance(t, ast.Name) and not self.guards:
                # a function's local is a setting only when written as a number (`epochs = 10`), not when computed
                # from others (`max_iters = max_tokens // tokens_per_iter`), a placeholder (`accumulator = None`)
                # or a counter (`num_steps = 0`, then `num_steps += 1`)
                if (role := length_role(t.id)) and (not self.depth or isinstance(node.value, ast.Constant) and
                                                    isinstance(node.value.value, int | float)
                                                    and not self._counter(t.id)):
                    self.r.step_controls.append(StepControl(name=t.id, file=self.rel, line=node.lineno,
                                                            default=literal_text(node.value), role=role))
                if OUT_NAMES.search(t.id) and isinstance(node.value, ast.Constant) and isinstance(
                        node.value.value, str):
                    self.fact("output_dirs", t.id, node, f"--{t.id}=..." if self.r.config_system == "configurator"
                              else None)
                if t.id in CONSTANT_FLAGS and isinstance(node.value, ast.Constant):
                    self.r.flags.setdefault(t.id, literal_text(node.value))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = dotted_name(node.func)
        head, dot, rest = name.partition(".")
        if dot and head in self.aliases:  # `import torch as th`: `th.save` is `torch.save`
            name = f"{self.aliases[head]}.{rest}"
        last = name.rsplit(".", 1)[-1]
        if last in self.local and (name == last or name == "self." + last):
            self.sites.setdefault(last, []).append(self.made(last, node))
        elif (far := self._far_call(name)) is not None:
            self.far.setdefault(far, []).append(self.made(far[1], node))
        if last in SAVE_HOOKS and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in self.local:
            self.save_hooks.add(node.args[0].id)
        if any(k.arg == "device_map" for k in node.keywords):  # `from_pretrained(..., device_map="auto")`: the
            self.r.parallelism.append(Fact(name="device_map", file=self.rel, line=node.lineno))  # model over GPUs
        if not acts_on(last) and last not in self.hf_parsers:
            self._walk_chain(node.func)
            visit = self.visit
            for arg in node.args:
                if not isinstance(arg, LEAVES):
                    visit(arg)
            for k in node.keywords:
                if not isinstance(k.value, LEAVES):
                    visit(k.value)
            return
        self._config(node, name, last)
        if last == "backward":
            self.r.kind = "training"
            self.anchor("backward", node)
        elif last == "step" and name != "step":
            base = name[: -len(".step")].lower()
            if "sched" in base:
                self.anchor("scheduler", node)
            elif "optim" in base or base in ("opt", "scaler", "self.optimizer", "accelerator") or "opt" in base:
                self.anchor("optimizer_step", node)
        elif last == "optimize" and any("opt" in ast.unparse(a).lower() for a in node.args):
            self.anchor("optimizer_step", node)  # a mixed-precision helper's `mp_trainer.optimize(opt)` steps it
        elif "clip_grad" in last:  # torch's, and a library's own (`dispatch_clip_grad`, `clip_grad_norm_fp32`)
            self.anchor("grad_clip", node)
        elif name.endswith("compile") and name.startswith("torch") or name == "compile":
            self.anchor("compile", node)
        elif last == "generate":
            self.anchor("forward", node)
        elif last in ("DistributedDataParallel", "DDP", "FullyShardedDataParallel", "FSDP", "fully_shard") or \
                name in ("deepspeed.initialize", "accelerator.prepare"):
            self.r.parallelism.append(Fact(name=last if last != "initialize" else "deepspeed", file=self.rel,
                                           line=node.lineno))
        elif last == "DataLoader":
            self.r.loaders.append(Fact(name="DataLoader", file=self.rel, line=node.lineno))
        for suffix in TRACKERS_BY_LAST.get(last, ()):
            if name == suffix or name.endswith("." + suffix) or (suffix == last and "." not in suffix):
                tracker, env = TRACKERS[suffix]
                self.fact("trackers", tracker, node, self.guard() or env)
                folder = node.args[0] if node.args and last == "SummaryWriter" else next(
                    (k.value for k in node.keywords if k.arg in ("log_dir", "logdir")), None)
                if isinstance(folder, ast.Constant | ast.JoinedStr):  # `SummaryWriter(f"runs/{name}")`: where it
                    self.r.output_dirs.append(Fact.model_construct(  # writes, relative, by no setting
                        name=literal_text(folder) or "", file=self.rel, line=node.lineno, off_switch=None))
        saved = next((c for c in CHECKPOINTS if name == c or name.endswith("." + c)), None) \
            if last in CHECKPOINTS_BY_LAST else None
        if not saved and last.startswith("save_") and SAVER.search(name.rsplit(".", 1)[0]):
            saved = last  # a checkpoint saver's own method (`saver.save_recovery(epoch)`)
        if saved:
            self.fact("checkpoints", saved if last == "save" else last, node)
        if last in UPLOADS:
            self.fact("uploads", last, node)
        if last in ("log", "add_scalar", "log_dict", "log_metrics") and node.args:
            self._logged(node.args[0])
        if last in SEEDS_BY_LAST and any(name == s or name.endswith("." + s) for s in SEEDS):
            arg = node.args[0] if node.args else None
            off = self.hydra_key(arg) if arg is not None else None
            if off is None and isinstance(arg, ast.Attribute):
                off = self.flag_for(arg.attr)
            elif off is None and isinstance(arg, ast.Name):  # a local made from the seed setting: that setting's
                off = self.flag_for(self.seeded_from.get(arg.id, arg.id))
            # the seed's own setting only: never the flag of the `if` around it (`if device_type == "cuda":`)
            self.r.seeds.append(self.made(name, node, off).model_copy(update={"off_switch": off}))
            if name == "torch.manual_seed" and isinstance(arg, ast.Constant) and not self.guards:
                self.r.fixed_seed = self.r.fixed_seed or f"{self.rel}:{node.lineno}"
        if EVAL_CALLS.search(last) and not NOT_EVAL.search(last) and last not in ("eval",) \
                and not name.startswith(("torch.", "ast.")):
            self.fact("evals", last, node)
        elif last.startswith("generate") and any(interval_terms(g) for g in self.guards):
            self.fact("evals", last, node)  # samples drawn every n steps (`step % sample_every == 0`): an eval's cost
        elif last == "add_callback" and node.args and EVAL_CALLS.search(
                re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_",
                       callback := dotted_name(node.args[0]).split(".")[-1])):
            self.fact("evals", callback, node)  # `trainer.add_callback(MMLUEvalCallback)`: it evaluates in `train()`
        if last == "makedirs" and node.args:
            arg = node.args[0]
            label = dotted_name(arg) or (literal_text(arg) or "")
            # the folder's own flag; never the `if` around the call (`if master_process:` is no folder)
            flag = self.flag_for(arg.attr) if isinstance(arg, ast.Attribute) else self.flag_for(arg.id) \
                if isinstance(arg, ast.Name) else None
            off = flag if flag != label else None
            if isinstance(arg, ast.Name) and off is None and (folder := self.folders.get(arg.id)):
                label = repr(folder)  # `log_dir = "log"` at the top, then `os.makedirs(log_dir)`: a fixed folder
            self.r.output_dirs.append(Fact.model_construct(name=label, file=self.rel, line=node.lineno,
                                                           off_switch=off))
        if last == "mkdir" and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
                and (folder := self.folders.get(node.func.value.id)):  # `out_dir.mkdir()`, out_dir = Path("out") / x
            self.r.output_dirs.append(Fact.model_construct(name=repr(folder), file=self.rel, line=node.lineno,
                                                           off_switch=None))
        if last.endswith("Trainer") and any(m.split(".")[0] in ("transformers", "trl") for m in self.imports) \
                and not last.startswith("Lightning"):  # a subclass of the HF one (LLaVATrainer) is one
            self.r.kind = "training"
            self.trainer_built = self.trainer_built or f"{self.rel}:{node.lineno}"
            self.trainer_classes.add(last)
            if last != "Trainer" and any(m.split(".")[0] == "trl" for m in self.imports) \
                    and not any(u.name == TRL_PING for u in self.r.uploads):  # TRL's trainers report their use
                self.r.uploads.append(self.made(TRL_PING, node, "HF_HUB_DISABLE_TELEMETRY=1"))  # to the Hub
        if last == "init_trackers":  # where accelerate starts the trackers it was given, under this call's `if`
            for i in self.accelerate_trackers:
                old, new = self.r.trackers[i], self.made(self.r.trackers[i].name, node)
                if not (new.off_switch or "").startswith("-"):  # `if accelerator.is_main_process:` is no switch
                    new.off_switch = old.off_switch
                self.r.trackers[i] = new
            self.accelerate_trackers = []
        if last == "fit" or last == "train" and name.endswith(("trainer.train", "runner.train")):
            self.r.kind = "training"
            self.fits.append(node.lineno)  # the library's loop runs in this call: what follows it runs after
            self._trains_with(node)
            if last == "train" and self.trainer_built:  # the library runs the loop: read it from its log
                built = f"the Trainer of line {self.trainer_built.rsplit(':', 1)[1]}"  # one file:line a row
                hooks = {"loss": f"{HF_HOOK}, attached to {built}", "grad_clip": f"{HF_HOOK}, attached to {built}",
                         "forward": f"a forward hook on the model {built} runs in Trainer.compute_loss",
                         "batch": f"the inputs Trainer.training_step gives the model (a forward pre-hook, {built})"}
                resumes = any(k.arg == "resume_from_checkpoint" for k in node.keywords)
                for role, hook in hooks.items():
                    # the Trainer's loop calls the model: a `model(...)` matched by name in another module (a patch
                    # module's self-test, a generation helper) is not the step's forward; replaced where it stands
                    stray = next((i for i, a in enumerate(self.r.anchors) if a.role == role and a.file != self.rel
                                  and role in ("forward", "batch") and not a.text), None)
                    if role not in self.roles or stray is not None:
                        self.roles.add(role)
                        made = Anchor(role=role, file=self.rel, line=node.lineno, text=hook)
                        if stray is None:
                            self.r.anchors.append(made)
                        else:
                            self.r.anchors[stray] = made
                        if resumes:  # `if <checkpoints found>: trainer.train(resume_from_checkpoint=True)`
                            self.resumed.append(len(self.r.anchors) - 1 if stray is None else stray)
                    elif not resumes and self.resumed:  # the plain `else: trainer.train()`: the default path
                        for i in self.resumed:
                            self.r.anchors[i] = self.r.anchors[i].model_copy(update={"line": node.lineno})
                self.resumed = self.resumed if resumes else []
        self.generic_visit(node)

    def _logged(self, arg: ast.expr) -> None:
        """Metric names from `wandb.log({"loss": ...})`, `add_scalar("train/loss", ...)`, `self.log("acc", ...)`."""
        keys = arg.keys if isinstance(arg, ast.Dict) else [arg]
        for k in keys:
            if isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value not in self.r.logged \
                    and len(self.r.logged) < 20 and re.fullmatch(r"[\w/. -]{1,40}", k.value):
                self.r.logged.append(k.value)

    def hooks_run_in_save_state(self) -> None:
        """A save-state hook (`accelerator.register_save_state_pre_hook(save_model_hook)`) runs inside
        `accelerator.save_state()` and only there: those calls are its calls, so the save in it takes their
        rows (off with `--checkpointing_steps`), never one of its own that says it runs whenever reached."""
        states = [c for c in self.r.checkpoints if c.file == self.rel and c.name == "save_state"]
        for hook in self.save_hooks if states else ():
            self.sites.setdefault(hook, []).extend(states)


_MODEL_CALL = re.compile(r"(^|[._])model($|[._])|(net|forward)$")  # `model(x)`, `self.model.forward(x)`, `net(x)`
_FUNCTION_NAME = re.compile(r"(func|fn|function|fns)(_|$)", re.I)  # `loss_func_kd = build(...)`: a function
