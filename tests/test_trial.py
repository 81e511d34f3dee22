"""The trial run (#17): real processes, real CPU PyTorch, real git checkouts. Nothing here fakes
the job: each test runs a small real one through `wamf_tui.bench.trial` or `wamf-tui try`."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from conftest import make_repo

from wamf_tui.bench import output, results, traces, trial
from wamf_tui.contract import render as contract
from wamf_tui.model import GpuFacts, HardwareFacts, InitState

STEPS = """import torch
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i in range({n}):
    loss = model(torch.randn(4, 8)).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
print("done")
"""


@pytest.fixture
def activate(tmp_path) -> str:
    """An activate line that puts this interpreter (which has CPU torch) first as `python`."""
    bin_dir = tmp_path / "envbin"
    bin_dir.mkdir()
    python = bin_dir / "python"  # a script, not a symlink: a venv's interpreter finds its pyvenv.cfg by its own path
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return f"export PATH={bin_dir}:$PATH"


def gone(pid: int) -> bool:
    """The process ended (a zombie has ended too: only its exit status waits to be read)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def run(repo: Path, activate: str, line: str, **kw):
    lines: list[str] = []
    result = trial.Trial(activate, line, repo, **kw).run(lines.append)
    return result, lines


@pytest.mark.slow
def test_the_wrapper_caps_the_steps_and_the_probe_times_them(tmp_path, activate):
    repo = make_repo(tmp_path / "job", {"train.py": STEPS.format(n=1000)})
    wrapper = repo / "wamf_bench.py"  # named by the run line, not written yet (the contract is not written)
    result, _ = run(repo, activate, f"WAMF_MAX_STEPS=12 python {wrapper} train.py")
    assert (result.ended, result.exit_status, result.steps) == ("exited", 0, 12)
    assert result.steady_s is not None and 0 < result.steady_s < 1 and result.warmup >= 1
    assert len(result.step_times) == 11
    assert not wrapper.exists() and result.touched == []  # the trial wrote nothing into the repo


@pytest.mark.slow
def test_a_nested_optimizer_step_is_counted_once(tmp_path, activate):
    nested = """import torch
class Both(torch.optim.Optimizer):
    def __init__(self, inner):
        self.inner = inner
        super().__init__([p for o in inner for g in o.param_groups for p in g["params"]], {})
    def step(self, closure=None):
        for o in self.inner:
            o.step()
a, b = torch.nn.Linear(2, 1), torch.nn.Linear(2, 1)
opt = Both([torch.optim.SGD(a.parameters(), lr=0.1), torch.optim.SGD(b.parameters(), lr=0.1)])
for _ in range(7):
    (a(torch.ones(1, 2)) + b(torch.ones(1, 2))).sum().backward()
    opt.step()
"""
    repo = make_repo(tmp_path / "job", {"train.py": nested})
    result, _ = run(repo, activate, "python train.py")
    assert (result.exit_status, result.steps) == (0, 7)


