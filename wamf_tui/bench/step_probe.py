"""Copied as `sitecustomize.py` onto a trial's PYTHONPATH (`wamf_tui.bench.trial`), so every Python
process the trial starts (torchrun's and accelerate's workers inherit the path) reports what the job
really does; the command and the code stay as they are.

- After each outermost optimizer step: one line, `PID TIME`, in the file WAMF_TRIAL_STEPS names.
- Its effects, one JSON line each in the file WAMF_TRIAL_EFFECTS names, with the job's `file:line`
  that caused them and the steps done so far: checkpoint writes (`torch.save`, `save_pretrained`,
  `save_state`, safetensors), tracker starts (wandb and its mode, TensorBoard, MLflow, Comet, Aim),
  Hub uploads (stopped before they reach the network), `model.eval()` on a module being trained,
  autocast dtypes, the trained parameters' dtypes, file writes outside WAMF_OUT, and the first hits
  of the lines WAMF_TRIAL_LINES names (a line tracer limited to those files, for the first
  LINE_STEPS steps only: its cost ends there).

Each library is patched when the job imports it (importing torch here would slow every Python the
job starts, the launcher's included). It then runs the `sitecustomize` it shadows, if the job's
environment has one. It never raises into the job, except to stop an upload.
"""

import os
import sys
import time
import types

_FILE = os.environ.get("WAMF_TRIAL_STEPS")
_EFFECTS = os.environ.get("WAMF_TRIAL_EFFECTS")
_REPO = os.path.realpath(os.environ.get("WAMF_TRIAL_REPO") or os.getcwd())
_HERE = os.path.dirname(os.path.abspath(__file__))
_PARSE_ONLY = os.environ.get("WAMF_TRIAL_PARSE_ONLY") == "1"
LINE_STEPS = 3  # the row lines are traced until this many steps are done, then never again
MAX_EVENTS = 500  # per process: a job that saves every step must not fill the disk
_state = {"steps": 0, "events": 0, "depth": 0, "fd": -1, "writing": False}
_optimizers: list = []  # weak references to every optimizer made, to tell a trained module's eval()
_seen: set = set()


class UploadStopped(RuntimeError):
    """What a Hub upload raises in a trial: it never reaches the network."""


def _ours(name: str) -> bool:
    """A file of the job's repository: not an installed package, not this probe, not Python's own
    `<frozen runpy>` (a name in angle brackets is no file)."""
    if name.startswith("<"):
        return False
    if not os.path.isabs(name):  # a script run by the wrapper's runpy, as the command named it
        name = os.path.abspath(name)
    return name.startswith(_REPO + os.sep) and "-packages" not in name and not name.startswith(_HERE)


def _stack() -> list:
    """The job's own frames that led here, innermost first, as `file:line`: frames in the repository,
    outside installed packages and this probe (at most 8)."""
    frame: types.FrameType | None = sys._getframe(2)
    found: list[str] = []
    while frame is not None and len(found) < 8:
        name = frame.f_code.co_filename
        if _ours(name):
            found.append(f"{os.path.relpath(os.path.abspath(name), _REPO)}:{frame.f_lineno}")
        frame = frame.f_back
    return found


def _emit(kind: str, what: str, **detail) -> None:
    if _state["fd"] < 0 or _state["events"] >= MAX_EVENTS:
        return
    import json

    _state["events"] += 1
    stack = _stack()
    event = {"pid": os.getpid(), "kind": kind, "what": what, "step": _state["steps"], "where": stack[0] if stack
             else "", "stack": stack, **detail}
    try:
        os.write(_state["fd"], (json.dumps(event, default=str) + "\n").encode())  # one O_APPEND write per event
    except OSError:
        pass


def _once(key, kind: str, what: str, **detail) -> None:
    if key not in _seen:
        _seen.add(key)
        _emit(kind, what, **detail)


def _path(target) -> str | None:
    """The file a save goes to, or None for an in-memory buffer (a copy, not a checkpoint)."""
    if isinstance(target, (str, bytes)) or hasattr(target, "__fspath__"):
        return os.fsdecode(os.fspath(target))
    name = getattr(target, "name", None)
    return name if isinstance(name, str) else None


