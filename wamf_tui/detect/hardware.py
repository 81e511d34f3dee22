"""The machine: GPUs through NVML (nvidia-ml-py, imported as `pynvml`), CPU and
memory through psutil, and the Slurm allocation from the environment.

No NVML library, no driver or an NVML error gives a plain statement in
`nvml_error`, never an exception.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Mapping

from ..model import GpuFacts, GpuProcess, HardwareFacts

SLURM_KEYS = {
    "SLURM_JOB_ID": "job",
    "SLURM_JOB_NODELIST": "nodes",
    "SLURM_JOB_PARTITION": "partition",
    "SLURM_GPUS_ON_NODE": "gpus",
    "SLURM_JOB_GPUS": "gpu ids",
}
NO_GPU = "no NVIDIA GPU visible on this machine"


def _text(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _process(pynvml, proc) -> GpuProcess:
    import psutil

    used = getattr(proc, "usedGpuMemory", None)
    out = GpuProcess(pid=proc.pid, memory_mib=int(used) // 2**20 if isinstance(used, int) else None)
    try:
        p = psutil.Process(proc.pid)
        out.user = p.username()
        out.command = " ".join(p.cmdline())[:120] or p.name()
    except (psutil.Error, OSError):
        pass  # a host PID seen from inside a container: keep the pid and memory
    return out


NVML_TIMEOUT_S = 10.0
_nvml_call: threading.Thread | None = None  # the latest call; alive past its timeout means stuck


def read_gpus(facts: HardwareFacts, timeout: float = NVML_TIMEOUT_S) -> HardwareFacts:
    """`facts` with its GPU part read from NVML, as a new object (`facts` is left as it was, so
    a worker can be handed the app's own). Safe to call once a second.

    On a node with a GPU or driver in a bad state, NVML can hang for good. The calls run in a
    daemon thread that is waited on for `timeout` seconds; after that NVML is reported as not
    answering, and is not called again while the stuck call still holds its thread."""
    global _nvml_call
    out: list[HardwareFacts] = []
    if _nvml_call is None or not _nvml_call.is_alive():
        copy = facts.model_copy(deep=True)
        _nvml_call = threading.Thread(target=lambda: out.append(_read_gpus(copy)), name="wamf-nvml", daemon=True)
        _nvml_call.start()
        _nvml_call.join(timeout)
    return out[0] if out else _not_answering(facts.model_copy(deep=True), timeout)


def _not_answering(facts: HardwareFacts, timeout: float) -> HardwareFacts:
    facts.nvml, facts.gpus = False, []
    facts.nvml_error = f"NVML did not answer within {timeout:g} s: a GPU or its driver may be in a bad state"
    return facts


class NoDriver(ImportError):
    """No NVIDIA kernel driver on this machine: NVML cannot answer, so nvidia-ml-py is not even imported."""


# The driver's files NVML needs (Linux; WSL's GPU device): without them there is nothing to ask.
DRIVER_FILES = ("/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/dxg")


def _binding():
    """nvidia-ml-py. Tests, on machines without a GPU, name a folder holding a stand-in `pynvml.py`
    in WAMF_TUI_FAKE_NVML: the app's children start isolated, so PYTHONPATH cannot bring it. The
    stand-in is loaded for this call only, and leaves nothing in `sys.path` or `sys.modules`."""
    fake = os.environ.get("WAMF_TUI_FAKE_NVML")
    if fake and "pynvml" not in sys.modules:
        import importlib.util

        spec = importlib.util.spec_from_file_location("wamf_fake_pynvml", os.path.join(fake, "pynvml.py"))
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            try:
                spec.loader.exec_module(module)
                return sys.modules[spec.name]  # the stand-in may replace itself there
            finally:
                sys.modules.pop(spec.name, None)
    if "pynvml" not in sys.modules and not any(os.path.exists(f) for f in DRIVER_FILES):
        raise NoDriver
    import pynvml

    return pynvml


def _read_gpus(facts: HardwareFacts) -> HardwareFacts:
    try:
        pynvml = _binding()
    except NoDriver:
        facts.nvml, facts.nvml_error, facts.gpus = False, f"{NO_GPU} (no NVIDIA driver loaded)", []
        return facts
    except ImportError:
        facts.nvml, facts.nvml_error, facts.gpus = False, f"{NO_GPU} (nvidia-ml-py is not installed)", []
        return facts
    try:
        pynvml.nvmlInit()
    except Exception as e:
        facts.nvml, facts.nvml_error, facts.gpus = False, f"{NO_GPU} ({_nvml_reason(e)})", []
        return facts
    try:
        facts.driver = _text(pynvml.nvmlSystemGetDriverVersion())
        cuda = pynvml.nvmlSystemGetCudaDriverVersion()
        facts.cuda_driver = f"{cuda // 1000}.{cuda % 1000 // 10}"
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            mem = pynvml.nvmlDeviceGetMemoryInfo(h)
            try:
                util = pynvml.nvmlDeviceGetUtilizationRates(h).gpu
            except Exception:
                util = None
            try:
                mig = bool(pynvml.nvmlDeviceGetMigMode(h)[0])
            except Exception:
                mig = False
            procs = [
                *pynvml.nvmlDeviceGetComputeRunningProcesses(h),
                *pynvml.nvmlDeviceGetGraphicsRunningProcesses(h),
            ]
            gpus.append(
                GpuFacts(
                    index=i, name=_text(pynvml.nvmlDeviceGetName(h)),
                    memory_used_mib=mem.used // 2**20, memory_total_mib=mem.total // 2**20,
                    utilization=util, mig=mig, processes=[_process(pynvml, p) for p in procs],
                )
            )
        facts.gpus, facts.nvml, facts.nvml_error = gpus, True, None if gpus else NO_GPU
    except Exception as e:
        facts.nvml, facts.nvml_error = False, f"NVML stopped answering ({_nvml_reason(e)}); GPU facts may be stale"
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass
    return facts


def _nvml_reason(e: Exception) -> str:
    text = str(e).strip() or e.__class__.__name__
    return text.splitlines()[0][:120]


def _ram_bytes() -> int:
    """The machine's memory, from the kernel (what psutil reads too, without importing psutil)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        import psutil

        return psutil.virtual_memory().total


def detect_hardware(environ: Mapping[str, str] | None = None) -> HardwareFacts:
    env = os.environ if environ is None else environ
    facts = HardwareFacts(host=socket.gethostname())
    facts.cpu_cores = os.cpu_count()
    facts.ram_gib = round(_ram_bytes() / 2**30, 1)
    try:
        facts.load = round(os.getloadavg()[0], 2)
    except OSError:
        facts.load = None
    facts.slurm = {label: env[k] for k, label in SLURM_KEYS.items() if env.get(k)}
    return read_gpus(facts)


def verdict(facts: HardwareFacts) -> str:
    """One line for the node: free, or busy and by whom."""
    if not facts.gpus:
        return facts.nvml_error or NO_GPU
    busy = [g for g in facts.gpus if not g.free]
    if not busy:
        return f"all {len(facts.gpus)} GPU(s) free"
    who = sorted({p.user or f"pid {p.pid}" for g in busy for p in g.processes}) or ["unknown (memory in use)"]
    return f"{len(busy)} of {len(facts.gpus)} GPU(s) busy: {', '.join(who)}"
