"""The flow's rules, one at a time, on states built in the test: which questions a step asks, what an
answer does to the state, and where the user lands. No app, no detection."""

from __future__ import annotations

import pytest

from wamf_tui import flow
from wamf_tui.model import (
    ALLOWED_CHANGES,
    HINTS,
    BenchmarkChange,
    Detected,
    GpuFacts,
    HardwareFacts,
    InitState,
    RepoFacts,
    Step,
)


def state_at(step: Step, key: str, **fields) -> InitState:
    state = flow.go(InitState(**fields), step, key)
    assert flow.current(state).key == key, [q.key for q in flow.questions(state, step)]
    return state


def keys(state: InitState, step: Step) -> list[str]:
    return [q.key for q in flow.questions(state, step)]


def test_step_1_asks_only_what_detection_left_open():
    clean = InitState(detected=Detected(repo=RepoFacts(path="/r", is_git=True, root="/r")))
    assert keys(clean, Step.JOB) == ["repo", "activate", "command", "run", "node", "guarantees"]
    dirty = clean.model_copy(deep=True)
    dirty.detected.repo.modified = ["train.py"]
    assert keys(dirty, Step.JOB)[:2] == ["repo", "dirty"]
    folder = InitState(detected=Detected(repo=RepoFacts(path="/r", is_git=False)))
    assert keys(folder, Step.JOB)[0] == "not_git"


def test_the_benchmark_questions_come_with_the_table_and_wait_while_reading():
    state = InitState(changes=[BenchmarkChange(what="total steps cut to 30", how="--steps=30", why="",
                                               flags=["--steps=30"])])
    assert keys(state, Step.JOB)[2:6] == ["command", "changes", "steps", "mode"]
    assert keys(state.model_copy(update={"reading": True}), Step.JOB)[-1] == "reading"
    assert flow.answer(state_at(Step.JOB, "reading", reading=True), "x")[1].action == "stay"


@pytest.mark.parametrize("key", ["repo", "activate", "node"])
def test_a_text_answer_is_recorded_and_the_flow_moves_on(key):
    state = state_at(Step.JOB, key)
    following = keys(state, Step.JOB)[keys(state, Step.JOB).index(key) + 1]
    new, out = flow.answer(state, f"my {key} answer")
    assert out.error is None and getattr(new, key) == f"my {key} answer"
    assert new.at == following and key in new.answered
    assert getattr(state, key) == "" and state.answered == []  # the state answered is not changed


@pytest.mark.parametrize(("typed", "said"), [("", "empty"), ("TBD", "TBD"), ("<your env>", "<your env>")])
def test_empty_tbd_and_placeholders_are_refused_and_nothing_moves(typed, said):
    state = state_at(Step.JOB, "activate")
    new, out = flow.answer(state, typed)
    assert out.error and out.action == "stay" and new is state and state.at == "activate" and state.activate == ""
    assert "activate" not in state.answered
    if said != "empty":
        assert said in out.error


@pytest.mark.parametrize(("typed", "ok"), [("30", True), ("all", True), ("0", False), ("-3", False), ("ten", False),
                                           ("10000000", False), ("9999999", True)])
def test_the_step_count_takes_a_whole_number_or_all(typed, ok):
    state = state_at(Step.JOB, "steps", changes=[BenchmarkChange(what="total steps cut to 30", how="", why="")])
    assert (flow.answer(state, typed)[1].error is None) == ok


def test_a_gpu_that_is_busy_is_said_in_the_guarantee_question_and_never_vouched_for():
    busy = GpuFacts(index=0, name="H100", memory_used_mib=70000, memory_total_mib=81559, utilization=99)
    state = InitState(detected=Detected(hardware=HardwareFacts(host="n", nvml=True, gpus=[busy])))
    state = flow.go(state, Step.JOB, "guarantees")
    q = flow.current(state)
    assert "GPU 0 busy" in q.prompt and [o.value for o in q.options] == ["recheck", "node", "anyway"]
    state, out = flow.answer(state, "anyway")
    assert out.error is None
    assert state.guarantees.startswith("User chose to continue at") and "GPU 0 busy" in state.guarantees