def _wrap(owner, name: str, before) -> None:
    """`owner.name` calls `before(args, kwargs)` first; a failing `before` never reaches the job."""
    import functools

    original = getattr(owner, name, None)
    if original is None or getattr(original, "_wamf", False):
        return

    @functools.wraps(original)  # its signature, for code that inspects it
    def wrapped(*args, **kwargs):
        try:
            before(args, kwargs)
        except UploadStopped:
            raise
        except Exception:
            pass
        return original(*args, **kwargs)

    wrapped._wamf = True  # type: ignore[attr-defined]
    setattr(owner, name, wrapped)


def _saving(what: str, target_at: int | None, key: str | None = None):
    """A save call's `before`: one event for the outermost save (save_pretrained's own torch.save is
    not counted again)."""
    def before(args, kwargs):
        if _state["depth"]:
            return
        target = kwargs.get(key) if key and key in kwargs else (args[target_at] if target_at is not None
                                                                 and len(args) > target_at else None)
        path = _path(target) if target is not None else ""
        if path is not None:
            _emit("save", what, path=path)
    return before


def _nested(owner, name: str) -> None:
    """Saves inside `owner.name` are one save: the depth is held while it runs."""
    original = getattr(owner, name, None)
    if original is None or getattr(original, "_wamf_depth", False):
        return

    def held(*args, **kwargs):
        _state["depth"] += 1
        try:
            return original(*args, **kwargs)
        finally:
            _state["depth"] -= 1

    held._wamf_depth = True  # type: ignore[attr-defined]
    setattr(owner, name, held)


def _save_call(owner, name: str, what: str, target_at: int | None, key: str | None = None) -> None:
    _nested(owner, name)
    _wrap(owner, name, _saving(what, target_at, key))


# --- what each library gets, once the job imports it --------------------------------------------