@pytest.mark.slow
def test_the_jobs_own_sitecustomize_still_runs(tmp_path, activate):
    repo = make_repo(tmp_path / "job", {"train.py": STEPS.format(n=3)})
    own = tmp_path / "own"
    own.mkdir()
    marker = tmp_path / "ran"
    (own / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').write('yes')\n")
    result, _ = run(repo, activate, f"PYTHONPATH={own} python train.py")
    assert result.exit_status == 0 and marker.read_text() == "yes"
    assert result.steps == 3  # and the probe still counted: it sits before the job's own path entries


@pytest.mark.slow
def test_a_command_that_raises_shows_its_error_and_the_likely_cause(tmp_path, activate):
    repo = make_repo(tmp_path / "job", {"train.py": "import torch\nimport flash_attn_nowhere\n"})
    result, lines = run(repo, activate, "python train.py")
    assert result.ended == "exited" and result.exit_status == 1
    assert "No module named 'flash_attn_nowhere'" in lines[-1]
    assert result.cause == "a module is missing in this environment: flash_attn_nowhere (is the activate line right?)"
    assert results.describe(result)[-1].startswith("likely cause: a module is missing")


def test_a_broken_activate_line_stops_there(tmp_path):
    repo = make_repo(tmp_path / "job", {"train.py": "print('never')\n"})
    result, lines = run(repo, f"source {tmp_path}/gone/bin/activate", "python train.py")
    assert result.exit_status == trial.ACTIVATE_FAILED and "never" not in lines
    assert result.cause.startswith("the activate line failed")


@pytest.mark.slow
def test_a_hanging_command_is_stopped_at_the_limit_with_nothing_left(tmp_path, activate):
    pids = tmp_path / "pids"
    hang = (f"import os, signal, subprocess, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            f"child = subprocess.Popen(['sleep', '300'])\n"
            f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\nprint('waiting', flush=True)\n"
            f"time.sleep(300)\n")
    repo = make_repo(tmp_path / "job", {"train.py": hang})
    started = time.monotonic()
    result, lines = run(repo, activate, "python train.py", limit_s=1.5, grace_s=1.0)
    assert result.ended == "limit" and "waiting" in lines
    assert time.monotonic() - started < 30
    assert result.cause == ""  # stopped, not failed
    for pid in map(int, pids.read_text().split()):  # it ignored SIGTERM: SIGKILL after the grace period
        assert gone(pid)


@pytest.mark.slow
def test_stop_ends_the_whole_group(tmp_path, activate):
    pids = tmp_path / "pids"
    pids.mkdir()
    # One write per "up": print() writes the text and its newline apart, so two unbuffered processes can
    # print "upup" (1 run in 16 here), and a test waiting for two "up" lines then waited out the sleep.
    job_text = f"import os, time\nopen(os.path.join({str(pids)!r}, str(os.getpid())), 'w')\nos.write(1, b'up\\n')\n" \
        "time.sleep(120)\n"
    repo = make_repo(tmp_path / "job", {"train.py": job_text})
    job = trial.Trial(activate, "python train.py & python train.py; wait", repo, grace_s=1.0)
    seen = []

    def on_line(line: str) -> None:
        seen.append(line)
        if seen.count("up") == 2:
            job.stop()

    result = job.run(on_line)
    assert result.ended == "stopped" and len(list(pids.iterdir())) == 2
    for pid in (int(p.name) for p in pids.iterdir()):
        assert gone(pid)


@pytest.mark.slow
def test_a_job_that_writes_into_the_checkout_is_flagged(tmp_path, activate):
    repo = make_repo(tmp_path / "job", {"train.py": "open('model.pt', 'w').write('w')\n", "notes.md": "a\n"})
    (repo / "scratch.txt").write_text("untracked before, untouched\n")
    result, _ = run(repo, activate, "python train.py && echo b >> notes.md")
    assert result.touched == ["model.pt", "notes.md"]
    assert "wrote into the checkout: model.pt, notes.md" in results.describe(result)
    moved = "wrote into the checkout: model.pt, notes.md (move it with --out=DIR)"
    assert moved in results.describe(result, "--out=DIR")


@pytest.mark.slow
def test_gpu_memory_is_the_growth_on_the_gpus_the_job_uses(tmp_path, activate, monkeypatch):
    """NVML faked at the binding's edge: GPU 0 (the job's) grows from 1000 to 9000 MiB while it runs;
    GPU 1, busy with someone else's 70000 MiB, is not counted."""
    from fake_nvml import FakeNvml, gpu

    class Growing(FakeNvml):
        def __init__(self):
            super().__init__([gpu(used=1000, util=80), gpu(used=70000, util=100)])
            self.reads = 0

        def nvmlDeviceGetMemoryInfo(self, h):
            if h is self.gpus[0]:
                self.reads += 1
                h["used"] = 1000 if self.reads == 1 else 9000
            return super().nvmlDeviceGetMemoryInfo(h)

    monkeypatch.setitem(sys.modules, "pynvml", Growing())
    repo = make_repo(tmp_path / "job", {"train.py": "import time\ntime.sleep(3.5)\n"})
    result, _ = run(repo, activate, "python train.py", gpus=[0], read_gpus=trial.sample_gpus)
    assert (result.peak_gpu_mib, result.gpu_util) == (8000, 80)
    assert "GPU 8000 MiB (utilisation up to 80 %)" in results.describe(result)[2]


def test_output_keeps_colours_and_shows_every_other_escape():
    line = "\x1b[32mok\x1b[0m \x1b]52;c;ZXZpbA==\x07 \x1b]2;title\x07 \u202eevil"
    safe = output.terminal_safe(line)
    assert "\x1b[32m" in safe and "\x1b[0m" in safe
    assert "\x1b]" not in safe and "\x07" not in safe and "\u202e" not in safe
    assert "\\x1b]52;c;ZXZpbA==\\x07" in safe


@pytest.mark.parametrize("times, expected", [
    ([0, 5, 5.5, 6, 6.5, 7, 7.5], (2, 0.5)),  # step 1 unseen, step 2 took 5 s: two warm-up steps
    ([0, 1, 2, 3], (1, 1.0)),
    ([0, 1], (None, None)),
])
def test_steady_step_time_skips_the_warm_up(times, expected):
    assert output.steady(times) == expected


def test_the_gpus_it_will_use_follow_cuda_visible_devices():
    hw = HardwareFacts(host="h", gpus=[GpuFacts(index=i, name="g", memory_used_mib=0, memory_total_mib=1)
                                       for i in range(4)])
    assert trial.gpus_in_use(hw, {}) == [0, 1, 2, 3]
    assert trial.gpus_in_use(hw, {"CUDA_VISIBLE_DEVICES": "2,3"}) == [2, 3]
    assert trial.gpus_in_use(hw, {"CUDA_VISIBLE_DEVICES": "GPU-8f2c"}) == [0, 1, 2, 3]


def test_the_trial_row_is_there_only_while_the_command_is_the_one_tried(tmp_path):
    """The baseline is a row of `## Everything else`: downstream's contract has three sections, no fourth."""
    from wamf_tui.model import Claim

    state = InitState(activate="source .venv/bin/activate", run="python train.py --steps=30")
    result = trial_result(state.activate, state.run).model_copy(update={
        "step_times": [0.5, 0.3, 0.11, 0.12, 0.12, 0.13, 0.12, 0.14, 0.12, 0.12, 0.12],
        "peak_gpu_by_device": {"0": 8000, "1": 7900},
        "throughput": "1234.5 samples/s", "claims": [
            Claim(claim="cap 30 steps", expected="30 ran, then the job ended", observed="30 ran", ok=True),
            Claim(claim="saves off", expected="none", observed="3 written (<run>/ckpt_9.pt)", ok=False,
                  where="train.py:15", fix="switch it off with --save-every")]})
    state = state.model_copy(update={"trial": result})
    rows = dict(results.section_rows(result))
    assert rows["when"] == "2026-12-01 06:00 UTC" and rows["optimizer steps"] == "30 (3 warm-up)"
    assert rows["steady step time"] == "median 0.120 s, 0.120 s to 0.130 s (10th to 90th percentile)"
    assert rows["peak GPU memory"] == "GPU 0: 8000 MiB, GPU 1: 7900 MiB"
    assert rows["throughput"] == "1234.5 samples/s (as the job reported it)"
    text = contract.render(state, contract.bundled_template())
    assert [line[3:] for line in text.splitlines() if line.startswith("## ")] == list(contract.SECTIONS)
    row = next(n for n, line in enumerate(text.splitlines(), 1) if line.startswith("| **Trial** |"))
    assert row > text.splitlines().index("## Everything else")
    assert text.splitlines()[row - 1].endswith(
        " · optimizer steps: 30 (3 warm-up) · steady step time: median 0.120 s, 0.120 s to 0.130 s (10th to 90th "
        "percentile) · peak GPU memory: GPU 0: 8000 MiB, GPU 1: 7900 MiB · throughput: 1234.5 samples/s (as the job "
        "reported it) · claims held: cap 30 steps · claim FAILED: saves off (expected none; observed 3 written "
        "(&lt;run>/ckpt_9.pt) at train.py:15); fix: switch it off with --save-every |")
    assert [p for p in contract.check(text) if p.line == row or "placeholder" in p.message] == []
    state = state.model_copy(update={"run": "python train.py --steps=40"})
    assert "**Trial**" not in contract.render(state, contract.bundled_template())


@pytest.mark.parametrize("line, said", [
    ("step 10 | 1,234.5 samples/s | loss 2.1", "1,234.5 samples/s"),
    ("{'train_samples_per_second': 88.2, 'epoch': 1.0}", "88.2 samples/s"),
    ("iter 20: 5.1e3 tok/s", "5.1e3 tokens/s"),
    ("tokens_per_second=400", "400 tokens/s"),
    ("loss 2.1, lr 3e-4", ""),
])
def test_throughput_is_read_from_what_the_job_prints(line, said):
    assert output.throughput(line) == said


def trial_result(activate: str, run_line: str):
    from wamf_tui.model import TrialResult

    return TrialResult(command_hash=results.command_hash(activate, run_line), started="2026-12-01 06:00 UTC",
                       ended="exited", exit_status=0, wall_s=9.5, steps=30, warmup=3, steady_s=0.12)


@pytest.fixture
def demo_contract(tmp_path, activate):
    """The demo job, its contract written by `--yes`, with this interpreter as its environment."""
    from wamf_tui import demo_repo

    repo = demo_repo.make_demo(str(tmp_path))
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"activate": activate, "steps": 20}))
    cmd = [sys.executable, "-m", "wamf_tui", str(repo), "--answers", str(answers), "--yes"]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return repo


