"""Reading a job: the crawl from its entry through the repo modules it imports (to a bounded depth, in a
bounded time), one `source.Reader` pass per module, then the passes over what they found together: the
training step and loop, what each effect reaches, the config system's own settings, and what the command
must give. Never imported, never executed; source that does not parse gets a plain text scan (`partial`).
"""

from __future__ import annotations

import ast
import gc
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ..infra.checkout import find_root
from ..infra.files import digest, rel_path
from ..infra.visible import gated
from ..model import Analysis, Anchor, Fact, Kind, Need, Required, Span, StepControl, as_kind
from .branches import dead_lines
from .config_file import interval_set, leaves_off, named_files, placeholders
from .constants import fixed_constants
from .crawl import (
    as_module,
    class_finder,
    imported_modules,
    mentioned_names,
    module_path,
    read_source,
)
from .deepspeed_config import named_configs, read_config
from .dict_options import dict_flags
from .frameworks import factory_flags, hf_arguments, lightning_cli, signature_flags
from .guards import (
    dead_by_values,
    loop_of_the_optimizer_step,
    optimizer_steps,
    step_by_values,
    switches_now_known,
    unset_now_known,
)
from .hydra_config import add_switches, compose, hydra_defaults, hydra_targets
from .inputs import cwd_reads, env_data_roots, files_read, paths_needed, required_by_use
from .launch import add_needs, process_signals
from .lengths import length_role
from .loop_bound import assigned_at_run_time, break_bound, header_reads
from .needs import argv_required, dataclass_required, own_options, read_needs, submits
from .nodes import walk
from .options import COMPUTED, HF_PARSERS
from .outputs import relative_folders
from .pins import installed_or_pinned
from .precision import precision_signals
from .reach import (
    ModuleDefs,
    drop_unreached,
    drop_unreached_options,
    eval_helper_calls,
    evaluates,
    evaluating_callback,
    lift_to_callers,
    summarize,
    train_calls,
)
from .source import Reader
from .step import ROLES, compute_loss_lines, find_step, inner_loop, lightning_step, loop_of, name_of
from .switches import switch_off
from .systems.modules import config_targets
from .systems.registry import refine
from .tyro_config import (
    ConfigClasses,
    nested_lengths,
    nested_output,
    nested_seed,
    nested_step,
    nested_switches,
)
from .values import dest, given_values, resolved, settings_objects
from .writes import checkpoint_read, folder_flags, path_prefixes, root_flags

FOLLOW_DEPTH = 2  # how many imports deep the reading follows the repo's own modules
# Config systems whose flags the code may not show in full (classes built in other packages, flags made
# when the job runs): there a step flag the documented command gives is taken at its word.
FLAGS_UNREAD = ("tyro", "jsonargparse", "omegaconf", "unknown")
_MAIN = re.compile(r"""^if\s+__name__\s*==\s*['"]__main__['"]""", re.M)


def _text_scan(result: Analysis, text: str, rel: str) -> None:
    """What a plain line scan can still find in source that does not parse."""
    patterns = (
        ("backward", r"\.backward\("), ("optimizer_step", r"optim\w*\.step\("), ("loss", r"\bloss\w*\s*="),
        ("forward", r"\bmodel\(|\.generate\("), ("grad_clip", r"clip_grad_"), ("compile", r"torch\.compile\("),
    )
    seen = set()
    for n, line in enumerate(text.splitlines(), 1):
        for role, pat in patterns:
            if role not in seen and re.search(pat, line):
                seen.add(role)
                result.anchors.append(Anchor(role=role, file=rel, line=n))
        if "wandb.init" in line:
            result.trackers.append(Fact(name="wandb", file=rel, line=n, off_switch="WANDB_MODE=disabled"))
        if "torch.save(" in line or "save_pretrained(" in line:
            result.checkpoints.append(Fact(name="checkpoint", file=rel, line=n))
    if "backward" in seen:
        result.kind = "training"


