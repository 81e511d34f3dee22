"""Fixed states for the snapshot tests and the screenshots: no clock, no temp paths, no detection. The
job is the packaged demo's script, read by the real analysis, so the benchmark table and the checkpoints
are what the app shows for a real job."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import wamf_tui
from wamf_tui import flow
from wamf_tui.model import (
    Analysis,
    Detected,
    EnvFacts,
    GpuFacts,
    HardwareFacts,
    InitState,
    PackageVersion,
    RepoFacts,
    ScriptCandidate,
    ScriptScan,
    Step,
)
from wamf_tui.read.analyze import analyze_script
from wamf_tui.ui.app import WamfApp

ROOT = "/home/ana/nanogpt"


def detected() -> Detected:
    return Detected(
        repo=RepoFacts(path=ROOT, is_git=True, root=ROOT, branch="main", sha="a1b2c3d", subject="faster data loader"),
        env=EnvFacts(kind="venv", name=".venv", activate="source .venv/bin/activate", python=f"{ROOT}/.venv/bin/python",
                     python_version="3.11.7", torch="2.5.1", torch_cuda="12.4",
                     packages=[PackageVersion(name="numpy", version="2.1.0"),
                               PackageVersion(name="torch", version="2.5.1")]),
        hardware=HardwareFacts(host="gpu01", nvml=True, driver="550.54", cuda_driver="12.4", cpu_cores=96,
                               ram_gib=1007.5, load=0.4,
                               gpus=[GpuFacts(index=i, name="NVIDIA H100 80GB HBM3", memory_used_mib=2,
                                              memory_total_mib=81559, utilization=0) for i in range(2)]),
        scripts=ScriptScan(candidates=[ScriptCandidate(path="train.py", score=11, reasons=["entry-point name"])],
                           files_seen=42),
        tests="pytest tests",
    )


@cache
def demo_analysis() -> Analysis:
    demo = Path(wamf_tui.__file__).parent / "demo"
    return analyze_script(demo / "train.py", demo)


def state_at(step: Step, register: str = "algo", at: str = "") -> InitState:
    """Walk the flow on its proposals up to question `at` of `step` (its first: "")."""
    st = InitState(repo_path=ROOT, contract_path=f"{ROOT}/contract.md", detected=detected())
    while st.step < step or (st.step == step and at and flow.current(st).key != at):
        q = flow.current(st)
        value = [o.value for o in q.options if o.checked] if q.kind == "multi" else q.default
        if q.key == "reader" and register == "mlsys":
            value = q.options[0].value
        st, outcome = flow.answer(st, value)
        assert outcome.error is None
        if q.key == "command":  # what the app's reading thread hands back
            st = flow.take_analysis(st, demo_analysis().model_copy(deep=True))
        if q.key == "guarantees":
            st = st.model_copy(update={"guarantees": "User confirmed at 2026-11-29 10:00 UTC"})
    return st.model_copy(update={"reader_register": register})


def app_at(step: Step, register: str = "algo", at: str = "") -> WamfApp:
    app = WamfApp(state_at(step, register, at), detect=False)
    app.talk.ascii_only = False
    return app


def assert_highlight_in_view(screen) -> None:
    """The highlighted option's lines are within the list's scrolled window, and the list within the
    question area (not cut off below its edge)."""
    options, area = screen.query_one("#options"), screen.query_one("#question")
    assert options.highlighted is not None
    line = options._index_to_line[options.highlighted]
    top, rows = options.scroll_offset.y, options.scrollable_content_region.height
    assert top <= line < top + rows, (line, top, rows)
    assert options.region.bottom <= area.content_region.bottom, (options.region, area.content_region)


def highlight_in_view(screen) -> bool:
    """Whether `assert_highlight_in_view` holds (the list scrolled to the highlight once laid out)."""
    try:
        assert_highlight_in_view(screen)
    except AssertionError:
        return False
    return True


def message_in_view(screen) -> bool:
    """Whether the message line holds text inside the question area (scrolled there once laid out)."""
    message, area = screen.query_one("#message"), screen.query_one("#question")
    return bool(str(message.render()).strip()) and message.region.height >= 1 \
        and message.region.bottom <= area.content_region.bottom


def assert_message_in_view(screen) -> None:
    """The message line (what ? says) holds text and is inside the question area, at least its first row."""
    message, area = screen.query_one("#message"), screen.query_one("#question")
    assert str(message.render()).strip()
    assert message.region.height >= 1 and message.region.bottom <= area.content_region.bottom, (
        message.region, area.content_region)


def to_the_last(screen) -> int:
    """How many presses of down take the highlight to the list's last option (down wraps around after it)."""
    return len(screen.qview.question.options) - 1 - (screen.query_one("#options").highlighted or 0)
