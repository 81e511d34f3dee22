"""Command line: the app, and thin subcommands over the core.

`check`, `detect` and `analyze` never import Textual (or torch): the UI is
imported only when the app actually starts.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from functools import partial
from pathlib import Path

from . import __version__

SUBCOMMANDS = ("check", "detect", "analyze", "try")


MAX_CONTRACT = 4 * 1024 * 1024
NO_SCREEN = ("this terminal cannot show the full-screen app (TERM is dumb, or the output is not a terminal); "
             "fill the answers from a file instead: wamf-tui PATH --answers FILE --yes")


def _can_draw() -> bool:
    return os.environ.get("TERM", "") not in ("dumb", "") and sys.stdout.isatty()


def _err(msg: str, code: int = 2) -> int:
    print(f"wamf-tui: {msg}", file=sys.stderr)
    return code


def cmd_check(args: argparse.Namespace) -> int:
    from .contract.render import check
    from .infra.files import TooLarge, read_text

    if args.repo and not Path(args.repo).is_dir():
        return _err(f"no such directory: {args.repo}")
    try:
        text = read_text(Path(args.contract), MAX_CONTRACT)
    except TooLarge:
        return _err(f"{args.contract} is over {MAX_CONTRACT // 1024 // 1024} MiB; not a contract")
    except (OSError, UnicodeDecodeError) as e:
        reason = getattr(e, "strerror", None) or e.__class__.__name__
        return _err(f"cannot read {args.contract}: {reason}")
    problems = [(p.line, p.message) for p in check(text)]
    if args.repo:
        from .contract.render import required_block
        from .detect.scripts import entry_points
        from .propose.validate import check_run

        line, run = required_block(text).get("run", (0, ""))
        if run and run != "TBD":
            root = Path(args.repo).resolve()
            consoles, seen = entry_points(root)
            verify = partial(check_run, run, root, consoles=consoles, seen=seen,
                            wrapper_dir=Path(args.contract).resolve().parent)
            verdict = verify()
            if verdict.warnings:  # the repo's own commands may prove them: scanned only then
                verdict = verify(documented=_documented(root, run))
            problems += [(line, f"run: {m}") for m in verdict.problems]
            # nothing unproven passes: what the reading cannot prove fails the check, as --yes refuses it
            problems += [(line, f"run: cannot prove: {m}") for m in verdict.warnings]
    for line, message in problems:
        print(f"{args.contract}:{line}: {message}")
    if problems:
        print(f"{len(problems)} problem(s); the optimizer would refuse this contract.")
        return 1
    print(f"{args.contract}: passes every rule the optimizer checks.")
    return 0


def _documented(root: Path, run: str) -> list[str]:
    """The words of every command the repo's own docs and scripts give for the run line's entry: their flags
    are proof where the entry's parser cannot be read whole."""
    from .detect.launch import parse_launch
    from .detect.scripts import scan_scripts
    from .propose.run_line import is_wrapper

    launch = parse_launch(run, exists=lambda p: (root / p).is_file())
    if launch is None:
        return []
    entry = launch.args[0] if launch.script and is_wrapper(launch.script) and launch.args else launch.path
    return [w for x in scan_scripts(root).launches if entry and x.path == entry for w in x.args]


def cmd_detect(args: argparse.Namespace) -> int:
    from .detect.run import detect_all, stream
    from .detect.summary import describe
    from .infra import children

    path = Path(args.path)
    if not path.is_dir():
        return _err(f"no such directory: {args.path}")
    children.share_group()  # Ctrl-C here, or the app stopping its detection, stops the git it started too
    if args.stream:
        stream(path, sys.stdout)
        return 0
    detected = detect_all(path)
    if args.json:
        print(detected.model_dump_json(indent=2))
        return 0
    for label, text in describe(detected):
        print(f"{label:<9}{text}")
    return 0


def _served(script: Path, root: Path) -> tuple[str, str] | None:
    """The function of `script` a console script's dispatcher makes the flags from, if one does."""
    from .detect.scripts import entry_points
    from .read.subcommands import reader, served_by

    try:
        entry = script.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None
    consoles, files = entry_points(root)
    return served_by(consoles, entry, reader(root), files.__contains__) if consoles else None