def wamf(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wamf_tui", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "WAMF_TUI_FAKE_NVML": ""})


@pytest.mark.slow
def test_try_runs_the_demo_contract_and_prints_json(demo_contract):
    out = wamf("try", str(demo_contract), "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["ended"] == "exited" and result["exit_status"] == 0
    assert result["steps"] == 20 and result["steady_s"] > 0
    assert "wamf-tui try:" in out.stderr  # what runs is said first, on stderr with --json


@pytest.mark.slow
def test_try_exit_codes(tmp_path, demo_contract):
    text = (demo_contract / "contract.md").read_text()
    slow = tmp_path / "slow.md"
    slow.write_text(text.replace("python train.py", "sleep 30; python train.py", 1))
    assert wamf("try", str(demo_contract), "--contract", str(slow), "--timeout", "1").returncode == 3
    bad = tmp_path / "bad.md"
    bad.write_text(text.replace("python train.py", "python missing.py", 1))
    failed = wamf("try", str(demo_contract), "--contract", str(bad))
    assert failed.returncode == 1 and "likely cause: a file or dataset is missing" in failed.stdout
    assert wamf("try", str(tmp_path / "nowhere")).returncode == 2


# --- in the app ------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_t_at_the_run_question_says_what_runs_and_runs_only_after_a_second_key(tmp_path, activate):
    from wamf_tui import demo_repo
    from wamf_tui.ui.start import make_app
    from wamf_tui.ui.trial_screen import TrialScreen

    root = demo_repo.make_demo(str(tmp_path))
    app = make_app(root)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(60):  # Enter through the proposals, with this interpreter as the environment
            await pilot.pause(0.05)
            q = app.screen.qview.question if hasattr(app.screen, "qview") else None
            if q is not None and q.key == "run" and not app.talk.pending:
                break
            if q is not None and q.key == "activate":
                app.screen.qview.query_one("#answer").value = activate
            await pilot.press("enter")
        assert app.screen.qview.question.key == "run"
        await pilot.press("t")
        screen = app.screen
        assert isinstance(screen, TrialScreen) and screen.phase == "ready"
        said = str(screen.query_one("#trial-status").render())
        assert "This runs your job now" in said and "python train.py --steps=30" in said and activate in said
        await pilot.press("escape")
        assert screen.job.started == 0 and app.state.trial is None  # nothing ran
        view = app.screen.qview  # the proposal is still there: on the answer line, or above it when too long
        assert view.question.default in (view.typed(), view.above) and view.question.default
        await pilot.press("t", "enter")
        trial_screen = app.screen
        for _ in range(600):
            await pilot.pause(0.05)
            if trial_screen.phase == "done":
                break
        assert trial_screen.phase == "done", "the trial never ended"
        assert "30 optimizer steps" in str(trial_screen.query_one("#trial-status").render())
        await pilot.press("enter")
        assert app.state.trial is not None and app.state.trial.steps == 30
        assert "trial: exited with status 0" in str(app.screen.query_one("#message").render())
        await pilot.press("enter")  # accept the run line it tried
        assert " · optimizer steps: 30" in contract.trial_body(app.state)


def tmux_job(tmp_path: Path, activate: str, job: str, state_home: Path) -> tuple[str, Path]:
    """The app on a repo whose answers are all given, at step 4, in a real terminal."""
    from terminal import WAMF, tmux

    repo = make_repo(tmp_path / "job", {"train.py": job})
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"activate": activate, "script": "train.py", "run": "python train.py",
                                   "reader": "I am an MLSys engineer."}))
    name = f"wamf-trial-{os.getpid()}"
    env = f"XDG_STATE_HOME={state_home} TERM=xterm-256color"
    tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "40",
         f"env {env} {WAMF} {repo} --answers {answers} --contract {tmp_path / 'contract.md'}; sleep 600")
    tmux("resize-window", "-t", name, "-x", "120", "-y", "40")
    return name, repo