def _command_step_flag(command: Sequence[str]) -> StepControl | None:
    """The step count's flag as the job's documented command gives it (`--training.steps 763`), for a
    parser whose flags are not all read from the code (a tyro config in classes built elsewhere): the
    command proves the flag exists."""
    for i, word in enumerate(command):
        name, eq, value = word.partition("=")
        last = name.lstrip("-").split(".")[-1].replace("-", "_")
        if name.startswith("--") and length_role(name) == "bound" and "epoch" not in last:
            value = value if eq else command[i + 1] if i + 1 < len(command) else ""
            if value.isdigit():
                return StepControl(name=name, file="the job's command", line=0, default=value)
    return None


READ_BUDGET_S = 60.0  # the whole reading, the CLI's too; the app's child is stopped at 120 s


def _out_of_time(result: Analysis, skipped: list[str]) -> None:
    """The reading's time is spent: the modules not yet read are named, never silently dropped."""
    names = list(dict.fromkeys(skipped))
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    result.notes.append(f"reading stopped after {READ_BUDGET_S:g} s; not read: {', '.join(names[:5])}{more}")


def _step_under_values(result: Analysis, tree: ast.Module, stepped_in: str, command: Sequence[str]) -> None:
    """The step read again in the module it sits in, past the branches the job's values never take there
    (`match self.cfg.loss_fn:` whose other cases backpropagate other losses): only the entry's branches were
    judged while the flags were not all known."""
    dead = dead_lines(tree, resolved(result.flags, command, settings_objects(tree)))
    again = find_step(tree, stepped_in, dead, given_values(command)) if dead else None
    if again:
        found = {a.role for a in again}
        stale = [a for a in result.anchors if a.file == stepped_in and (a.role in found or a.line in dead)]
        result.anchors = [a for a in result.anchors if a not in stale] + again  # a row in a branch never taken goes


def analyze_script(script: str | Path, repo_root: str | Path | None = None, command: Sequence[str] = (),
                   called: tuple[str, str] | None = None, installed: Mapping[str, str] | None = None) -> Analysis:
    """Read `script` (and the repo modules it imports) and return its facts; never raises on bad input.
    `command`: the job's arguments as its command gives them (a Hydra app's group choices count);
    `called`: (the CLI, the function) when a console script's dispatcher makes the flags from a function
    of `script` (`("jsonargparse", "setup")`); `installed`: the versions of libraries in the job's environment
    (`{"transformers": "4.38.2"}`), which decide the flags a library's parser takes over the repo's pins."""
    # A syntax tree is millions of objects with no cycles; the cyclic collector rescanning them while
    # they are built made a 40,000-line parse 2.5 times slower. Plain reference counting frees them.
    paused = gc.isenabled()
    gc.disable()
    try:
        return gated(_analyze(Path(script), repo_root, command, called, installed or {}))
    finally:
        if paused:
            gc.enable()


def hf_subclasses(tree: ast.Module, find: Callable[[str], ast.ClassDef | None]) -> set[str]:
    """The parser classes a module calls that the repo derives from an HfArgumentParser (open-instruct's
    `ArgumentParserPlus(HfArgumentParser)`): each parses flags into dataclasses as its base does."""
    called = {name_of(n.func).split(".")[-1] for n in walk(tree) if isinstance(n, ast.Call)}
    return {c for c in called if "Parser" in c and c not in HF_PARSERS and (cls := find(c)) is not None
            and any(name_of(b).split(".")[-1] in HF_PARSERS for b in cls.bases)}


def _own_compute_loss(result: Analysis, lines: list[Anchor], fits: list[Span]) -> None:
    """The loss and forward rows the Trainer's hooks stood for (at the `trainer.train()` that runs the loop),
    moved to the repo's `compute_loss`."""
    trained = {(f.file, f.start) for f in fits}
    for line in lines:
        at = next((i for i, a in enumerate(result.anchors) if a.role == line.role and (a.file, a.line) in trained),
                  None)
        if at is not None:
            result.anchors[at] = line