def test_back_goes_one_question_back_then_to_the_previous_steps_last():
    state = state_at(Step.CHECKS, "recorder")
    seen = []
    for _ in range(11):
        state = flow.back(state)
        seen.append((int(state.step), state.at))
    assert seen == [(2, "extra_checks"), (2, "checks"), (1, "guarantees"), (1, "node"), (1, "run"), (1, "command"),
                    (1, "activate"), (1, "repo"), (0, "reader"), (0, "reader"), (0, "reader")]


def test_the_last_question_of_a_step_leads_to_the_next_step():
    state, out = flow.answer(state_at(Step.CHECKS, "recorder"), "parity")
    assert out.error is None and (state.step, state.at) == (Step.RULES, "allowed")


def test_a_question_that_disappears_before_the_users_keeps_their_place():
    """The index bug: a dirty checkout, the user at `activate`; the checkout becomes clean (a commit in
    another pane, then ctrl+r): `activate` must stay the question, not `command`."""
    state = flow.go(InitState(detected=Detected(repo=RepoFacts(path="/r", is_git=True, root="/r",
                                                               modified=["a.py"]))), Step.JOB)
    state = flow.answer(flow.answer(state, "/r")[0], "continue")[0]
    assert flow.current(state).key == "activate"
    clean = Detected(repo=RepoFacts(path="/r", is_git=True, root="/r"))
    assert flow.current(state.model_copy(update={"detected": clean})).key == "activate"  # only the facts change


def test_a_question_that_disappears_itself_leaves_the_place_to_the_first_unanswered_one():
    """The user at `dirty`; the checkout becomes clean: the question is gone, `activate` is next."""
    state = flow.go(InitState(detected=Detected(repo=RepoFacts(path="/r", is_git=True, root="/r",
                                                               modified=["a.py"]))), Step.JOB)
    state = flow.answer(state, "/r")[0]
    assert flow.current(state).key == "dirty"
    state = state.model_copy(update={"detected": Detected(repo=RepoFacts(path="/r", is_git=True, root="/r"))})
    assert flow.current(state).key == "activate"
    state, out = flow.answer(state, "source .venv/bin/activate")
    assert out.error is None and state.at == "command"


def test_a_place_named_before_new_facts_arrive_stays_put():
    """The user on the first question; detection then finds a folder that is not a git repo: the
    not-a-repo question comes first in the step, but the user is not moved off the question they see."""
    state = flow.go(InitState(), Step.JOB)
    assert flow.current(state).key == "repo"
    state = state.model_copy(update={"detected": Detected(repo=RepoFacts(path="/r", is_git=False))})
    assert keys(state, Step.JOB)[0] == "not_git" and flow.current(state).key == "repo"


@pytest.mark.parametrize(("option", "register"), [(0, "mlsys"), (1, "algo")])
def test_reader_answer_sets_the_register(option, register):
    state = state_at(Step.READER, "reader")
    picked = flow.current(state).options[option].value
    state = flow.answer(state, picked)[0]
    assert state.reader == picked and state.reader_register == register and state.step == Step.JOB