@pytest.mark.slow
@pytest.mark.usefixtures("tmux_server")
def test_in_a_terminal_t_then_enter_runs_it_and_the_contract_gets_the_row(tmp_path, activate, state_home):
    from terminal import tmux, wait_for, wait_for_gone

    ran = tmp_path / "ran"
    name, _ = tmux_job(tmp_path, activate, STEPS.format(n=15) + f"open({str(ran)!r}, 'w')\n", state_home)
    try:
        wait_for(name, "Yes, write it")
        tmux("send-keys", "-t", name, "t")
        wait_for(name, "This runs your job now")
        tmux("send-keys", "-t", name, "Escape")
        wait_for_gone(name, "This runs your job now")
        assert not ran.exists()
        tmux("send-keys", "-t", name, "t")
        wait_for(name, "This runs your job now")
        tmux("send-keys", "-t", name, "Enter")
        wait_for(name, "15 optimizer steps; steady", timeout=60)
        assert ran.exists()
        tmux("send-keys", "-t", name, "Enter")
        wait_for_gone(name, "Enter or Esc: back")
        tmux("send-keys", "-t", name, "y")
        wait_for(name, "/who-ate-my-flops:optimize")
    finally:
        tmux("kill-session", "-t", name)
    text = (tmp_path / "contract.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| **Trial** | measured by a trial"))
    assert " · ended: exit 0 after " in row and " · optimizer steps: 15" in row