def _passed_on(tree: ast.Module, rel: str, names: set[str]) -> set[str]:
    """The imports (as `imported_modules` spells them) of a module that hand `names` on: a package `__init__`'s
    `from .workflow import run_sft` for the `run_sft` imported from the package, or the module of the Trainer
    class the module builds and trains. Each is followed as deep as the module itself: an `__init__` that
    re-exports is no step further from the entry, and the Trainer's `compute_loss` is where the step runs."""
    if not names:
        return set()
    passed: set[str] = set()
    for node in walk(tree):
        if isinstance(node, ast.ImportFrom):
            hit = [a.name for a in node.names if (a.asname or a.name) in names]
            if hit:
                mod = imported_modules(node, rel)[0]
                passed |= {mod, *(f"{mod}.{name}" for name in hit)}
    return passed


def _in_a_step_method(modules: list[ModuleDefs], anchor: Anchor) -> bool:
    """Whether an anchor sits in a function named `step` (an optimizer wrapper's, which the loop's `.step()`
    runs)."""
    module = next((m for m in modules if m.file == anchor.file), None)
    owner = module.innermost(anchor.line) if module is not None else None
    return owner is not None and owner.name == "step"


def _kept_on(result: Analysis, entry: tuple[ast.Module, str] | None) -> None:
    """A switch the job trains only with (`if opt.train: trainer.fit(...)`, `if args.do_train:` around
    `trainer.train()` and the `save_state()` after it) is never a row's way off: switching it off would switch
    the training off with the save."""
    on = {dest(s) for n in result.needs if n.code == "trains_with" for s in (*n.spellings, *n.words)}
    if entry is not None:
        on |= _training_guards(*entry, result)
    for facts in (result.checkpoints, result.evals, result.trackers, result.uploads, result.output_dirs):
        for i, f in enumerate(facts):
            if f.off_switch and dest(f.off_switch.split(" ")[0]) in on:
                facts[i] = f.model_copy(update={"off_switch": None})


_MODEL = re.compile(r"(^|_)(model|net|network)$", re.I)  # `model`, `base_model`: not `model_args`


def _late_seeds(tree: ast.Module, rel: str, result: Analysis) -> None:
    """A seed call of the entry that comes after its function builds the model (`model, tokenizer =
    get_accelerate_model(args)`, then `set_seed(args.seed)`): the weights it initialises (LoRA adapters, a new
    head) are drawn unseeded, so the seed flag alone does not give the same answer twice."""
    for i, seed in enumerate(result.seeds):
        if seed.file != rel:
            continue
        scope = next((f for f in walk(tree) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                      and f.lineno < seed.line <= (f.end_lineno or 0)
                      and not any(isinstance(g, ast.FunctionDef | ast.AsyncFunctionDef) and g is not f
                                  and g.lineno < seed.line <= (g.end_lineno or 0) for g in ast.walk(f))), None)
        built = next((n for n in (scope.body if scope is not None else tree.body)
                      if isinstance(n, ast.Assign) and n.lineno < seed.line and isinstance(n.value, ast.Call)
                      and any(isinstance(t, ast.Name) and _MODEL.search(t.id)
                              for target in n.targets for t in ast.walk(target))), None)
        if built is not None:
            result.seeds[i] = seed.model_copy(update={"late": f"{rel}:{built.lineno}"})


def _training_guards(tree: ast.Module, rel: str, result: Analysis) -> set[str]:
    """The names the `if`s around the entry's training (its call of the trainer, or its loop) test."""
    lines = [c.start for c in result.train_calls if c.file == rel]
    if result.train_loop is not None and result.train_loop.file == rel:
        lines.append(result.train_loop.start)
    names: set[str] = set()
    for node in walk(tree) if lines else ():
        if isinstance(node, ast.If) and any(node.body[0].lineno <= n <= (node.body[-1].end_lineno or 0)
                                            for n in lines):
            names |= {n.attr if isinstance(n, ast.Attribute) else n.id for n in ast.walk(node.test)
                      if isinstance(n, ast.Attribute | ast.Name)}
    return names