def test_a_reread_keeps_the_users_step_count_and_toggles(tmp_path):
    from conftest import make_repo

    from wamf_tui.propose import proposals
    from wamf_tui.read.analyze import analyze_script

    body = ("import argparse, torch\np = argparse.ArgumentParser()\n"
            "p.add_argument('--{steps}', type=int, default=5000)\np.add_argument('--seed', type=int, default=1)\n"
            "args = p.parse_args()\ntorch.manual_seed(args.seed)\n"
            "for i in range(args.{steps_}):\n    loss = model(x)\n    loss.backward()\n    opt.step()\n")
    root = make_repo(tmp_path / "job", {"train.py": body.format(steps="max-steps", steps_="max_steps")})
    state = flow.take_analysis(InitState(repo_path=str(root), script="train.py", step=Step.RULES),
                               analyze_script(root / "train.py", root))
    changes = proposals.plan(state, 50)
    changes[-1] = changes[-1].model_copy(update={"enabled": False})  # seeds row switched off by the user
    state = state.model_copy(update={"changes": changes})
    state = state.model_copy(update={"run": proposals.run_line(state)})
    assert "--max-steps=50" in state.run
    (root / "train.py").write_text(body.format(steps="iters", steps_="iters"))
    state, said = flow.take_reread(state, analyze_script(root / "train.py", root))
    assert "--iters=50" in state.run and "--max-steps" not in state.run and "--seed" not in state.run
    assert said[0] == "the run line follows it" and state.changes[-1].enabled is False


def _shape(q: flow.Question) -> tuple:
    return (q.key, q.kind, q.default, q.free_text, q.allow_empty, q.filterable,
            [(o.value, o.checked) for o in q.options])


@pytest.mark.parametrize("register", ["algo", "mlsys"])
def test_every_question_of_every_step_as_declared(register):
    """Each question's key, kind, default, whether it takes typed text or an empty answer, and its options,
    for a dirty checkout with a benchmark table; every prompt and every option label is its own wording."""
    from wamf_tui.wording import READER_OPTIONS, explain, say

    st = InitState(reader_register=register, detected=Detected(repo=RepoFacts(
        path="/r", is_git=True, root="/r", branch="main", sha="abc1234", modified=["train.py"])), changes=[
        BenchmarkChange(what="total steps cut to 30", how="--steps=30", why="w", flags=["--steps=30"]),
        BenchmarkChange(what="eval off", how="--eval=0", why="x", flags=["--eval=0"], enabled=False)])
    asked = {step: flow.questions(st, step) for step in Step}
    yes_no = [("yes", False), ("no", False)]
    assert [_shape(q) for q in asked[Step.READER]] == [
        ("reader", "choice", READER_OPTIONS[1], True, False, False, [(o, False) for o in READER_OPTIONS])]
    assert [_shape(q) for q in asked[Step.JOB]] == [
        ("repo", "text", "/r (main @ abc1234)", True, False, False, []),
        ("dirty", "choice", "continue", False, False, False, [("continue", False), ("recheck", False)]),
        ("activate", "text", "", True, False, False, []),
        ("command", "choice", "", True, False, True, []),
        ("changes", "multi", "", False, False, False, [("0", True), ("1", False)]),
        ("steps", "text", "30", True, False, False, []),
        ("mode", "choice", "speed", False, False, False, [("speed", False), ("accuracy", False)]),
        ("run", "text", "", True, False, False, []),
        ("node", "text", "", True, False, False, []),
        ("guarantees", "choice", "yes", False, False, False, yes_no)]
    assert [_shape(q)[:6] for q in asked[Step.CHECKS]] == [
        ("checks", "multi", "", False, False, False), ("extra_checks", "text", "", True, True, False),
        ("recorder", "text", asked[Step.CHECKS][2].default, True, False, False)]
    assert asked[Step.CHECKS][2].default.startswith("parity (record: PARITY=1")
    assert [_shape(q) for q in asked[Step.RULES]] == [
        ("allowed", "multi", "", False, False, False, [(c, i < 4) for i, c in enumerate(ALLOWED_CHANGES)]),
        ("own_tests", "text", "", True, True, False, []),
        ("hands_off", "multi", "", True, False, False, []),
        ("memory_trade", "text", "no more than today", True, True, False, []),
        ("when_to_stop", "text", "-15% step time would do; then hand back", True, True, False, []),
        ("hints", "multi", "", True, False, False, [(h, False) for h in HINTS]),
        ("anything_else", "text", "", True, True, False, [])]
    assert [_shape(q) for q in asked[Step.CONFIRM]] == [("confirm", "choice", "yes", False, False, False, yes_no)]
    for q in (q for qs in asked.values() for q in qs):
        assert q.prompt and q.help == explain(q.key, register), q.key
    labels = {q.key: [o.label for o in q.options] for qs in asked.values() for q in qs}
    worded = {"dirty": ("dirty_continue", "dirty_recheck"), "mode": ("mode_speed", "mode_accuracy"),
              "guarantees": ("guarantee_yes", "guarantee_no"), "confirm": ("confirm_yes", "confirm_no")}
    for key, options in worded.items():
        assert labels[key] == [say(k, register) for k in options]
    notes = [o.note for o in asked[Step.RULES][0].options]
    assert all(notes) if register == "algo" else not any(notes)  # what each level means, for the algo reader
    folder = InitState(detected=Detected(repo=RepoFacts(path="/r", is_git=False)))
    assert _shape(flow.questions(folder, Step.JOB)[0]) == (
        "not_git", "choice", "continue", False, False, False, [("continue", False), ("quit", False)])


