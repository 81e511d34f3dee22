"""The background saver: the newest answer wins, quitting waits for the disk, errors are told."""

from __future__ import annotations

import threading
import time

from conftest import make_repo

from wamf_tui import contract, session


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
        state.reader = f"answer {i}"
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
    assert errors and errors[0].startswith("could not save the session to ")
    assert session.state_dir().read_text() == "a file where the folder should be\n"
