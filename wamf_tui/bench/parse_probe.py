"""Copied beside the trial's probe (`step_probe`) as `wamf_parse_probe.py`, and loaded by it only for
`wamf-tui try --parse-only`: each parser it knows (argparse, HfArgumentParser, Hydra, fire) ends the
process once it has read the job's command line, and says what it read, before the job does anything
else. Kept apart so the probe every trial loads stays small."""

import os
import sys
import types

probe: types.ModuleType  # the step probe: its `_emit`, `_ours` and `_state`


def patches(step_probe: types.ModuleType) -> dict:
    """{module name: its patch}, for the probe's import watch."""
    global probe
    probe = step_probe
    return {"argparse": _argparse, "transformers.hf_argparser": _hf_argparse, "hydra.core.utils": _hydra,
            "fire.core": _fire}


def _parsed(what: str, result) -> None:
    """The job's own parser has read the command line: say what it made of it, and end the process
    (`wamf-tui try --parse-only`) before the job does anything else."""
    namespaces = result if isinstance(result, tuple) else (result,)
    values: dict = {}
    extras: list = []
    for ns in namespaces:
        if isinstance(ns, list):  # parse_known_args' leftovers
            extras += [str(x) for x in ns]
        elif hasattr(ns, "__dict__"):
            values.update({k: repr(v)[:200] for k, v in vars(ns).items() if not k.startswith("_")})
    probe._emit("parsed", what, values=values, extras=extras)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _parse_call(owner, name: str, what: str) -> None:
    """`owner.name`, when the job's own code calls it on its command line, ends the process once it
    returns: the outermost call only (HfArgumentParser's parse_known_args inside its own parse)."""
    original = getattr(owner, name, None)
    if original is None or getattr(original, "_wamf_parse", False):
        return

    def parse(*args, **kwargs):
        mine = not probe._state.get("parsing") and probe._ours(sys._getframe(1).f_code.co_filename)
        if not mine:
            return original(*args, **kwargs)
        probe._state["parsing"] = True
        try:
            result = original(*args, **kwargs)
        finally:
            probe._state["parsing"] = False
        given = kwargs.get("args", args[1] if len(args) > 1 else None)
        if given is None:  # the command line, not a list the code made up
            _parsed(what, result)
        return result

    parse._wamf_parse = True  # type: ignore[attr-defined]
    setattr(owner, name, parse)


def _argparse(module) -> None:
    _parse_call(module.ArgumentParser, "parse_args", "argparse")  # its unknown arguments still fail it
    _parse_call(module.ArgumentParser, "parse_known_args", "argparse")


def _hf_argparse(module) -> None:
    _parse_call(module.HfArgumentParser, "parse_args_into_dataclasses", "HfArgumentParser")
    for name in ("parse_yaml_file", "parse_json_file"):  # `parser.parse_yaml_file(sys.argv[1])`
        _parse_file_call(module.HfArgumentParser, name, "HfArgumentParser")


def _parse_file_call(owner, name: str, what: str) -> None:
    """`owner.name(path)`, when the job's own code reads a config file its command line names, ends the
    process once it returns: its keys are the command's settings (a file the code names itself is not)."""
    original = getattr(owner, name, None)
    if original is None or getattr(original, "_wamf_parse", False):
        return

    def parse(self, path, *args, **kwargs):
        result = original(self, path, *args, **kwargs)
        named = {os.path.abspath(w) for w in sys.argv[1:] if not w.startswith("-")}
        if probe._ours(sys._getframe(1).f_code.co_filename) and os.path.abspath(str(path)) in named:
            _parsed(what, result)
        return result

    parse._wamf_parse = True  # type: ignore[attr-defined]
    setattr(owner, name, parse)


def _hydra(module) -> None:
    """Hydra has composed the config from the command line's overrides: stop before the task runs (and
    before its run folder is made)."""
    original = module.run_job

    def run_job(task_function, config, *args, **kwargs):
        values = {str(k): repr(v)[:200] for k, v in config.items() if k != "hydra"} if hasattr(config, "items") \
            else {}
        probe._emit("parsed", "Hydra", values=values, extras=[])
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
        return original(task_function, config, *args, **kwargs)

    module.run_job = run_job


def _fire(module) -> None:
    """fire has bound the command line to the job's function (`fire.Fire(fn)`): say what it bound, or
    raise fire's own error for what the function does not take (fire itself says so only after the function
    has run), before the function runs. A class's bind, with its method still to come, goes on."""
    original = module._MakeParseFn

    def make(fn, metadata):
        parse = original(fn, metadata)

        def bound(args):
            result = parse(args)
            (varargs, kwargs), _, remaining, _ = result
            if remaining and isinstance(fn, type) or not _fired_by_job(module):
                return result
            if remaining:
                raise module.FireError("Could not consume arguments:", remaining)
            import inspect

            try:
                given = inspect.signature(fn).bind(*varargs, **kwargs)
                given.apply_defaults()
                values = dict(given.arguments)
            except (TypeError, ValueError):
                values = dict(kwargs)
            probe._emit("parsed", "fire", values={k: repr(v)[:200] for k, v in values.items()}, extras=[])
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)

        return bound

    module._MakeParseFn = make


def _fired_by_job(module) -> bool:
    """Whether the `fire.Fire` call under way was made by the job's own code, not by a library's."""
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None and not (frame.f_code.co_name == "Fire" and frame.f_code.co_filename == module.__file__):
        frame = frame.f_back
    return frame is not None and frame.f_back is not None and probe._ours(frame.f_back.f_code.co_filename)
