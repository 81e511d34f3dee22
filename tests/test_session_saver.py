"""The state store: where a session is kept, the background saver (the newest answer wins, quitting waits for
the disk, errors are told), and a damaged file kept beside with what still validates resumed."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

from conftest import make_repo

from wamf_tui.contract import render as contract
from wamf_tui.model import InitState, Step
from wamf_tui.session import store as session


def test_newest_state_wins_and_flush_waits(tmp_path, monkeypatch):
    state = session.new_state(make_repo(tmp_path / "r"))
    real = contract.write_atomic
    gate = threading.Event()

    def slow(path, text):  # a network home directory: the first fsync takes a while
        gate.wait(5)
        real(path, text)

    monkeypatch.setattr(session, "write_atomic", slow)
    saver = session.Saver()
    t = time.perf_counter()
    for i in range(5):
        state = state.model_copy(update={"reader": f"answer {i}"})
        saver.submit(state)
    assert time.perf_counter() - t < 0.5  # submitting never waits on the disk
    assert not saver.flush(timeout=0.2)
    gate.set()
    assert saver.flush()
    assert session.load(state.repo_path).reader == "answer 4"


def test_a_failed_write_is_reported_and_nothing_half_written(tmp_path, state_home):
    state = session.new_state(make_repo(tmp_path / "r"))
    session.state_dir().parent.mkdir(parents=True, exist_ok=True)
    session.state_dir().write_text("a file where the folder should be\n")
    errors: list[str] = []
    saver = session.Saver(on_error=errors.append)
    saver.submit(state)
    assert saver.flush()
    assert errors == [f"could not save the session to {session.state_file(state.repo_path)}: File exists"]
    assert session.state_dir().read_text() == "a file where the folder should be\n"


def test_the_state_file_is_keyed_by_the_resolved_repo_path(tmp_path, monkeypatch):
    root = make_repo(tmp_path / "r")
    (tmp_path / "link").symlink_to(root)
    assert session.state_file(tmp_path / "link") == session.state_file(root)
    assert session.state_file(make_repo(tmp_path / "other")) != session.state_file(root)
    assert session.state_file(root).parent == session.state_dir() and session.state_file(root).suffix == ".json"
    assert len(session.state_file(root).stem) == 16
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert session.state_dir() == tmp_path / "xdg" / "wamf-tui"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert session.state_dir() == tmp_path / "home" / ".local" / "state" / "wamf-tui"


def test_a_new_state_resolves_its_paths(tmp_path, monkeypatch):
    root = make_repo(tmp_path / "r")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    state = session.new_state(root)
    assert (state.repo_path, state.contract_path, state.template_path) == (str(root), str(root / "contract.md"), None)
    state = session.new_state(root, "out/c.md", "~/t.md")
    assert state.contract_path == str(tmp_path / "out" / "c.md")  # from where the user typed it
    assert state.template_path == str(tmp_path / "home" / "t.md")


def test_saved_loaded_and_forgotten(tmp_path, monkeypatch):
    root = make_repo(tmp_path / "r")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "not" / "there" / "yet"))  # its folders are made
    assert session.load(root) is None and session.load_saved(root) == (None, None)
    session.forget(root)  # nothing saved: nothing to do, no error
    state = InitState(repo_path=str(root), reader="r1", step=Step.JOB, activate="source a")
    saver = session.Saver()
    assert saver.flush(timeout=1)  # nothing submitted: nothing to wait for
    saver.submit(state)
    assert saver.flush()
    loaded, said = session.load_saved(root)
    assert said is None and loaded == state
    state = state.model_copy(update={"reader": "r2"})  # the folder is there now: saved again, not refused
    saver.submit(state)
    assert saver.flush() and session.load(root).reader == "r2"
    session.forget(root)
    assert session.load(root) is None and not session.state_file(root).exists()


def _damaged(root: Path, text: str | bytes) -> Path:
    path = session.state_file(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_damaged_files_are_kept_under_names_that_never_collide(tmp_path, monkeypatch):
    root = make_repo(tmp_path / "r")
    monkeypatch.setattr(session.time, "strftime", lambda fmt: "20261201-000000")  # all within one second
    for text in ("[1, 2]", '"a string"', "{not json"):
        path = _damaged(root, text)
        state, said = session.load_saved(root)
        assert state is None and said is not None and said.startswith("the saved session could not be read")
    names = sorted(p.name for p in path.parent.glob(path.name + ".corrupt-*"))
    stem = path.name + ".corrupt-20261201-000000"
    assert names == [stem, stem + "-2", stem + "-3"]
    assert (path.parent / stem).read_text() == "[1, 2]" and not path.exists()


def test_what_validates_is_kept_and_what_does_not_is_named(tmp_path):
    root = make_repo(tmp_path / "r")
    data = json.loads(InitState(repo_path=str(root), reader="kept", activate="source a").to_json())
    data.update(mode="not a mode", step="nine")
    _damaged(root, json.dumps(data))
    state, said = session.load_saved(root)
    assert state is not None and (state.reader, state.activate, state.step) == ("kept", "source a", Step.READER)
    assert said is not None and re.fullmatch(r"the saved session was damaged; it is kept as \S+\.json\.corrupt-"
                                             r"\d{8}-\d{6}; not kept: mode, step", said)
    _damaged(root, json.dumps({"reader": "k", "step": "nine"}).encode() + b"\xff")  # not UTF-8 and not JSON
    state, said = session.load_saved(root)
    assert state is None and said is not None and said.startswith("the saved session could not be read; it is kept as")
    _damaged(root, b'{"reader": "caf\xe9", "activate": "source b"}')  # one bad byte: the rest resumes
    state, said = session.load_saved(root)
    assert state is not None and state.activate == "source b" and state.reader == "caf\ufffd"
    kept = r"the saved session was damaged; it is kept as \S+\.corrupt-\d{8}-\d{6}(-\d+)?"
    assert said is not None and re.fullmatch(kept, said)
    _damaged(root, '{"step": "nine"}')  # its one field is bad: a fresh state, and the field named
    state, said = session.load_saved(root)
    assert state == InitState() and said is not None and said.endswith("; not kept: step")


def test_a_state_file_that_is_a_folder_is_no_session(tmp_path):
    root = make_repo(tmp_path / "r")
    session.state_file(root).mkdir(parents=True)
    state, said = session.load_saved(root)
    assert state is None and said is not None and "not a regular file" in said  # said, not silent


def test_a_session_saved_with_an_old_config_system_label_resumes_whole(tmp_path, monkeypatch):
    """Sessions saved before the config systems were typed hold labels ("HfArgumentParser (TrainingArguments)"):
    they resume as their kind, not as a damaged file whose analysis is dropped."""
    from wamf_tui.model import Analysis

    root = make_repo(tmp_path / "r")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    state = InitState(repo_path=str(root), reader="r1", step=Step.JOB,
                      analysis=Analysis(script="train.py", config_system="hf_trainer"))
    assert session.save_now(state) is None
    data = json.loads(session.state_file(root).read_text())
    data["analysis"]["config_system"] = "HfArgumentParser (TrainingArguments)"
    _damaged(root, json.dumps(data))
    loaded, said = session.load_saved(root)
    assert said is None and loaded is not None and loaded.analysis is not None
    assert loaded.analysis.config_system == "hf_trainer" and loaded.reader == "r1"