def _analyze(script: Path, repo_root: str | Path | None, command: Sequence[str],
             called: tuple[str, str] | None, installed: Mapping[str, str]) -> Analysis:
    root = Path(repo_root) if repo_root else find_root(script.parent)
    result = Analysis(script=rel_path(script, root))
    queue = [(script, 0)]
    done: set[Path] = set()
    step = None  # the training step: in the entry, else in the first module it reaches that has one
    stepped: tuple[ast.Module, str] | None = None  # that module, when it is not the entry
    submitter: Need | None = None  # where the entry, or a module it calls, queues the job on a cluster
    mains: list[Path] = []  # modules it reaches that train and run as `__main__`: what a submitter queues
    hydra_line = ("", 0)  # where the entry's composed Trainer runs: its `fit()`, else its `@hydra.main`
    built: set[str] = set()  # the Trainer classes the modules read so far build
    dispatched: Kind | None = None  # the CLI a console script's dispatcher reads the entry's function with
    modules: list[ModuleDefs] = []  # each parsed module's functions: which of them the job reaches
    beyond: list[Path] = []  # modules imported past FOLLOW_DEPTH: their names count as used
    helpers: list[tuple[ModuleDefs, dict[str, list[Fact]]]] = []  # each module's calls of its own functions
    far_calls: dict[tuple[str, str], list[Fact]] = {}  # (file, name) -> its calls from every module read
    evaluators: set[tuple[str, str]] = set()  # (file, name) of each function that evaluates a model
    resolved_files: dict[str, str | None] = {}

    def repo_file(module: str) -> str | None:  # an imported module -> the repo file it is, if it is one
        if module not in resolved_files:
            p = module_path(root, module, script.parent)
            last = module.rsplit(".", 1)[-1]  # the module itself, not a package `module_path` fell back to
            resolved_files[module] = rel_path(p, root) if p is not None and last in (p.stem, p.parent.name) else None
        return resolved_files[module]

    defaults: dict[str, object] = {}  # config class fields' defaults (`save_final_state: bool = True`)
    classes = ConfigClasses()  # the config classes' fields, all modules read: a tyro job's sections
    fits: list[Span] = []  # each `trainer.train()` / `.fit()` call, to the end of its function
    hydra_passes: set[str] = set()  # the functions a `@hydra.main` hands its config to
    options: dict[str, int] = {}  # each module read: how many parser options it declares
    whole = True  # every module read parsed: the walk can tell what is never reached
    entry: tuple[ast.Module, str] | None = None  # the entry's tree, once parsed
    opened: dict[str, str] = {}  # module -> why its parser's flags cannot all be known
    roots = {called[1]} if called else set()  # what calls in from outside the code (a dispatcher, a config)
    wanted: dict[Path, set[str]] = {}  # a package `__init__` -> the names imported from it
    least: dict[Path, int] = {}  # a queued module -> the nearest depth it was queued at
    deadline = time.monotonic() + READ_BUDGET_S
    while queue:
        if done and time.monotonic() > deadline:  # the entry is always read
            _out_of_time(result, [rel_path(p, root) for p, _ in queue if p.resolve() not in done])
            whole = False
            break
        path, depth = queue.pop(0)
        if path.resolve() in done:
            continue
        depth = min(depth, least.get(path.resolve(), depth))  # queued again nearer: an `__init__` passed it on
        done.add(path.resolve())
        rel = rel_path(path, root)
        result.files.append(rel)
        result.digests[rel] = digest(path)
        text, why = read_source(path)
        if why:
            result.notes.append(f"{rel}: {why}")
        if text is None or text == "":
            result.partial = result.partial or depth == 0
            continue
        try:
            tree = ast.parse(text, filename=rel)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
            if depth == 0:
                result.partial = True
            line = getattr(e, "lineno", None)
            result.notes.append(f"{rel}: does not parse{f' (line {line})' if line else ''}; text scan only")
            whole = False
            _text_scan(result, text, rel)
            continue
        if why and depth == 0 and "not UTF-8" not in why:
            result.partial = True
        modules.append(summarize(tree, rel, depth == 0))
        if depth == 0:
            result.computed = assigned_at_run_time(tree)
        result.processes += process_signals(tree, rel, text, depth == 0)
        result.precision += precision_signals(tree, rel, text, depth == 0)
        if result.checkpoint_read is None and ".checkpoint_callback." in text and (got := checkpoint_read(tree, rel)):
            result.checkpoint_read, result.checkpoint_read_if = got
        reads, downloads = cwd_reads(tree, rel)
        result.cwd_reads += reads
        result.output_dirs += downloads  # a dataset fetched into a relative folder is written there
        reader = Reader(result, rel, defaults, classes)
        reader.local = {d.name for d in modules[-1].defs} | {c.name for c in modules[-1].classes}
        reader.repo_file = repo_file
        reader.consts = fixed_constants(tree, text)
        reader.folders = relative_folders(tree)
        find_class = class_finder(tree, path, root)  # one per module: it keeps the modules it parsed
        reader.hf_parsers = hf_subclasses(tree, find_class)
        reader.hydra_passes = hydra_passes
        was_open, result.parser_open = result.parser_open, None
        try:
            reader.hydra_main(tree)
            reader.visit(tree)
            if reader.factories:
                factory_flags(reader.factories, find_class, rel, result)
            options[rel] = reader.options + len(reader.factories)
            reader.hooks_run_in_save_state()
            helpers.append((modules[-1], reader.sites))
            for key, calls in reader.far.items():
                far_calls.setdefault(key, []).extend(calls)
            for name, calls in reader.sites.items():  # the module's own calls of its functions, by (file, name)
                far_calls.setdefault((rel, name), []).extend(calls)
            evaluators |= {(rel, f.name) for f in tree.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                           and evaluates(f) or isinstance(f, ast.ClassDef) and evaluating_callback(f)}
            fits += [Span(file=rel, start=n, end=c.end if (c := modules[-1].innermost(n)) else 10**9)
                     for n in reader.fits]
        except RecursionError:
            result.partial = True
            result.notes.append(f"{rel}: nested too deeply; facts may be missing")
        if result.parser_open:  # said only of the job's own parser (below), not of one a library builds
            opened.setdefault(rel, result.parser_open)
        result.parser_open = was_open
        if step is None and "backward" in text:
            step = find_step(tree, rel, named=given_values(command))
            stepped = (tree, rel) if step and depth else None  # a module the entry imports: judged again below
            backward = next((x.line for x in step or [] if x.role == "backward"), None)
            spans = loop_of(tree, backward, stepped=optimizer_steps(text), text=text) if backward else None
            if spans and backward:
                result.train_loop = Span(file=rel, start=spans[0][0], end=spans[0][1])
                result.train_scope = Span(file=rel, start=spans[1][0], end=spans[1][1])
                result.loop_reads = header_reads(tree, spans[0][0])
                local, feeds = break_bound(tree, spans[0][0])
                if local:  # the loop stops at a bound its function computes: what it reads counts as read
                    result.loop_bound_local = local
                    result.loop_reads += [r for r in feeds if r not in result.loop_reads]
                if depth:
                    result.computed += [n for n in assigned_at_run_time(tree) if n not in result.computed]
                if inner := inner_loop(tree, backward, spans[0]):
                    result.train_inner = Span(file=rel, start=inner[0], end=inner[1])
        elif step is None and "def training_step" in text and "lightning" in text and ".training_step(" not in text:
            # a LightningModule's: the framework calls it and runs the backward (a trainer calling its own is no step)
            targets = [v.rsplit(".", 1)[-1] for k, v in (result.hydra.keys if result.hydra else {}).items()
                       if k.endswith("._target_")]  # the class the config builds (`task._target_`) is the one run
            step = lightning_step(tree, rel, named=[*given_values(command), *targets])
            stepped = (tree, rel) if step and depth else None
        if depth and _MAIN.search(text) and re.search(r"\.backward\(|\.step\(", text):
            mains.append(path)
        if submitter is None and depth <= 1 and "submitit" in text and (hit := submits(tree)):
            submitter = Need(code="submits", file=rel, line=hit[0], drop=own_options(tree),
                             why=f"queues the job on Slurm through submitit ({hit[1]}, {rel}:{hit[0]}), "
                                 "so it trains nothing on this node")
        # the job's HfArgumentParser: the entry's, or (a thin entry, `from llava.train.train import train;
        # train()`) the first one of a module it imports, while no module read has declared flags
        if reader.hf_classes and (depth == 0 or depth == 1 and not result.flags):
            result.required += dataclass_required(tree, reader.hf_classes, rel)
            # the Trainer saves, evaluates and logs inside its `train()`: its rows sit there when this module calls it
            hf_arguments(tree, reader.hf_classes, rel, (reader.fits or [reader.hf_line])[0], result,
                         installed_or_pinned(root, "transformers", installed))
        if depth == 0:
            result.flags_only = reader.flags_parse and not reader.file_parse and result.config_system == "hf"
            reader.trains_with()  # its flags are all known now (an HfArgumentParser's dataclasses included)
            entry = (tree, rel)
            result.module, result.module_root = as_module(path, root)
            read_needs(tree, rel, result, root)
            result.required += argv_required(tree, rel, text)
            if reader.cli_function is None and called and result.config_system == "unknown":
                line = next((n.lineno for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == called[1]), 0)
                dispatched = as_kind(called[0])
                result.config_system, reader.cli_function = dispatched, (called[1], line)
            if reader.cli_function is not None:
                signature_flags(tree, *reader.cli_function, rel, result, find_class)
            if reader.lightning_cli:
                lightning_cli(rel, reader.lightning_cli, result)
        if reader.hydra_line and depth == 0:  # Hydra's own run folder (`outputs/<date>/<time>`, its logs)
            result.output_dirs.append(Fact(name="hydra.run.dir", off_switch="hydra.run.dir=...", file=rel,
                                           line=reader.hydra_line))
        if reader.hydra_file is not None and depth == 0:
            conf = path.parent / reader.hydra_file
            result.hydra = compose(conf.parent, conf.stem, reader.hydra_version, rel_path(conf, root), command)
            if result.hydra.note:
                result.notes.append(result.hydra.note)
            if result.hydra.composed:
                result.required += [Required(name=k, kind="hydra", file=result.hydra.config, line=1)
                                    for k, v in result.hydra.keys.items() if v == "???"]
                hydra_line = (rel, (reader.fits or [reader.hydra_line])[0])  # a Trainer's rows: at its fit()
            else:
                hydra_defaults(result, conf, root, True)
        targets = hydra_targets(path.parent / reader.hydra_file) if reader.hydra_file is not None else []
        if depth == 0:  # the classes the config file the command names builds (`class_path:`, `target:`)
            targets += config_targets(command, root)
        roots.update(t.rsplit(".", 1)[-1] for t in targets)
        passed = _passed_on(tree, rel, wanted.get(path.resolve(), set()) | reader.trainer_classes)
        built |= reader.trainer_classes
        if built and "compute_loss" in text:  # the repo's own Trainer computes the loss: its rows go there
            _own_compute_loss(result, compute_loss_lines(tree, rel, built), fits)
        for mod in [*reader.imports, *dict.fromkeys(t.rsplit(".", 1)[0] for t in targets)]:
            p = module_path(root, mod, script.parent)
            if p is None or p.resolve() in done:
                continue
            if p.name == "__init__.py" and (name := mod.rsplit(".", 1)[-1]) != p.parent.name:
                wanted.setdefault(p.resolve(), set()).add(name)  # `from pkg.sft import run_sft`: that name
            deeper = max(depth, 1) if mod in passed else depth + 1  # only the entry is at 0
            if deeper <= FOLLOW_DEPTH:
                queue.append((p, deeper))
                least[p.resolve()] = min(deeper, least.get(p.resolve(), deeper))
            else:
                beyond.append(p)
    if result.hydra is not None and result.hydra.composed:  # a Trainer's rows at the fit() that runs it, in the
        fit = next(((f.file, f.start) for f in fits if f.file == hydra_line[0]), None) or next(  # entry or the
            ((f.file, f.start) for f in fits), hydra_line)  # `train(config)` it hands the config to
        add_switches(result, result.hydra, *fit)
    if submitter is not None and step is not None:
        if mains:
            submitter.runs, submitter.runs_from = as_module(mains[0], root)
        result.needs.append(submitter)
    if step is not None:  # data flow beats names: an eval function computes `loss = ...` too
        result.kind = "training"
        # a role the step's own function lacks (the optimizer stepped in a sibling method, `train_step` after
        # `forward_backward_step`) is taken from the name-based reading of the same file
        stepped_in = next((a.file for a in step if a.role == "backward"), step[0].file if step else None)
        found = {a.role for a in step}
        elsewhere = [a for a in result.anchors if a.role == "optimizer_step" and a.file != stepped_in]
        # the clip inside an optimizer wrapper's own `step()` (OpenNMT-py's `self.optim.step()`) is the step's
        wrapped = [a for a in result.anchors if a.role == "grad_clip" and a.file != stepped_in
                   and "optimizer_step" in found and _in_a_step_method(modules, a)][:1]
        result.anchors = [a for a in result.anchors if a.role not in ROLES or a.role not in found
                          and a.file == stepped_in] + step + (wrapped if "grad_clip" not in found else [])
        if result.train_loop is None and "optimizer_step" not in found:
            loop_of_the_optimizer_step(result, root, elsewhere)
    from_dict = entry is not None and result.config_system == "argparse" and dict_flags(  # a dict of defaults
        *entry, result, lambda m: module_path(root, m, script.parent))
    if entry is not None:  # with every flag now known: what the code cannot run without
        named = {r.name for r in result.required}
        loads = result.config_system in ("constants", "unknown", "omegaconf_dotlist",
                                         "omegaconf_loader") and any(
            r.kind == "positional" for r in result.required)
        result.required += [r for r in required_by_use(*entry, result.flags, loads) if r.name not in named]
        result.required += files_read(*entry, root) + env_data_roots(*entry, root)
    unset_now_known(result)
    eval_helper_calls(result, evaluators, far_calls)
    far: dict[str, dict[str, list[Fact]]] = {}  # a module's functions -> their calls from the other modules read
    for (file, name), calls in far_calls.items():
        if any(c.file != file for c in calls):
            far.setdefault(file, {})[name] = [c for c in calls if c.file != file]
    unrun = {m.file: m.unrun for m in modules}
    for module, sites in helpers:
        lift_to_callers(result, module, sites, far.get(module.file, {}), lambda f, n: f in unrun and unrun[f](n),
                        [(f.file, f.start) for f in fits])
    switches_now_known(result, lambda off: switch_off(off, result.flags, result.off_values) is not None)
    if result.config_system == "tyro":  # at the call that starts a tracker (`if config.enable_tensorboard:`)
        nested_switches(result, classes, command)
        nested_step(result, classes)
        nested_lengths(result, classes)
        nested_seed(result, classes)
        nested_output(result, classes)
    result.train_calls = train_calls(result, helpers) + fits
    # under a condition the job's values make false: never reached. Only where the defaults are the entry's
    # own parser's, read from its code (a library's table, HF TrainingArguments', varies with its version), and
    # the command is all that sets them (an HfArgumentParser that parses no config file)
    if entry is not None and (result.config_system == "argparse" or result.config_system == "hf" and result.flags_only):
        dead = dead_lines(entry[0], resolved(result.flags, command, settings_objects(entry[0])))
        dead_by_values(result, entry[1], dead)
        step_by_values(result, *entry, dead)
        named = {r.name for r in result.required}
        result.required += [r for r in paths_needed(*entry, result.flags, dead) if r.name not in named]
        for f in result.checkpoints:  # where a save writes, by the flag that names its folder
            if f.file == entry[1] and f.line not in dead:
                f.folder = next(iter(folder_flags(entry[0], f.line, result.flags)), None)
                if f.folder and all(o.name != f.folder for o in result.output_dirs):  # a name in the path it writes:
                    result.output_dirs.append(Fact(name=f.folder, file=f.file, line=f.line))  # no folder to route
                for flag in root_flags(entry[0], f.line, result.flags):  # the folder it starts, set by a flag
                    if all(o.off_switch != f"{flag}=..." and o.name != flag for o in result.output_dirs):
                        result.output_dirs.append(Fact(name=flag, file=f.file, line=f.line, off_switch=f"{flag}=..."))
        for flag, line in path_prefixes(entry[0], result.flags):  # `f'{args.name}_state.json'`: the name is where
            result.output_dirs = [o for o in result.output_dirs if o.name != flag or o.off_switch]
            if all(o.name != flag for o in result.output_dirs):
                result.output_dirs.append(Fact(name=flag, file=entry[1], line=line, off_switch=f"{flag}=...",
                                               prefix=True))
    files = named_files(root, script.parent, command)
    result.required += placeholders(files)
    for f in (f for kind in ("checkpoints", "evals", "uploads", "trackers") for f in getattr(result, kind)):
        f.config_off = leaves_off(f, files, defaults)
        if f.every is None and f.counted and (n := interval_set(f, files)):  # never at step 0 (counted first)
            f.every, f.every_set = n
    for name, text, data in named_configs(root, script.parent, command, files):
        trackers, overheads = read_config(name, text, data)
        result.trackers += trackers
        result.overheads += overheads
        result.digests.setdefault(name, digest(root / name))
    for name, _ in files:  # a changed config file is read again, like a changed script
        result.digests.setdefault(name, digest(root / name))
    # the job's own parser is in its entry, in the module a launcher it calls runs (submitit's), or in the
    # module that declares most options; an output flag of another tool's parser in a module it imports (a
    # profiler's `--output`) is not the job's
    own = {result.script, max(options, key=options.__getitem__, default="")}
    if submitter is not None and mains:
        own.add(rel_path(mains[0], root))
    # a library's own parse_known_args says nothing of the job's parser; a helper that adds computed flags
    # to it (`add_dict_to_argparser(parser, defaults)`) or copies another's does, wherever it is
    result.parser_open = result.parser_open or next((why for rel, why in opened.items() if rel in own), None) \
        or next((why for why in opened.values() if "parse_known_args" not in why), None)
    if from_dict and result.parser_open == COMPUTED:  # those computed names are the dict's keys, all read
        result.parser_open = None
    result.output_dirs = [o for o in result.output_dirs if not (o.off_switch or "").startswith("--")
                          or o.file in own or not options.get(o.file)]
    mentioned = mentioned_names(beyond, done, root) if whole else None
    if mentioned is not None:
        drop_unreached(result, modules, roots | mentioned)
    drop_unreached_options(result, modules, roots)
    add_needs(result)  # what the reached code asks of the command, beside what the entry's own lines ask
    _kept_on(result, entry)
    if entry is not None:
        _late_seeds(*entry, result)
    if result.kind == "unknown" and any(a.role == "optimizer_step" for a in result.anchors):
        result.kind = "training"  # its backward sits in a module past the depth read (a pipeline schedule)
    if result.kind == "unknown" and any(a.role == "forward" for a in result.anchors):
        result.kind = "inference"
    if entry is not None:  # a system that sits on the parser found (yacs opts on argparse) takes it over
        refine(*entry, root, result, lambda m: module_path(root, m, script.parent), command)
        if stepped is not None:
            _step_under_values(result, *stepped, command)
    given = _command_step_flag(command)
    if given and not any(c.name.startswith("-") and c.role == "bound" for c in result.step_controls) and (
            result.config_system in FLAGS_UNREAD or result.parser_open):
        result.step_controls.insert(0, given)
    if dispatched:  # what the modules it imports use (a helper wrapping another CLI) is not its own
        result.config_system = dispatched
    if result.config_system == "unknown" and any(c.role == "bound" for c in result.step_controls):
        result.config_system = "constants"
    return result
