"""The app driven by keys through Textual's pilot, on real repos, asserting on the written file."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from conftest import git, make_repo
from helpers import enter_until_done, settle, until

from wamf_tui import demo_repo
from wamf_tui.contract import render as contract
from wamf_tui.model import Step
from wamf_tui.propose import proposals
from wamf_tui.session import store as session
from wamf_tui.ui import app as ui_app
from wamf_tui.ui.app import WamfApp
from wamf_tui.ui.screens import ConfirmScreen, StepScreen
from wamf_tui.ui.start import make_app


def demo_app(tmp_path: Path, **kw) -> WamfApp:
    root = demo_repo.make_demo(str(tmp_path))
    state = session.new_state(root, kw.pop("contract_path", None))
    return WamfApp(state, **kw)


async def test_enter_everywhere_writes_a_passing_contract(tmp_path, monkeypatch):
    threads = []
    save = contract.save_contract

    def recording_save(*args, **kwargs):
        threads.append(threading.current_thread())
        return save(*args, **kwargs)

    monkeypatch.setattr(contract, "save_contract", recording_save)

    def parsed_in_the_app(*args, **kwargs):
        raise AssertionError("the app parsed the script in its own process")

    monkeypatch.setattr("wamf_tui.read.analyze.analyze_script", parsed_in_the_app)
    monkeypatch.setattr("wamf_tui.read.analyze.analyze_script", parsed_in_the_app)
    app = demo_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await enter_until_done(pilot, app)
        text = Path(app.state.contract_path).read_text()
        assert contract.check(text) == []
        assert "/who-ate-my-flops:optimize" in app.screen.qview.question.prompt
        assert "$who-ate-my-flops:optimize" in app.screen.qview.question.prompt
    assert threads and threading.main_thread() not in threads  # no frame waits on the disk
    # The script was read in a child process: this process never parsed it (the analyzer is broken here).
    assert app.state.analysis is not None and app.state.analysis.kind == "training"
    assert "reader          I am an algorithm engineer." in text
    assert f"repo            {app.state.repo_path} (main @ " in text
    assert "User chose to continue at" in text and "no NVIDIA GPU visible" in text  # no GPU here: never "confirmed"


async def test_typed_answers_digits_and_markup_are_literal(tmp_path):
    app = demo_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press(*"[bold]perf[/] person 1 2")  # digits and spaces type once typing started
        await pilot.press("enter")
        assert app.state.reader == "[bold]perf[/] person 1 2"
        assert app.state.reader_register == "mlsys"
        assert app.state.step == Step.JOB
        await pilot.press("escape")
        await pilot.pause()
        assert app.state.step == Step.READER
        await pilot.press("1")  # a digit picks an option
        assert app.state.reader.startswith("I am an MLSys engineer")
        assert app.state.step == Step.JOB


async def test_keys_that_reach_a_pane_are_the_questions(tmp_path):
    """The focus on the preview pane (a write hid the options a frame ago, or a Tab): an Enter answers the
    question and typed letters land in its answer line, never lost in the pane."""
    app = demo_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        app.screen.query_one("#preview").focus()
        await until(pilot, lambda: app.screen.focused is app.screen.query_one("#preview"), "the pane focused")
        want = app.screen.qview.highlighted_value()
        await pilot.press("enter")
        await until(pilot, lambda: app.state.step == Step.JOB, "the reader answered")
        assert want and app.state.reader == want  # Enter took the highlighted option, as in the answer line
        await pilot.press("escape")
        await until(pilot, lambda: app.state.step == Step.READER, "back at the reader")
        app.screen.query_one("#preview").focus()
        await until(pilot, lambda: app.screen.focused is app.screen.query_one("#preview"), "the pane focused")
        await pilot.press(*"perf")
        await until(pilot, lambda: app.screen.query_one("#answer").value == "perf", "typed into the answer")


async def test_placeholder_answer_is_refused_and_kept_editable(tmp_path):
    app = demo_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("enter")  # reader
        assert app.state.step == Step.JOB and isinstance(app.screen, StepScreen)
        await pilot.press("enter")  # repo
        answer = app.screen.query_one("#answer")
        answer.value = "source <venv>/bin/activate"
        await pilot.press("enter")
        assert app.state.activate == ""
        assert "<venv>" in str(app.screen.query_one("#message").render())
        answer.value = "source .venv/bin/activate"
        await pilot.press("enter")
        assert app.state.activate == "source .venv/bin/activate"


@pytest.mark.slow  # walks the whole flow to a written contract
async def test_existing_contract_shows_diff_and_keeps_backup(tmp_path):
    app = demo_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        path = Path(app.state.contract_path)
        path.write_text("# my old contract\n")
        for _ in range(40):
            if isinstance(app.screen, ConfirmScreen) and app.state.at == "overwrite":
                break
            await pilot.press("enter")
            await pilot.pause()
        assert path.read_text() == "# my old contract\n"
        assert "-# my old contract" in str(app.screen.query_one("#preview-body").render())
        # the write hid the options, and the focus went to a pane: the choice must have the keys again
        await until(pilot, lambda: app.screen.focused is app.screen.query_one("#options"), "the choice focused")
        await pilot.press("enter")  # overwrite, keep a .bak
        await until(pilot, lambda: app.state.at == "done", "the contract written")
        copy = {c.title: c for c in app.get_system_commands(app.screen)}["Copy the contract path"]
        copy.callback()  # the palette copies the way `p` does, fallback text included
        await until(pilot, lambda: f"select it here: {path}" in str(app.screen.query_one("#message").render()),
                    "the copied path shown, to select by hand")
        assert app._clipboard == str(path)
    assert path.with_name("contract.md.bak").read_text() == "# my old contract\n"
    assert contract.check(path.read_text()) == []


@pytest.mark.slow  # walks the whole flow to a written contract
async def test_unwritable_contract_path_keeps_answers_and_asks_again(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    app = demo_app(tmp_path, contract_path=None)
    app.state = app.state.model_copy(update={"contract_path": str(blocker / "contract.md")})  # a file as folder
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        for _ in range(40):
            if isinstance(app.screen, ConfirmScreen) and app.state.at == "path":
                break
            await pilot.press("enter")
            await pilot.pause()
        assert app.state.at == "path"
        assert "Your answers are kept" in str(app.screen.query_one("#message").render())
        answer = app.screen.query_one("#answer")
        answer.value = str(tmp_path / "elsewhere.md")
        await pilot.press("enter")
        await until(pilot, lambda: app.state.at == "done", "the contract written")
    assert contract.check((tmp_path / "elsewhere.md").read_text()) == []


@pytest.mark.slow  # walks the whole flow to a written contract
@pytest.mark.parametrize("size", [(60, 30), (40, 12)])
async def test_narrow_terminal_still_walks_the_flow(tmp_path, size):
    app = demo_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        await enter_until_done(pilot, app)
    assert contract.check(Path(app.state.contract_path).read_text()) == []


async def test_answers_survive_a_restart_and_resume(tmp_path):
    app = demo_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press(*"distinctive reader 42", "enter")
        await pilot.press("enter")  # repo
        assert app.state.step == Step.JOB and app.state.at == "activate"
    saved = session.load(app.state.repo_path)
    assert saved is not None and saved.reader == "distinctive reader 42"
    again = WamfApp(session.new_state(app.state.repo_path), saved=saved, detect=False)
    async with again.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("1")  # resume
        await pilot.pause()
        assert again.state.reader == "distinctive reader 42"
        assert again.state.step == Step.JOB and again.state.at == "activate"
        assert isinstance(again.screen, StepScreen) and again.screen.STEP == Step.JOB


async def test_gpu_pane_refreshes_while_visible_and_not_when_hidden(tmp_path, monkeypatch):
    import sys

    from fake_nvml import FakeNvml, gpu, in_children

    in_children(tmp_path, monkeypatch, "[gpu(), gpu()]")  # what the detection child finds
    fake = FakeNvml([gpu(), gpu()])  # what the app's own refresh reads
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setattr(ui_app, "GPU_REFRESH_S", 0.1)
    app = demo_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        assert app.gpu_timer is not None
        fake.gpus[1] = gpu(used=50000, util=99, pids=[1])
        await until(pilot, lambda: not app.state.detected.hardware.gpus[1].free, "the busy GPU never showed")
        assert "busy" in app.export_screenshot()
        await pilot.resize_terminal(40, 12)  # the detected pane is hidden in a tiny pane
        await pilot.pause(0.3)
        calls = fake.calls
        await pilot.pause(0.6)  # six refresh intervals: none may read NVML
        assert fake.calls == calls


async def test_a_rescan_stops_the_previous_detection_and_drops_its_answers(tmp_path, monkeypatch):
    import psutil
    from fake_nvml import in_children

    in_children(tmp_path, monkeypatch, "[gpu()]")
    (tmp_path / "fake-nvml" / "pynvml.py").write_text(  # an NVML that never answers keeps each child busy
        (tmp_path / "fake-nvml" / "pynvml.py").read_text() + "import time\nsys.modules[__name__].nvmlInit = "
        "lambda: time.sleep(30)\n")
    app = demo_app(tmp_path)

    async def only_hardware_pending() -> None:
        for _ in range(200):
            if app.talk.pending == ["hardware"]:
                return
            await pilot.pause(0.05)
        raise AssertionError(app.talk.pending)

    async with app.run_test(size=(120, 40)) as pilot:
        await only_hardware_pending()
        first = app.detection
        tree = [psutil.Process(first.lines.proc.pid), *psutil.Process(first.lines.proc.pid).children(recursive=True)]
        await pilot.press("ctrl+r")
        gone, alive = psutil.wait_procs(tree, timeout=2)
        assert not alive, alive
        await only_hardware_pending()
        assert app.detection is not first and app.detect_run == 2
        assert not any("stopped" in n.message for n in app._notifications)  # the old child's end is not news
        await pilot.press("ctrl+q")


async def test_detection_starts_even_when_the_after_paint_callback_is_lost(tmp_path, monkeypatch):
    """Textual gives an after-refresh callback to the screen current at the time; a screen replaced
    before it paints drops it. The app's own timer must start the child anyway (a CI run under load once
    showed every subject "checking…" after 180 s)."""
    dropped = []
    keep = WamfApp.call_after_refresh

    def lose_the_launch(self, callback, *args, **kwargs):
        if getattr(callback, "__name__", "") == "_launch_detection":
            dropped.append(args)
            return True
        return keep(self, callback, *args, **kwargs)

    monkeypatch.setattr(WamfApp, "call_after_refresh", lose_the_launch)
    app = demo_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: not app.talk.pending, "every subject detected", timeout=90)
        assert dropped and app.launched_run == app.detect_run == 1
        assert app.state.detected.repo is not None
        await pilot.press("ctrl+q")


def dirty_demo(tmp_path: Path) -> tuple[WamfApp, Path]:
    """The demo with an uncommitted change: the dirty question is asked."""
    app = demo_app(tmp_path)
    root = Path(app.state.repo_path)
    (root / "train.py").write_text((root / "train.py").read_text() + "# local tweak\n")
    return app, root


@pytest.mark.slow  # walks the whole flow to a written contract
async def test_dirty_checkout_recheck_then_continue(tmp_path):
    app, root = dirty_demo(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("enter", "enter")  # reader, repo
        assert app.screen.qview.question.key == "dirty"
        git(root, "commit", "-qam", "tweak")  # in another pane
        await pilot.press("2")  # re-check
        await settle(pilot, app)
        assert not app.state.detected.repo.dirty
        assert app.screen.qview.question.key == "activate"  # nothing left to decide
        (root / "train.py").write_text((root / "train.py").read_text() + "# another\n")
        await pilot.press("ctrl+r")
        await settle(pilot, app)
        assert app.screen.qview.question.key == "dirty"  # the re-scan asks it again, where the user was
        await pilot.press("1")  # continue from HEAD without them
        assert "without the uncommitted changes" in app.state.dirty_decision
        await enter_until_done(pilot, app)
    text = Path(app.state.contract_path).read_text()
    assert "Dirty checkout (1 modified) settled" in text
    assert git(root, "log", "-1", "--format=%s").strip() == "tweak"  # the app committed nothing itself


async def test_resume_says_what_moved_and_follows_head(tmp_path):

    app = demo_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("enter", "enter")  # reader, repo
    root = Path(app.state.repo_path)
    old_sha = app.state.detected.repo.sha
    (root / "notes.txt").write_text("x\n")
    git(root, "add", "notes.txt")
    git(root, "commit", "-qm", "moved on")
    (root / "train.py").write_text((root / "train.py").read_text() + "# dirty\n")
    again = make_app(root)  # as the command line starts it: the saved session offered
    async with again.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("1")
        await settle(pilot, again)
        new_sha = again.state.detected.repo.sha
        assert new_sha != old_sha
        assert any(f"HEAD moved since last time: {old_sha} -> {new_sha}" in x for x in again.change_log)
        assert any("became dirty: train.py" in x for x in again.change_log)
        assert again.state.repo.endswith(f"(main @ {new_sha})")


async def test_keys_screen_palette_jump_and_ascii(tmp_path):
    from wamf_tui.ui.dialogs import KeysScreen

    app = demo_app(tmp_path, detect=False)
    app.talk.ascii_only = True
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.screen.has_class("-ascii")
        await pilot.press("enter", "enter")  # reader, repo
        assert app.state.step == Step.JOB
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, KeysScreen)
        assert "ctrl+q" in app.export_screenshot()
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Go to step 0", "enter")
        await until(pilot, lambda: app.state.step == Step.READER, "the palette never went to step 0")
        assert "* 0 Reader" not in str(app.screen.query_one("#steps").render())
        assert "> 0 Reader" in str(app.screen.query_one("#steps").render())


@pytest.mark.parametrize("size", [(80, 24), (40, 12)])
async def test_small_screens_keep_the_highlighted_option_and_the_explanation_in_view(size):
    """At 80x24 and 40x12, on every step's list: down to its last option keeps that option in view, and `?`
    shows its explanation inside the question area (it was a blank pane at 40x12)."""
    from snapshot_states import (
        app_at,
        assert_highlight_in_view,
        assert_message_in_view,
        highlight_in_view,
        message_in_view,
        to_the_last,
    )

    for step, at in ((Step.READER, ""), (Step.JOB, "changes"), (Step.CHECKS, ""), (Step.RULES, ""),
                     (Step.CONFIRM, "")):
        app = app_at(step, at=at)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await pilot.press(*["down"] * to_the_last(app.screen))
            await until(pilot, lambda: highlight_in_view(pilot.app.screen), "the last option scrolled into view")
            assert_highlight_in_view(app.screen)
            assert app.screen.query_one("#options").highlighted == len(app.screen.qview.question.options) - 1
            await pilot.press("question_mark")
            await until(pilot, lambda: message_in_view(pilot.app.screen), "the explanation scrolled into view")
            assert_message_in_view(app.screen)


@pytest.mark.parametrize("size", [(80, 24), (40, 12)])
async def test_the_written_screen_shows_the_optimize_command_on_a_small_screen(size):
    """The closing words hold the command to run next: the list of the exclude offer never pushes it out."""
    from snapshot_states import app_at

    from wamf_tui.contract.render import WriteResult
    from wamf_tui.ui.messages import ContractWritten

    app = app_at(Step.CONFIRM)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        app.state = app.state.model_copy(update={"at": "writing"})
        app.post_message(ContractWritten(WriteResult(written=True), app.talk.contract(), None))
        await until(pilot, lambda: app.state.at == "done", "written")
        await pilot.pause()
        await pilot.pause()
        assert "/who-ate-my-flops:optimize" in app.export_screenshot()
        # the rest of the words (the copy keys last), where the area cuts them short: shift+down scrolls to them
        prompt = app.screen.query_one("#prompt")
        clipped = prompt.max_scroll_y > 0
        assert clipped == (size == (40, 12))
        for _ in range(prompt.max_scroll_y):
            await pilot.press("shift+down")
        await until(pilot, lambda: prompt.scroll_y == prompt.max_scroll_y, "scrolled to the end")
        assert (prompt.scroll_y > 0) == clipped


@pytest.mark.parametrize("size", [(120, 40), (80, 24), (40, 12)])
async def test_the_footer_is_the_same_on_every_step(size):
    """Back, quit, explain, the preview (F2) and the keys on every step, wherever the focus is.
    The footer is rebuilt only when its keys change."""
    from snapshot_states import app_at
    from textual.widgets._footer import FooterKey

    from wamf_tui.ui.widgets import KeysFooter

    want = ["back", "quit", "explain", "preview", "keys"]
    for step in Step:
        app = app_at(step)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()

            def shown(screen=app.screen) -> list[str]:
                return [k.description for k in screen.query(FooterKey) if "-command-palette" not in k.classes]

            for part in ("#answer", "#options"):
                app.screen.query_one(part).focus()
                await until(pilot, lambda: shown() == want, f"{step} {part}: the footer {want}")  # redrawn
            footer = app.screen.query_one(KeysFooter)
            keys = footer._keys
            app.screen.refresh_bindings()  # nothing changed: the keys are not rebuilt (the signal is synchronous)
            assert footer._keys is keys is not None


async def test_panes_repaint_only_what_changed(tmp_path):
    """Every answer and detection result redraws the panes; unchanged text must not re-layout them."""
    app = demo_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        preview, detected = app.screen.query_one("#preview-body"), app.screen.query_one("#detected-body")
        shown = preview.content, detected.content
        options = list(app.screen.query_one("#options").options)
        app.screen.redraw()
        await pilot.pause()
        assert preview.content is shown[0] and detected.content is shown[1]  # no update: the same objects
        # the same question with the same options: not refilled (each refill re-laid the screen out)
        assert all(a is b for a, b in zip(app.screen.query_one("#options").options, options, strict=True))
        pane = app.screen.query_one("#preview")
        pane.show(str(shown[0]) + "\nreader  perf person\n")  # what an answer does to the text
        await pilot.pause()
        assert preview.content is not shown[0]
        assert "perf person" in str(preview.content)


async def test_the_collector_comes_back_once_the_first_frame_is_up(tmp_path):
    """`cli.main` starts without the cyclic collector (start-up spent 70 ms in it); the app must
    turn it back on, over a frozen heap, or a long session would never collect a cycle."""
    import gc

    from wamf_tui.cli import main

    assert main(["check", str(tmp_path / "missing.md")]) == 2 and gc.isenabled()  # a subcommand restores it
    app = demo_app(tmp_path, detect=False)
    gc.disable()
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            assert gc.isenabled() and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.enable()


async def test_a_long_proposal_is_shown_once_whole_and_up_puts_it_on_the_line():
    """A run line longer than the answer line is shown whole above it, once; Enter takes it, ↑ puts it on
    the line (its launcher showing) to edit, and typing there replaces nothing but what is typed over."""
    from snapshot_states import app_at

    app = app_at(Step.JOB)
    long = "torchrun --standalone --nproc_per_node=8 train.py " + " ".join(f"--flag{i}=1" for i in range(20))
    app.state = app.state.model_copy(update={"run": long, "at": "run"})
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        answer = app.screen.query_one("#answer")
        prompt = str(app.screen.query_one("#prompt-text").render()).replace("\n", " ")
        assert prompt.count("--flag19=1") == 1 and long in prompt and answer.value == ""
        await pilot.press("up")
        assert answer.value == long and answer.cursor_position == 0
        await pilot.press("x")
        assert answer.value == "x" + long
        answer.value = ""
        await pilot.press("enter")
        await until(pilot, lambda: app.state.at != "run", "the proposal taken")
        assert app.state.run == long


async def test_the_run_question_waits_for_the_scripts_reading(tmp_path, monkeypatch):
    """Enter at the command, then Enter again at once: the full-length job must not be accepted as the
    run line before the reading lands; the next question then is the benchmark table."""
    import threading as th

    from wamf_tui.read import isolated

    release = th.Event()
    real = isolated.analyze_in_child

    def slow(*args, **kwargs):
        release.wait(10)
        return real(*args, **kwargs)

    monkeypatch.setattr(isolated, "analyze_in_child", slow)
    app = demo_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle_detection(pilot, app)
        while app.screen.qview.question.key != "command":
            await pilot.press("enter")
            await pilot.pause()
        await pilot.press("enter", "enter", "enter")
        assert app.screen.qview.question.key == "reading" and app.state.run == ""
        assert "Reading train.py" in app.screen.qview.question.prompt
        release.set()
        await settle(pilot, app)
        assert app.screen.qview.question.key == "changes" and not app.state.reading


async def settle_detection(pilot, app: WamfApp) -> None:
    await pilot.pause()
    for _ in range(1200):  # bounded: a detection that never reports fails here
        if not any(p != "analysis" for p in app.talk.pending):
            return
        await pilot.pause(0.05)
    raise AssertionError(f"detection still pending: {app.talk.pending}")


async def test_resume_reads_a_script_whose_reading_was_cut_off(tmp_path):
    """Killed while the script was read: resume reads it again instead of skipping the benchmark."""
    app = demo_app(tmp_path, detect=False)
    app.state = app.state.model_copy(update={"step": Step.JOB, "script": "train.py", "reading": True,
                                             "answered": ["reader", "repo", "activate", "command"]})
    saved = app.state.model_copy(deep=True)
    again = WamfApp(session.new_state(app.state.repo_path), saved=saved, detect=False)
    async with again.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("1")  # resume
        await settle(pilot, again)
        assert again.state.analysis is not None and again.state.changes and not again.state.reading


async def test_question_mark_explains_and_never_replaces_the_proposal(tmp_path):
    app = demo_app(tmp_path, detect=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("enter")  # reader
        q = app.screen.qview.question
        assert q.kind == "text" and q.default
        await pilot.press("?")
        assert app.screen.qview.typed() == q.default
        await pilot.press("enter")
        assert app.state.repo == q.default


async def test_going_back_shows_the_users_own_answer_not_option_1(tmp_path):
    app = demo_app(tmp_path)
    own = "python train.py --lr 3e-4"
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        while app.screen.qview.question.key != "command":
            await pilot.press("enter")
            await pilot.pause()
        app.screen.query_one("#answer").value = own
        await pilot.press("enter")
        await settle(pilot, app)
        assert app.state.command == own
        await pilot.press("escape")  # one question back, to the command again
        while app.screen.qview.question.key != "command":
            await pilot.press("enter")
            await pilot.pause()
        assert app.screen.qview.typed() == own
        await pilot.press("down")  # moving through the options leaves the own answer for the option
        assert app.screen.qview.typed() == ""


async def to_the_table(pilot, app: WamfApp) -> None:
    """Enter through the proposals up to the benchmark table."""
    await settle(pilot, app)
    while app.screen.qview.question.key != "changes":
        await pilot.press("enter")
        await settle(pilot, app)


async def test_esc_goes_one_question_back_and_enter_keeps_the_tables_toggles(tmp_path):
    """Esc, Esc back to the command and Enter forward again: the script is not read again and the benchmark
    table keeps the row the user turned off."""
    app = demo_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await to_the_table(pilot, app)
        await pilot.press("2", "enter")  # the second row off
        toggles = [c.enabled for c in app.state.changes]
        assert toggles[1] is False and app.state.at == "steps"
        await pilot.press("escape")
        await until(pilot, lambda: app.state.at == "changes", "one question back")
        await pilot.press("escape")
        await until(pilot, lambda: app.state.at == "command", "one more back")
        await pilot.press("enter")
        await until(pilot, lambda: app.state.at == "changes", "forward to the table")
        assert not app.talk.pending and [c.enabled for c in app.state.changes] == toggles
        await pilot.press("enter")
        assert [c.enabled for c in app.state.changes] == toggles and app.state.at == "steps"


async def test_toggles_left_with_esc_before_enter_are_there_on_the_way_back(tmp_path):
    """At the table, `2` turns a row off and Esc goes back before Enter took it: forward again, the row is still
    off (the audit found it back on, silently), and Enter then takes it."""
    app = demo_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await to_the_table(pilot, app)
        before = [c.enabled for c in app.state.changes]
        await pilot.press("2")
        assert 1 not in app.screen.qview.checked
        await pilot.press("escape")
        await until(pilot, lambda: app.state.at != "changes", "one question back")
        await pilot.press("enter")
        await until(pilot, lambda: app.screen.qview.question is not None
                    and app.screen.qview.question.key == "changes", "forward to the table")
        assert 1 not in app.screen.qview.checked and before[1] is True
        await pilot.press("enter")
        await until(pilot, lambda: app.state.at != "changes", "taken")
        assert [c.enabled for c in app.state.changes] == [before[0], False, *before[2:]]


async def test_two_quick_enters_answer_each_question_with_its_own_proposal(tmp_path):
    """At 80x24 the repo line is longer than the answer line (shown above it): an Enter that lands before the
    next question is drawn (two Enters in one batch over SSH) answers that question with its proposal, never
    with the one before's."""
    from textual.widgets import Input

    app = demo_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("enter")  # the reader
        await until(pilot, lambda: app.screen.qview.question.key == "repo", "at the repo question")
        assert app.screen.qview.above  # too long for the line
        screen, answer = app.screen, app.screen.query_one("#answer")
        screen.on_input_submitted(Input.Submitted(answer, answer.value))  # the repo taken; not yet redrawn
        assert app.state.at == "activate" and screen.qview.question.key == "repo"
        screen.on_input_submitted(Input.Submitted(answer, answer.value))  # the second Enter of the batch
        await until(pilot, lambda: app.state.at not in ("repo", "activate"), "both answered")
        assert app.state.activate == proposals.activate_line(app.state) != app.state.repo