def _optim(module) -> None:
    import weakref

    depth = [0]
    fd = os.open(_FILE or os.devnull, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    pid = os.getpid()

    def pre(_opt, _args, _kwargs):
        depth[0] += 1

    def post(opt, _args, _kwargs):
        depth[0] = max(0, depth[0] - 1)
        if depth[0] == 0:
            try:
                os.write(fd, f"{pid} {time.time():.6f}\n".encode())  # one short O_APPEND write: ranks never interleave
            except OSError:
                pass
            _state["steps"] += 1
            if _PARSE_ONLY:  # no parse the probe knows came first: never train in a parse-only check
                os._exit(0)
            if _state["steps"] == 1:
                dtypes = sorted({str(p.dtype).replace("torch.", "") for g in opt.param_groups for p in g["params"]})
                _emit("params", ",".join(dtypes))
            if _state["steps"] == LINE_STEPS:
                _untrace()

    module.register_optimizer_step_pre_hook(pre)
    module.register_optimizer_step_post_hook(post)
    _wrap(module.Optimizer, "__init__", lambda args, kwargs: _optimizers.append(weakref.ref(args[0])))


def _trained(module) -> bool:
    params = {id(p) for p in module.parameters()}
    for ref in _optimizers:
        opt = ref()
        if opt is not None and any(id(p) in params for g in getattr(opt, "param_groups", ()) for p in g["params"]):
            return True
    return False


def _nn(module) -> None:
    def before(args, kwargs):
        if args and args[0].training and _trained(args[0]):
            _emit("eval", "eval")
    _wrap(module.Module, "eval", before)


def _autocast(module) -> None:
    def before(args, kwargs):
        ac = args[0]
        if getattr(ac, "_enabled", True):
            dtype = str(getattr(ac, "fast_dtype", "")).replace("torch.", "")
            _once(("autocast", ac.device, dtype), "autocast", dtype, device=ac.device)
    _wrap(module.autocast, "__enter__", before)


def _serialization(module) -> None:
    _save_call(module, "save", "torch.save", 1, "f")


def _safetensors(module) -> None:
    _save_call(module, "save_file", "safetensors", 1, "filename")
    _save_call(module, "save_model", "safetensors", 1, "filename")


def _transformers(module) -> None:
    _save_call(module.PreTrainedModel, "save_pretrained", "save_pretrained", 1, "save_directory")


def _lightning_io(module) -> None:
    """Lightning saves a checkpoint into a buffer, then writes the bytes itself (`_atomic_save`): the buffer's
    `torch.save` names no file, so the save is counted here, with its path."""
    _save_call(module, "_atomic_save", "torch.save", 1, "filepath")


def _accelerate(module) -> None:
    _save_call(module.Accelerator, "save_state", "save_state", 1, "output_dir")


def _wandb(module) -> None:
    def before(args, kwargs):
        mode = kwargs.get("mode") or os.environ.get("WANDB_MODE") or "online"
        _emit("tracker", "wandb", mode=str(mode), path=str(kwargs.get("dir") or os.environ.get("WANDB_DIR") or ""))
    _wrap(module, "init", before)


def _writer(what: str, dir_key: str):
    def patch(module) -> None:
        def before(args, kwargs):
            path = args[1] if len(args) > 1 else kwargs.get(dir_key)
            _emit("tracker", what, mode="on", path=str(path or "runs/ (default)"))
        _wrap(module.SummaryWriter, "__init__", before)
    return patch


def _mlflow(module) -> None:
    _wrap(module, "start_run", lambda args, kwargs: _emit(
        "tracker", "mlflow", mode="on", path=os.environ.get("MLFLOW_TRACKING_URI", "./mlruns (default)")))


def _comet(module) -> None:
    _wrap(module.Experiment, "__init__", lambda args, kwargs: _emit(
        "tracker", "comet", mode=os.environ.get("COMET_MODE", "online")))


def _aim(module) -> None:
    _wrap(module.Run, "__init__", lambda args, kwargs: _emit("tracker", "aim", mode="on",
                                                             path=str(kwargs.get("repo") or ".aim (default)")))


def _stop_upload(what: str):
    def before(args, kwargs):
        if _state["depth"]:
            return
        _emit("upload", what)
        raise UploadStopped(f"wamf-tui trial: {what} stopped before it reached the network (a trial never uploads)")
    return before


def _hub(module) -> None:
    for name in ("create_repo", "create_commit", "upload_file", "upload_folder", "upload_large_folder"):
        _wrap(module.HfApi, name, _stop_upload(name))
        api = getattr(module, "api", None)
        if api is not None and hasattr(module, name):
            setattr(module, name, getattr(api, name))  # the module's own `upload_file = api.upload_file`


def _push(module) -> None:
    _wrap(module.PushToHubMixin, "push_to_hub", _stop_upload("push_to_hub"))


PATCHES = {
    "torch.optim.optimizer": _optim,
    "torch.nn.modules.module": _nn,
    "torch.amp.autocast_mode": _autocast,
    "torch.serialization": _serialization,
    "safetensors.torch": _safetensors,
    "transformers.modeling_utils": _transformers,
    "transformers.utils.hub": _push,
    "accelerate.accelerator": _accelerate,
    "lightning.fabric.utilities.cloud_io": _lightning_io,
    "lightning_fabric.utilities.cloud_io": _lightning_io,
    "wandb": _wandb,
    "torch.utils.tensorboard.writer": _writer("tensorboard", "log_dir"),
    "tensorboardX": _writer("tensorboard", "logdir"),
    "mlflow": _mlflow,
    "comet_ml": _comet,
    "aim": _aim,
    "huggingface_hub.hf_api": _hub,
    # a DataLoader worker never steps, so never stops watching the rows' lines by itself: it stops as it starts
    "torch.utils.data._utils.worker": lambda module: _wrap(module, "_worker_loop", lambda args, kwargs: _untrace()),
}


class _Watch:
    """A meta-path finder that only notices the modules above being imported, and patches each once
    it has run."""

    def find_spec(self, name, path, target=None):
        patch = PATCHES.get(name)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original = loader.exec_module

        def exec_module(module):
            original(module)
            try:
                patch(module)
            except Exception:
                pass

        loader.exec_module = exec_module
        return spec


# --- file writes outside WAMF_OUT ----------------------------------------------------------------


def _skipped_roots() -> tuple:
    """Where a write is not reported: first the probe's folder and WAMF_OUT, then, outside the
    checkout, the system's and the caches' folders."""
    home = os.path.expanduser("~")
    out = os.environ.get("WAMF_OUT")
    roots = [_HERE, os.path.abspath(out) if out else _HERE, "/dev", "/proc", "/sys", os.environ.get("TMPDIR") or "/tmp",
             "/var/tmp", os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"),
             os.path.join(home, ".triton"), os.path.join(home, ".nv"), os.path.join(home, ".config")]
    return tuple(os.path.realpath(r) + os.sep for r in roots)


def _audit(event: str, args) -> None:
    if event != "open" or _state["writing"]:
        return
    _state["writing"] = True
    try:
        path, mode, flags = args
        if isinstance(path, int):
            return
        writes = any(c in mode for c in "wax+") if isinstance(mode, str) else \
            bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
        if not writes:
            return
        full = os.path.realpath(os.fsdecode(path))
        if "__pycache__" in full or full in _seen or full.startswith(_SKIPPED[:2]) or (
                not full.startswith(_REPO + os.sep) and full.startswith(_SKIPPED[2:])):
            return
        _seen.add(full)
        _emit("write", "file", path=full)
    except Exception:
        pass
    finally:
        _state["writing"] = False


# --- the row lines -----------------------------------------------------------------------------------


def _lines() -> dict:
    """{real path: {line, ...}} from WAMF_TRIAL_LINES (`file:line` pairs, one a line)."""
    wanted: dict = {}
    for item in (os.environ.get("WAMF_TRIAL_LINES") or "").splitlines():
        file, _, line = item.rpartition(":")
        if file and line.isdigit():
            wanted.setdefault(os.path.realpath(os.path.join(_REPO, file)), set()).add(int(line))
    return wanted


_WANTED: dict = {}
_TRACER = "sys.monitoring" if hasattr(sys, "monitoring") and os.environ.get("WAMF_TRIAL_TRACER") != "settrace" \
    else "settrace"  # 3.12+: one callback per wanted line, none elsewhere; WAMF_TRIAL_TRACER=settrace picks the old
_TOOL: list = []  # the sys.monitoring tool id taken


def _hit(file: str, line: int) -> None:
    where = f"{os.path.relpath(file, _REPO)}:{line}"
    _once(("line", where, _state["steps"]), "line", where, line=where, mode=_TRACER)


def _local(frame, event, arg):
    if event == "line" and frame.f_lineno in _WANTED.get(frame.f_code.co_filename, ()):
        _hit(frame.f_code.co_filename, frame.f_lineno)
    return _local


def _global(frame, event, arg):
    return _local if frame.f_code.co_filename in _WANTED else None


def _started(code, offset):
    """sys.monitoring: a code object's first start. Its lines are watched only in the rows' files."""
    mon = sys.monitoring  # type: ignore[attr-defined]
    if code.co_filename in _WANTED:
        mon.set_local_events(_TOOL[0], code, mon.events.LINE)
    return mon.DISABLE


def _line(code, line):
    if line in _WANTED.get(code.co_filename, ()):
        _hit(code.co_filename, line)
        return None
    return sys.monitoring.DISABLE  # type: ignore[attr-defined]


def _trace() -> None:
    if _TRACER == "sys.monitoring":
        mon = sys.monitoring  # type: ignore[attr-defined]
        free = [i for i in (3, 4) if mon.get_tool(i) is None]  # 0-2 and 5: debugger, coverage, profiler, optimizer
        if free:
            _TOOL.append(free[0])
            mon.use_tool_id(free[0], "wamf-tui trial")
            mon.register_callback(free[0], mon.events.PY_START, _started)
            mon.register_callback(free[0], mon.events.LINE, _line)
            mon.set_events(free[0], mon.events.PY_START)
        return
    import threading

    sys.settrace(_global)
    threading.settrace(_global)


def _untrace() -> None:
    if _TOOL:
        mon = sys.monitoring  # type: ignore[attr-defined]
        mon.set_events(_TOOL[0], 0)
        for event in (mon.events.PY_START, mon.events.LINE):  # local events stay set: no callback to call
            mon.register_callback(_TOOL[0], event, None)
        mon.free_tool_id(_TOOL.pop())
    elif _WANTED:
        import threading

        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]


def _start() -> None:
    global _SKIPPED
    if _PARSE_ONLY:  # its parsers' patches, copied beside this file (`parse_probe`)
        import importlib

        PATCHES.update(importlib.import_module("wamf_parse_probe").patches(sys.modules[__name__]))
        if "argparse" in sys.modules:  # imported by Python's own start-up: patched here
            PATCHES["argparse"](sys.modules["argparse"])
    sys.meta_path.insert(0, _Watch())
    if _EFFECTS:
        _state["fd"] = os.open(_EFFECTS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        _SKIPPED = _skipped_roots()
        sys.addaudithook(_audit)
        for file, lines in _lines().items():  # a code object names its file as it was run: both spellings
            for name in (file, os.path.relpath(file, os.getcwd()), os.path.abspath(file)):
                _WANTED[name] = lines
        if _WANTED:
            _trace()


_SKIPPED: tuple = ()


def _chain() -> None:
    """The job's own `sitecustomize`, which this file shadows, still runs."""
    import importlib.machinery
    import importlib.util

    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


if _FILE:
    try:
        _start()
    except Exception:
        pass
try:
    _chain()
except Exception:
    pass
