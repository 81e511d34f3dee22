"""NVML faked at the binding's edge: nvidia-ml-py's surface, as far as the detector uses it.

The app detects in a child process (`wamf-tui detect --stream`), so a test of the app fakes
NVML twice: `in_children` names a stand-in `pynvml` for the children (WAMF_TUI_FAKE_NVML), and a `FakeNvml` in
`sys.modules` answers the app's own GPU refresh.
"""

from __future__ import annotations

import types
from pathlib import Path


class FakeNvml(types.ModuleType):
    """nvidia-ml-py's surface, as far as the detector uses it."""

    def __init__(self, gpus: list[dict], fail_init: bool = False, fail_after: int | None = None):
        super().__init__("pynvml")
        self.gpus, self.fail_init, self.fail_after, self.calls = gpus, fail_init, fail_after, 0

    def nvmlInit(self):
        if self.fail_init:
            raise RuntimeError("NVML Shared Library Not Found")

    def nvmlShutdown(self):
        pass

    def nvmlSystemGetDriverVersion(self):
        return "550.54.15"

    def nvmlSystemGetCudaDriverVersion(self):
        return 12040

    def nvmlDeviceGetCount(self):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise RuntimeError("GPU is lost")
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i):
        return self.gpus[i]

    def nvmlDeviceGetName(self, h):
        return h["name"]

    def nvmlDeviceGetMemoryInfo(self, h):
        return types.SimpleNamespace(used=h["used"] * 2**20, total=81559 * 2**20)

    def nvmlDeviceGetUtilizationRates(self, h):
        return types.SimpleNamespace(gpu=h["util"])

    def nvmlDeviceGetMigMode(self, h):
        return (0, 0)

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [types.SimpleNamespace(pid=p, usedGpuMemory=1 << 30) for p in h["pids"]]

    def nvmlDeviceGetGraphicsRunningProcesses(self, h):
        return []


def gpu(used=0, util=0, pids=()):
    return {"name": "NVIDIA H100 80GB HBM3", "used": used, "util": util, "pids": list(pids)}


def in_children(tmp_path: Path, monkeypatch, gpus: str) -> None:
    """Child processes import a FakeNvml holding `gpus`, a Python expression such as "[gpu()]"."""
    stub = tmp_path / "fake-nvml"
    stub.mkdir(exist_ok=True)
    (stub / "pynvml.py").write_text(
        f"import sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        f"from fake_nvml import FakeNvml, gpu\nsys.modules[__name__] = FakeNvml({gpus})\n")
    monkeypatch.setenv("WAMF_TUI_FAKE_NVML", str(stub))