def cmd_analyze(args: argparse.Namespace) -> int:
    from .read.analyze import analyze_script
    from .read.report import describe

    script = Path(args.script)
    if not script.is_file():
        return _err(f"no such file: {args.script}")
    system, _, function = (args.called or "").rpartition(":")
    called = (system, function) if system and function else _served(script, Path(args.repo)) if args.repo else None
    installed = dict(w.partition("=")[::2] for w in args.installed)
    analysis = analyze_script(script, Path(args.repo) if args.repo else None, args.arg, called, installed)
    if args.json:
        print(json.dumps(analysis.model_dump(), indent=2))
        return 0
    for line in describe(analysis):
        print(line)
    return 0


def cmd_try(args: argparse.Namespace) -> int:
    """Run the contract's benchmark command once, as the app's `t` does, and print what it measured."""
    from .bench import results, trial
    from .contract import proof
    from .contract.render import required_block
    from .infra.files import TooLarge, read_text
    from .session.store import state_dir

    repo = Path(args.path).expanduser()
    if not repo.is_dir():
        return _err(f"no such directory: {args.path}")
    path = Path(args.contract).expanduser() if args.contract else repo / "contract.md"
    try:
        text = read_text(path, MAX_CONTRACT)
    except TooLarge:
        return _err(f"{path} is over {MAX_CONTRACT // 1024 // 1024} MiB; not a contract")
    except (OSError, UnicodeDecodeError) as e:
        return _err(f"cannot read {path}: {getattr(e, 'strerror', None) or e.__class__.__name__}")
    block = required_block(text)
    run = block.get("run", (0, ""))[1]
    if not run or run == "TBD":
        return _err(f"{path} has no run line to try")
    activate = block.get("activate", (0, ""))[1]
    activate = "" if activate == "TBD" else activate
    if args.timeout is None:
        args.timeout = 120.0 if args.parse_only else 600.0
    gpus = trial.gpus_in_use(trial.sample_gpus(), os.environ)
    out = sys.stderr if args.json else sys.stdout
    print(f"wamf-tui try: {activate + ' && ' if activate else ''}{run}  (in {repo}, limit {args.timeout:g} s)",
          file=out, flush=True)
    job = trial.Trial(activate, run, repo.resolve(), limit_s=args.timeout, gpus=gpus, log_dir=state_dir() / "trials",
                      read_gpus=trial.sample_gpus, parse_only=args.parse_only)
    try:
        say = lambda line: print(line, file=out, flush=True)  # noqa: E731
        if args.parse_only:
            result = job.run(say)
            result = result.model_copy(update={"claims": [proof.parsed(result)]})
        else:
            result = proof.run(job, proof.of_contract(repo.resolve(), activate, run, text), say)
    except KeyboardInterrupt:
        job.stop()
        return 130
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        for line in results.describe(result) + proof.describe(result.claims):
            print(line)
    if result.ended == "limit":
        return 3
    if result.ended != "exited" or result.exit_status != 0:
        return 1
    return 4 if any(not c.ok for c in result.claims) else 0