async def test_a_command_pasted_over_several_lines_is_kept_whole(tmp_path):
    from textual import events

    app = demo_app(tmp_path, detect=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("enter")  # reader; the repo line is a text question
        answer = app.screen.query_one("#answer")
        answer.post_message(events.Paste("torchrun --nproc_per_node=2 \\\n  train.py \\\n  --lr 3e-4\n"))
        await pilot.pause()
        assert answer.value == "torchrun --nproc_per_node=2 train.py --lr 3e-4"
        assert "3 lines" in str(app.screen.query_one("#message").render())
        answer.value = ""
        answer.post_message(events.Paste("one line"))
        await pilot.pause()
        assert answer.value == "one line"


@pytest.mark.slow  # walks the whole flow to a written contract
async def test_the_app_writes_no_contract_whose_run_line_fails_the_code(tmp_path):
    app = demo_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        while app.screen.qview.question.key != "run":
            await pilot.press("enter")
            await settle(pilot, app)
        app.screen.query_one("#answer").value = "python train.py --no-such-flag 1"
        await pilot.press("enter")
        for _ in range(40):
            if app.state.step == Step.CONFIRM:
                break
            await pilot.press("enter")
            await settle(pilot, app)
        await pilot.press("enter")  # yes, write it
        await pilot.pause()
        await app.workers.wait_for_complete()  # a write, had one started
        assert app.state.at == "confirm" and not Path(app.state.contract_path).exists()
        assert "--no-such-flag is not an option of train.py" in str(app.screen.query_one("#message").render())


async def test_a_rescan_that_drops_a_question_keeps_the_users_place(tmp_path):
    """Dirty checkout; answer the repo, then continue: the user is at `activate`. A commit in another
    pane and ctrl+r remove the dirty question: the user must still be at `activate`, not one further."""
    app, root = dirty_demo(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("enter", "enter")  # reader, repo
        assert app.screen.qview.question.key == "dirty"
        await pilot.press("1")  # continue from HEAD
        await settle(pilot, app)
        assert app.screen.qview.question.key == "activate"
        git(root, "commit", "-qam", "tweak")  # in another pane
        await pilot.press("ctrl+r")
        await settle(pilot, app)
        assert not app.state.detected.repo.dirty
        assert app.screen.qview.question.key == "activate"


async def test_a_word_typed_at_the_command_filters_the_candidates(tmp_path):
    root = make_repo(tmp_path / "job", {f"{n}.py": "import torch\nloss.backward()\nopt.step()\n"
                                        for n in ("train", "train_sft", "train_dpo", "finetune")})
    app = make_app(root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        while app.screen.qview.question.key != "command":
            await pilot.press("enter")
            await settle(pilot, app)
        await pilot.press(*"dpo")
        assert [app.screen.qview.question.options[i].value for i in app.screen.qview.shown] == ["python train_dpo.py"]
        await pilot.press("enter")
        await settle(pilot, app)
        assert app.state.command == "python train_dpo.py" and app.state.script == "train_dpo.py"


@pytest.mark.parametrize(("environ", "encoding", "ascii_"), [
    ({"LANG": "C"}, "utf-8", True),  # Python made stdout UTF-8 (PEP 538); the terminal is not
    ({"LANG": "en_US.UTF-8"}, "utf-8", False),
    ({"LC_ALL": "POSIX", "LANG": "en_US.UTF-8"}, "utf-8", True),
    ({}, "ascii", True),
    ({}, "utf-8", False),
])
def test_ascii_marks_follow_the_terminals_locale(environ, encoding, ascii_):
    from wamf_tui.ui.app import wants_ascii

    assert wants_ascii(environ, encoding) is ascii_


@pytest.mark.slow  # walks the whole flow to a written contract
async def test_resume_reads_a_script_that_changed_and_the_run_line_follows_it(tmp_path):
    """The flag was renamed between sessions: the contract must not keep the old flag or old line numbers."""
    app = demo_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await enter_until_done(pilot, app)
    saved = app.state.model_copy(update={"written": None, "step": Step.RULES, "at": ""}, deep=True)
    assert "--save-every=" in saved.run
    moved = {f"train.py:{int(c.where.split(':')[1]) + 1}" for c in saved.checks}
    script = Path(saved.repo_path) / "train.py"
    renamed = script.read_text().replace("save-every", "ckpt-every").replace("save_every", "ckpt_every")
    script.write_text("# a new first line moves every line down\n" + renamed)
    again = WamfApp(session.new_state(saved.repo_path), saved=saved, detect=False)
    async with again.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("1")  # resume
        await settle(pilot, again)
        assert "--ckpt-every=" in again.state.run and "--save-every" not in again.state.run
        said = str(again.screen.query_one("#message").render())
        assert "train.py changed since your answers" in said and "the run line follows it" in said
        assert moved and {c.where for c in again.state.checks} == moved  # one line down, as the file moved


async def test_a_fit_left_for_a_step_screen_switched_away_does_nothing(tmp_path, monkeypatch):
    """A fit the question area asked for runs after the next refresh of the screen current by then (Textual
    forwards it there). When Enter moved to the next step meanwhile, the old step's screen is being taken apart,
    its parts removed one by one: the fit found no `#prompt` and the app died, its pane left blank (seen after
    a kill -9 and resume under load, where Enter comes while the screens switch)."""
    import asyncio

    from wamf_tui.ui.widgets import AnswerInput

    app = demo_app(tmp_path)
    gate = asyncio.Event()

    async def held(self) -> None:  # the old answer line goes last: the area stays, half taken apart
        await asyncio.wait_for(gate.wait(), 30)

    async def waiting(condition, what: str) -> None:  # not the pilot's pause: it waits for the held removal
        for _ in range(600):
            if condition():
                return
            await asyncio.sleep(0.05)
        raise AssertionError(what)

    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("enter")  # step 1, over step 0's screen: the next step replaces it
        await until(pilot, lambda: isinstance(app.screen, StepScreen) and app.screen.STEP == Step.JOB, "step 1")
        old = app.screen.qview
        monkeypatch.setattr(AnswerInput, "on_unmount", held, raising=False)
        app.state = app.state.model_copy(update={"step": Step.CHECKS})
        app.show_step()  # the screen switch an Enter at a step's last question makes
        await waiting(lambda: [w.id for w in old.children] == ["answer"], "the old area's parts were never removed")
        assert old.is_attached  # still there, waiting for its answer line
        try:
            old._fit()  # what the next screen's refresh ran
        finally:
            monkeypatch.undo()
            gate.set()
        await waiting(lambda: not old.is_attached, "the old area was never removed")
        old._fit()  # and once it is gone
        await pilot.pause()
        assert app.return_code is None and isinstance(app.screen, StepScreen) and app.screen.STEP == Step.CHECKS


async def test_f2_at_80x24_gives_the_preview_most_of_the_screen_and_f2_again_puts_it_back(tmp_path):
    """At 80x24 the preview had 3 to 5 rows and F2 did nothing (it worked only below 60x20): the audit could not
    read the contract at step 4 without tabbing into it."""
    from wamf_tui.ui.widgets import PreviewPane

    app = demo_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        before = app.screen.query_one(PreviewPane).region.height
        await pilot.press("f2")
        await pilot.pause()
        await until(pilot, lambda: app.screen.query_one(PreviewPane).region.height >= 12, "the preview enlarged")
        assert app.screen.query_one(PreviewPane).region.height > before
        await pilot.press("f2")
        await until(pilot, lambda: app.screen.query_one(PreviewPane).region.height == before, "back as it was")