def test_each_question_is_declared_once_in_its_steps_module_with_its_words():
    """One declaration per key; its question carries that key (the place the flow keeps); its words are in
    the wording, and every entry of the wording is some question's, or one of the refusals any answer gets."""
    from wamf_tui.questions import REGISTRY
    from wamf_tui.wording import MESSAGES

    st = InitState(detected=Detected(repo=RepoFacts(path="/r", is_git=False, modified=["a.py"])),
                   changes=[BenchmarkChange(what="w", how="--steps=30", why="", flags=["--steps=30"])])
    declared = [a for asks in REGISTRY.values() for a in asks]
    assert len({a.key for a in declared}) == len(declared)
    for step, asks in REGISTRY.items():
        for a in asks:
            assert a.step == step, a.key
            assert a.build(st).key == a.key and a.key in MESSAGES, a.key
            assert all(w in MESSAGES for w in a.words), a.key
    worded = {a.key for a in declared} | {w for a in declared for w in a.words}
    assert set(MESSAGES) - worded == {"tbd", "placeholder", "empty", "paste_joined", "toggles_dropped"}
    assert [a.key for a in REGISTRY[Step.CONFIRM]] == ["confirm", *flow.PHASES]


def test_the_questions_say_what_they_are_about():
    """Prompts carry the facts they ask about; a given answer is the next default; the reader's options are
    the two self-descriptions; a folder outside git can be used or left."""
    from wamf_tui.wording import READER_OPTIONS, explain

    repo = RepoFacts(path="/r/job", is_git=True, root="/r/job", modified=["train.py"])
    st = InitState(detected=Detected(repo=repo), activate="source my/env", script="train.py", reading=True)
    job = {q.key: q for q in flow.questions(st, Step.JOB)}
    assert "(1 modified)" in job["dirty"].prompt and job["activate"].default == "source my/env"
    assert list(job)[-1] == "reading" and _shape(job["reading"]) == ("reading", "choice", "", False, False, False, [])
    assert "train.py" in job["reading"].prompt and job["reading"].help == explain("reading", "algo")
    assert [(o.label, o.value) for o in flow.questions(st, Step.READER)[0].options] == [
        (t, t) for t in READER_OPTIONS]
    st = st.model_copy(update={"reader": "my own words"})
    assert flow.questions(st, Step.READER)[0].default == "my own words"
    folder = InitState(detected=Detected(repo=RepoFacts(path="/srv/data/job", is_git=False)))
    not_git = flow.questions(folder, Step.JOB)[0]
    assert "/srv/data/job" in not_git.prompt
    assert [(o.label, o.value) for o in not_git.options] == [("Continue with this folder", "continue"),
                                                            ("Quit", "quit")]