def _seconds(text: str) -> float:
    """A positive, finite number of seconds (argparse: anything else is one line and exit 2)."""
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def _sub_parser(name: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"wamf-tui {name}")
    if name == "check":
        p.description = ("Check a contract against the rules the optimizer holds it to. "
                         "Exit 0: passes, 1: problems, 2: unreadable.")
        p.add_argument("contract")
        p.add_argument("--repo", metavar="ROOT", help="also hold the run line against the job's code in ROOT: "
                       "its entry, launcher, required inputs and flags")
        p.set_defaults(func=cmd_check)
    elif name == "detect":
        p.description = "Detect the repo, environment, machine and job script."
        p.add_argument("path", nargs="?", default=".")
        p.add_argument("--json", action="store_true")
        p.add_argument("--stream", action="store_true",
                       help="one JSON line per subject as soon as it is known (what the app reads)")
        p.set_defaults(func=cmd_detect)
    elif name == "try":
        p.description = ("Run the contract's activate and run lines once (this runs your job) and print exit status, "
                         "optimizer steps, steady step time and peak memory, and check each claim of the contract "
                         "(the cap, saves, trackers, uploads and evals off, the rows' lines, the precision, nothing "
                         "written into the checkout). Exit 0: it ended with status 0 and every claim held, 1: it "
                         "failed, 2: bad input, 3: it hit the time limit, 4: a claim failed.")
        p.add_argument("path", nargs="?", default=".", help="the job's repository (default: here)")
        p.add_argument("--contract", help="the contract to try (default: PATH/contract.md)")
        p.add_argument("--timeout", type=_seconds, metavar="S",
                       help="stop it after S seconds (600; 120 with --parse-only)")
        p.add_argument("--json", action="store_true",
                       help="the measures as JSON on stdout (the job's output on stderr)")
        p.add_argument("--parse-only", action="store_true",
                       help="run the job only until its own parser (argparse, HfArgumentParser, Hydra, fire) has read "
                            "the run line, and say whether every flag is known: seconds, never a training step")
        p.set_defaults(func=cmd_try)
    else:
        p.description = "Read a job script (never run it) and report its training facts at file:line."
        p.add_argument("script")
        p.add_argument("--repo", help="repo root (default: the script's git root)")
        p.add_argument("--arg", action="append", default=[], metavar="WORD",
                       help="one of the job's own arguments, as its command gives them (a Hydra app is composed "
                            "with its group choices, e.g. --arg=experiment=example); repeatable")
        p.add_argument("--called", metavar="CLI:FUNCTION", help="the function of SCRIPT a console script's "
                       "dispatcher makes the flags from, and how (--called='jsonargparse CLI:setup')")
        p.add_argument("--installed", action="append", default=[], metavar="NAME=VERSION",
                       help="a library's version in the job's environment, which decides the flags its parser "
                            "takes (--installed=transformers=4.38.2); repeatable")
        p.add_argument("--json", action="store_true")
        p.set_defaults(func=cmd_analyze)
    return p


def app_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="wamf-tui",
        description="Settle a PyTorch job for the who-ate-my-flops optimizer and write contract.md. "
        "Subcommands: check CONTRACT, detect [PATH], analyze SCRIPT, try [PATH].",
    )
    p.add_argument("path", nargs="?", default=".", help="the job's repository (default: here)")
    p.add_argument("--contract", help="where to write contract.md (default: the repo root)")
    p.add_argument("--template", help="the plugin's template/contract.md to fill instead of the bundled one")
    p.add_argument("--demo", action="store_true",
                   help="run on a tiny demo training job, in a git repo made anew under the state folder")
    p.add_argument("--fresh", action="store_true", help="start over instead of resuming a saved session")
    p.add_argument("--answers", metavar="FILE", help="fill the answers from a JSON or TOML file (state field names)")
    p.add_argument("--yes", action="store_true", help="with --answers: write the contract without the UI")
    p.add_argument("--version", action="version", version=f"wamf-tui {__version__}")
    return p


def _state_from_answers(args: argparse.Namespace, path: Path):
    from . import answers, flow
    from .detect.run import detect_all
    from .infra import checkout
    from .propose import proposals
    from .session import store as session

    try:
        data = answers.load(args.answers)
    except answers.AnswersError as e:
        return _err(str(e))
    detected = detect_all(path)
    state = session.new_state(checkout.find_root(path), args.contract, args.template)  # exact, not as shown
    state, problems = answers.fill(state.model_copy(update={"detected": detected}), data)
    if problems and not args.yes and _can_draw():  # the app opens at that question, the answers before it kept
        return state, f"answer refused: {problems[0]}"
    if problems:
        # a job that cannot start as given (a required input left out) is bad input, like an unreadable file
        q = flow.current(state)
        missing = q is not None and q.key == "run" and (proposals.missing_in_run(state, q.default)
                                                         or proposals.left_out_of_run(state, q.default))
        return _err(f"answer refused: {problems[0]}", 2 if missing else 1)
    if args.yes and "run" not in data and (doubtful := proposals.unproven(state)):
        # nothing unproven is written: the job's parser may not take these, and no one is there to ask
        return _err(f"cannot prove that the job's parser takes {', '.join(doubtful)}; give the run line in the "
                    "answers file (run = \"...\") if it does", 1)
    for problem in proposals.known_problems(state):
        print(f"wamf-tui: warning: {problem}", file=sys.stderr)
    return state, ""