@pytest.mark.slow
@pytest.mark.usefixtures("tmux_server")
def test_quitting_the_app_stops_the_trial_with_nothing_left(tmp_path, activate, state_home):
    from terminal import tmux, wait_for

    pids = tmp_path / "pids"
    pids.mkdir()
    job = (f"import os, subprocess, time\nchild = subprocess.Popen(['sleep', '300'])\n"
           "escaped = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"  # setsid: out of the group
           f"open(os.path.join({str(pids)!r}, str(os.getpid())), 'w')\n"
           f"open(os.path.join({str(pids)!r}, str(escaped.pid)), 'w')\n"
           f"open(os.path.join({str(pids)!r}, str(child.pid)), 'w')\nprint('up', flush=True)\ntime.sleep(300)\n")
    name, _ = tmux_job(tmp_path, activate, job, state_home)
    try:
        wait_for(name, "Yes, write it")
        tmux("send-keys", "-t", name, "t")
        wait_for(name, "This runs your job now")
        tmux("send-keys", "-t", name, "Enter")
        end = time.monotonic() + 60  # the job and its children have started once all wrote their pid
        while time.monotonic() < end and len(list(pids.iterdir())) < 3:
            time.sleep(0.05)
        assert len(list(pids.iterdir())) == 3
        tmux("send-keys", "-t", name, "C-q")
        end = time.monotonic() + 20
        alive = [int(p.name) for p in pids.iterdir()]
        while time.monotonic() < end and alive:
            alive = [pid for pid in alive if not gone(pid)]
            time.sleep(0.2)
        assert not alive, f"left running after quitting: {alive}"
    finally:
        tmux("kill-session", "-t", name)