def _write_without_ui(state) -> int:
    from .contract import finish
    from .contract import render as contract
    from .infra.visible import visible
    from .session import store as session
    from .wording import done_lines

    text = contract.render(state, contract.load_template(state.template_path))
    verdict = finish.run_verdict(state)
    for w in verdict.warnings:  # unattended, what cannot be proven is a refusal, never a warning beside a line
        print(f"wamf-tui: cannot prove: {w}", file=sys.stderr)
    if verdict.warnings:
        return 1
    problems = finish.problems(text, verdict)
    for line, message in problems:
        print(f"{visible(state.contract_path)}:{line}: {message}", file=sys.stderr)
    if problems:
        return 1
    result, wrapper_error = finish.write(state, text, overwrite=True)
    if result.error:
        return _err(f"cannot write {visible(state.contract_path)}: {result.error}")
    if wrapper_error:
        return _err(wrapper_error)
    if result.backup:
        print(f"the previous contract is kept as {result.backup}")
    saved = session.save_now(state.model_copy(update={"written": state.contract_path}))
    if saved:
        print(f"wamf-tui: warning: {saved}", file=sys.stderr)
    for said in done_lines(state):
        print(said)
    return 0


def main(argv: list[str] | None = None) -> int:
    # Start-up allocates tens of thousands of objects (Textual's styles, the records' checks) and the cyclic
    # collector walked them again and again: about 70 ms of the app's first paint, and as much of a
    # subcommand's run. Reference counting still frees them. The subcommands end soon; the app turns
    # the collector back on over a frozen heap once its first frame is up (`WamfApp.on_mount`).
    gc.disable()
    from .infra.visible import GatedStream

    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = GatedStream(out), GatedStream(err)  # type: ignore[assignment]
    try:
        return _main(argv)
    except BrokenPipeError:  # `wamf-tui analyze ... | head`: the reader has what it wanted; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())  # Python flushes stdout again at exit
        return 1
    finally:
        sys.stdout, sys.stderr = out, err
        gc.enable()


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in SUBCOMMANDS:
        args = _sub_parser(argv[0]).parse_args(argv[1:])
        return args.func(args)
    args = app_parser().parse_args(argv)

    from . import demo_repo
    from .contract import render as contract
    from .infra import checkout
    from .session import lock

    if args.template:
        try:
            contract.load_template(args.template)
        except (OSError, UnicodeDecodeError, ValueError) as e:
            return _err(f"cannot use template {args.template}: {getattr(e, 'strerror', None) or e}")
    if args.demo:
        held = lock.holder(demo_repo.demo_home())
        if held is not None:
            return _err(f"the demo is open in another terminal ({held.describe()}); quit it there first")
        path = demo_repo.fresh_demo()
    else:
        path = Path(args.path).expanduser()
        if not path.exists():
            return _err(f"no such directory: {args.path}")
        if not path.is_dir():
            return _err(f"{args.path} is a file; give the repository folder")
        if not os.access(path, os.R_OK | os.X_OK):
            return _err(f"cannot read {args.path}: permission denied")
    if args.contract and not Path(args.contract).expanduser().parent.is_dir():
        return _err(f"folder for --contract does not exist: {Path(args.contract).parent}")

    if checkout.is_bare(path):
        return _err(f"{path} is a bare repository (no checkout); run wamf-tui in a checkout of it")
    if args.yes and not args.answers:
        return _err("--yes needs --answers FILE")
    if not args.yes:  # the app saves the session after every answer: its folder must take it
        from .session.store import unusable_state_dir

        if why := unusable_state_dir():
            return _err(why)
    if args.answers and args.yes:
        from .session import lock

        held_by = lock.holder(checkout.find_root(path))
        if held_by is not None:  # it may write this contract too, from other answers
            return _err(f"another wamf-tui holds this repo's session ({held_by.describe()}); "
                        "finish or quit it first")
    if args.answers:
        filled = _state_from_answers(args, path)
        if isinstance(filled, int):
            return filled
        state, refused = filled
        if args.yes:
            return _write_without_ui(state)
        if not _can_draw():
            return _err(NO_SCREEN)
        from .ui.start import run_prefilled

        return run_prefilled(state, refused)

    if not _can_draw():
        return _err(NO_SCREEN)
    from .ui.start import run_app

    return run_app(path, contract=args.contract, template=args.template, fresh=args.fresh)