@pytest.mark.slow
async def test_a_failed_trial_at_step_4_goes_back_to_the_run_line(tmp_path, activate):
    from wamf_tui import answers
    from wamf_tui.detect.run import detect_all
    from wamf_tui.model import Step
    from wamf_tui.session import store as session
    from wamf_tui.ui.app import WamfApp

    repo = make_repo(tmp_path / "job", {"train.py": "import torch\nraise SystemExit('no data in ./data')\n"})
    state = session.new_state(repo)
    state = state.model_copy(update={"detected": detect_all(repo)})
    state, refused = answers.fill(state, {"activate": activate, "script": "train.py", "run": "python train.py"})
    assert refused == []
    app = WamfApp(state, detect=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.state.step == Step.CONFIRM
        await pilot.press("t", "enter")
        for _ in range(600):
            await pilot.pause(0.05)
            if getattr(app.screen, "phase", "") == "done":
                break
        assert "no data in ./data" in "\n".join(app.screen.result.tail)
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert app.state.step == Step.JOB and app.screen.qview.question.key == "run"
        assert app.screen.qview.typed() == "python train.py"
        assert "trial: exited with status 1" in str(app.screen.query_one("#message").render())


def test_the_step_count_question_says_how_many_steps_the_trial_spent_warming_up():
    from wamf_tui import flow
    from wamf_tui.model import BenchmarkChange, Step

    state = InitState(changes=[BenchmarkChange(what="stop after 30 optimizer steps", how="--steps=30", why="",
                                               flags=["--steps=30"])])
    steps = next(q for q in flow.questions(state, Step.JOB) if q.key == "steps")
    assert "warm-up took" not in steps.prompt
    state = state.model_copy(update={"trial": trial_result("", "python train.py").model_copy(update={"warmup": 7})})
    steps = next(q for q in flow.questions(state, Step.JOB) if q.key == "steps")
    assert "The trial's warm-up took 7 steps: 30 leaves 23 steady." in steps.prompt


def test_the_time_limit_starts_from_the_last_trial():
    assert trial.default_limit(None) == trial.DEFAULT_LIMIT_S
    ran = trial_result("", "python train.py")
    assert trial.default_limit(ran) == 120  # 9.5 s: two minutes at least
    assert trial.default_limit(ran.model_copy(update={"wall_s": 300.0})) == 660
    assert trial.default_limit(ran.model_copy(update={"wall_s": 5000.0})) == 1800
    assert trial.default_limit(ran.model_copy(update={"ended": "limit", "wall_s": 600.0})) == trial.DEFAULT_LIMIT_S


def test_a_wrapper_the_run_line_names_is_looked_for_in_the_repo_not_in_wamf_tuis_own_folder(tmp_path, monkeypatch):
    """Started from a folder that holds an older `wamf_bench.py`, the trial still writes the wrapper the repo
    lacks; one the repo has (after the run line's `cd`) is used as it is."""
    repo = make_repo(tmp_path / "job", {"train.py": "print(1)\n", "sub/x.py": ""})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "wamf_bench.py").write_text("# stale\n")
    monkeypatch.chdir(elsewhere)
    folder = tmp_path / "probe"
    folder.mkdir()

    def write(p: Path) -> None:
        p.write_text("# fresh\n")

    assert trial.with_wrapper_at("python wamf_bench.py train.py", folder, write, repo) == \
        f"python {folder / 'wamf_bench.py'} train.py"
    (repo / "sub" / "wamf_bench.py").write_text("# the repo's own\n")
    assert trial.with_wrapper_at("cd sub && python wamf_bench.py x.py", folder, write, repo) == \
        "cd sub && python wamf_bench.py x.py"


def test_the_probe_overhead_benchmark_loads_the_probe_a_trial_loads():
    """The benchmark copies the probe by path: a move of the probe must move it too (it once pointed at a file
    gone since the rooms were made)."""
    spec = importlib.util.spec_from_file_location(
        "probe_overhead", Path(__file__).resolve().parent.parent / "benchmarks" / "probe_overhead.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.PROBE.read_bytes() == Path(trial.__file__).with_name("step_probe.py").read_bytes()


async def test_the_trials_result_scrolls_at_40x12_and_its_keys_stay_in_view(tmp_path):
    """At 40x12 a long activate path and a dozen verdicts do not fit: the result scrolls with the keys, and the
    line that says how to go back is pinned below it (the audit could not reach it)."""
    from textual.app import App

    from wamf_tui.model import Claim, TrialResult
    from wamf_tui.ui.trial_screen import TrialScreen

    claims = [Claim(claim=f"saves off {i}", expected="none", observed="1 written", ok=False, where=f"t.py:{i}",
                    fix="switch it off with --save-every") for i in range(12)]
    result = TrialResult(command_hash="x", started="now", ended="exited", exit_status=0, steps=30, claims=claims)
    job = trial.Trial("source /very/long/path/to/the/users/own/environment/.venv/bin/activate", "python t.py",
                      tmp_path)
    screen = TrialScreen(job, "source /very/long/path/to/the/users/own/environment/.venv/bin/activate\n" * 3)

    from wamf_tui.ui import app as wamf_app

    class Host(App):
        CSS_PATH = str(Path(wamf_app.__file__).with_name("app.tcss"))  # the app's own styles

        def on_mount(self) -> None:
            self.push_screen(screen)

    async with Host().run_test(size=(40, 12)) as pilot:
        await pilot.pause()
        keys = screen.query_one("#trial-keys")
        assert "Enter or t: start" in str(keys.render()) and keys.region.bottom <= 12
        screen.on_trial_screen_finished(TrialScreen.Finished(result))
        await pilot.pause()
        body = screen.query_one("#trial-body")
        assert "Enter or Esc: back" in str(keys.render()) and 0 < keys.region.y and keys.region.bottom <= 12
        assert body.max_scroll_y > 0 and body.scroll_y == 0
        await pilot.press("end")
        await pilot.pause()
        assert body.scroll_y == body.max_scroll_y


def test_the_step_times_are_the_ranks_that_stepped_most(tmp_path):
    """Each rank appends `pid time` a step; a rank that stepped less (a twin that joined late, a helper process
    that stepped once) is not the one timed."""
    steps = tmp_path / "steps"
    steps.write_text("11 1.0\n22 1.5\n11 2.0\n11 3.0\n22 2.5\nbad line\n")
    assert traces.step_times(steps) == [1.0, 2.0, 3.0]
    assert traces.step_times(tmp_path / "none") == []


def test_a_jobs_last_line_written_as_it_exits_is_read():
    """The last line (a job's error) can reach the pipe between a wait that found nothing and the check that
    the supervisor exited; it was dropped then (a flake of the slow tier: `no data in ./data` missing)."""
    r, w = os.pipe()

    class Exiting:
        stdout = os.fdopen(r, "rb")

        def poll(self) -> int:  # it writes its last line and exits while the reader looks the other way
            if w >= 0:
                os.write(w, b"Traceback ...\nSystemExit: no data in ./data\n")
            return 0

    try:
        assert list(trial._lines(Exiting())) == ["Traceback ...", "SystemExit: no data in ./data"]
    finally:
        os.close(w)
        Exiting.stdout.close()
