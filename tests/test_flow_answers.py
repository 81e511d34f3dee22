"""Every question's answer, one by one, on a state built here: what the new state holds, what happens
next, what the user is told on a refusal, and that the state answered is never changed."""

from __future__ import annotations

import pytest

from wamf_tui import flow
from wamf_tui.model import (
    ALLOWED_CHANGES,
    Analysis,
    BenchmarkChange,
    Checkpoint,
    Detected,
    GpuFacts,
    HardwareFacts,
    InitState,
    LaunchCommand,
    RepoFacts,
    Required,
    Step,
)
from wamf_tui.propose import proposals
from wamf_tui.wording import say

CLEAN = Detected(repo=RepoFacts(path="/r", is_git=True, root="/r", branch="main", sha="abc1234"),
                 hardware=HardwareFacts(host="n", nvml=True, gpus=[
                     GpuFacts(index=0, name="H100", memory_used_mib=0, memory_total_mib=81559, utilization=0)]))
TABLE = [BenchmarkChange(what="total steps cut to 30", how="--steps=30", why="", flags=["--steps=30"]),
         BenchmarkChange(what="seeds pinned", how="--seed=0", why="", flags=["--seed=0"])]


def at(step: Step, key: str, **fields) -> InitState:
    state = flow.go(InitState(**{"detected": CLEAN, **fields}), step, key)
    assert flow.current(state).key == key, [q.key for q in flow.questions(state, step)]
    return state


def answered(state: InitState, value: str | list[str]) -> tuple[InitState, flow.Outcome]:
    before = state.model_dump()
    new, out = flow.answer(state, value)
    assert state.model_dump() == before  # the state answered stays as it was
    return new, out


TEXT = [(Step.JOB, "repo"), (Step.JOB, "activate"), (Step.JOB, "node"), (Step.CHECKS, "extra_checks"),
        (Step.CHECKS, "recorder"), (Step.RULES, "own_tests"), (Step.RULES, "memory_trade"),
        (Step.RULES, "when_to_stop"), (Step.RULES, "anything_else")]


@pytest.mark.parametrize(("step", "key"), TEXT)
def test_each_text_answer_is_kept_as_typed_and_marked_answered(step, key):
    new, out = answered(at(step, key), f"  my {key} | answer  ")
    assert (out.error, out.action) == (None, "next")
    assert getattr(new, key) == f"my {key} | answer" and new.answered == [key] and new.at != key


def test_what_must_not_change_is_asked_once_the_script_is_read():
    state = at(Step.JOB, "must_not_change", analysis=Analysis(script="train.py"))
    new, out = answered(state, "the loss curve")
    assert out.error is None and new.must_not_change == "the loss curve" and new.at == "node"


@pytest.mark.parametrize(("typed", "key"), [("", "empty"), ("   ", "empty"), ("tbd", "tbd"),
                                            ("<your path>", "placeholder")])
def test_a_refused_text_answer_says_why_and_keeps_the_state(typed, key):
    state = at(Step.JOB, "activate")
    new, out = answered(state, typed)
    assert new is state and out.action == "stay"
    assert out.error == say(key, "algo", found=typed.strip() or "empty")


def test_an_empty_answer_is_taken_where_the_question_allows_it():
    new, out = answered(at(Step.CHECKS, "extra_checks"), "")
    assert out.error is None and new.extra_checks == "" and "extra_checks" in new.answered


@pytest.mark.parametrize(("picked", "register"), [("MLSys engineer", "mlsys"), ("my own words", "algo")])
def test_the_reader_answer_sets_the_wording(picked, register):
    new, out = answered(at(Step.READER, "reader"), picked)
    assert out.error is None and (new.reader, new.reader_register, new.step) == (picked, register, Step.JOB)


@pytest.mark.parametrize(("picked", "action"), [("continue", "next"), ("quit", "back")])
def test_a_folder_that_is_no_git_repo_continues_or_quits(picked, action):
    state = at(Step.JOB, "not_git", detected=Detected(repo=RepoFacts(path="/r", is_git=False)))
    new, out = answered(state, picked)
    assert out.action == action and (new.at == "repo") == (action == "next")


def test_a_dirty_checkout_is_settled_or_checked_again():
    dirty = Detected(repo=RepoFacts(path="/r", is_git=True, root="/r", modified=["a.py"]))
    state = at(Step.JOB, "dirty", detected=dirty)
    new, out = answered(state, "continue")
    assert out.action == "next" and new.dirty_decision == (
        "Dirty checkout (1 modified) settled: optimize starts from HEAD without the uncommitted changes.")
    again, out = answered(state, "recheck")
    assert out.action == "recheck" and again.dirty_decision == ""


def test_a_command_is_read_and_the_script_read_again_only_when_it_changed(tmp_path):
    for name in ("train.py", "other.py"):
        (tmp_path / name).write_text("import torch\n")
    analysis = Analysis(script="train.py", kind="training")
    state = at(Step.JOB, "command", repo_path=str(tmp_path), script="train.py", analysis=analysis, changes=TABLE,
               run="python train.py")
    same, out = answered(state, "python train.py --lr 1")
    assert out.action == "analyze" and same.command == "python train.py --lr 1" and same.script == "train.py"
    assert same.launch is not None and same.launch.args == ["--lr", "1"] and same.run == ""
    assert same.analysis is analysis and same.changes == TABLE  # the same script: its reading stays
    other, _ = answered(state, "python other.py")
    assert other.script == "other.py" and other.analysis is None and other.changes == []


def test_the_same_command_again_keeps_every_later_answer(tmp_path):
    """Esc back to the command, then Enter: nothing is read again, the table's toggles and the run line stay."""
    (tmp_path / "train.py").write_text("import torch\n")
    analysis = Analysis(script="train.py", kind="training")
    toggled = [TABLE[0], TABLE[1].model_copy(update={"enabled": False})]
    state = at(Step.JOB, "command", repo_path=str(tmp_path), script="train.py", analysis=analysis, changes=toggled,
               command="python train.py", run="python train.py --steps=30 --mine")
    same, out = answered(state, "python train.py")
    assert out.action == "next" and not out.said
    assert same.changes == toggled and same.run == "python train.py --steps=30 --mine" and same.at == "changes"
    other, out = answered(state, "python train.py --lr 1")  # a new command: the user's run line goes, and is said
    assert out.action == "analyze" and other.run == "" and out.said == say("run_dropped", "algo", what="command")


def test_a_reading_of_the_same_script_keeps_the_tables_toggles():
    from wamf_tui.propose.benchmark import propose

    analysis = Analysis(script="train.py", kind="training")
    fresh = propose(analysis, 30, "speed", [])
    assert len(fresh) > 1
    toggled = [c.model_copy(update={"enabled": i != 1}) for i, c in enumerate(fresh)]
    state = at(Step.JOB, "command", script="train.py", changes=toggled)
    again = flow.take_analysis(state, analysis)
    assert [c.enabled for c in again.changes] == [c.enabled for c in toggled]


def test_a_command_that_starts_no_python_job_is_refused():
    new, out = answered(at(Step.JOB, "command"), "make all")
    assert out.action == "stay" and out.error == say("command_unknown", "algo", found="make all")


@pytest.mark.parametrize(("picked", "enabled"), [(["0"], [True, False]), ([], [False, False]),
                                                  (["0", "1"], [True, True])])
def test_the_table_rows_are_toggled_and_the_run_line_follows(picked, enabled):
    """The run line follows a changed table, and a run line of the user's own that goes is said; an
    unchanged table (back, then Enter) keeps it."""
    own = "python train.py --steps=30 --seed=0 --mine"
    state = at(Step.JOB, "changes", changes=TABLE, run=own)
    new, out = answered(state, picked)
    assert out.error is None and [c.enabled for c in new.changes] == enabled
    if enabled == [True, True]:
        assert new.run == own and not out.said
    else:
        assert new.run == "" and out.said == say("run_dropped", "algo", what="benchmark table")


@pytest.mark.parametrize(("typed", "ok"), [("30", True), ("all", True), ("whole", True), ("whole job", True),
                                           ("0", False), ("1", True), ("9999999", True), ("10000000", False),
                                           ("ten", False), ("-3", False)])
def test_the_step_count_is_a_whole_number_or_all(typed, ok):
    state = at(Step.JOB, "steps", changes=TABLE, run="python train.py")
    new, out = answered(state, typed)
    if ok:  # no reading: the table cannot change, and the run line stays
        assert out.error is None and new.run == "python train.py" and new.at == "mode"
    else:
        assert out.error == say("steps_number", "algo") and new is state


def test_a_new_step_count_on_a_reading_proposes_the_run_line_again():
    from wamf_tui.propose.benchmark import propose

    analysis = Analysis(script="train.py", kind="training")
    state = at(Step.JOB, "steps", script="train.py", analysis=analysis, changes=propose(analysis, 30, "speed", []),
               run="python train.py --mine")
    same, out = answered(state, proposals.step_count(state))
    assert same.run == "python train.py --mine" and not out.said
    fewer, out = answered(state, "7")
    assert fewer.run == "" and out.said == say("run_dropped", "algo", what="step count")


@pytest.mark.parametrize(("picked", "mode"), [("accuracy", "accuracy"), ("speed", "speed")])
def test_the_mode_is_kept_and_the_run_line_follows(picked, mode):
    state = at(Step.JOB, "mode", changes=TABLE, run="python train.py", mode="accuracy" if mode == "speed" else "speed")
    new, out = answered(state, picked)
    assert out.error is None and new.mode == mode and new.run == ""
    kept, out = answered(new.model_copy(update={"at": "mode", "run": "python train.py"}), picked)
    assert kept.run == "python train.py"  # the same mode again: the run line stays


def test_a_run_line_without_a_required_input_is_refused_with_its_name():
    analysis = Analysis(script="train.py", required=[Required(name="--data", kind="option", file="train.py", line=3)])
    state = at(Step.JOB, "run", analysis=analysis, script="train.py")
    new, out = answered(state, "python train.py --lr 1")
    assert new is state and out.error == say("run_missing", "algo", names="--data")
    given, out = answered(state, "python train.py --data /d")
    assert out.error is None and given.run == "python train.py --data /d"


def test_a_run_line_that_leaves_out_what_the_readme_asks_for_is_refused():
    launch = LaunchCommand(command="python train.py --model <path>", launcher="python", path="train.py",
                           source="README.md:3", left_out=["--model <path>"])
    state = at(Step.JOB, "run", launch=launch, script="train.py")
    new, out = answered(state, "python train.py")
    assert new is state and out.error == say("run_left_out", "algo", names="--model <path>", source="README.md")
    given, out = answered(state, "python train.py --model /m")
    assert out.error is None and given.run == "python train.py --model /m"


def test_the_guarantees_are_confirmed_declined_or_the_node_asked_again():
    state = at(Step.JOB, "guarantees")
    yes, out = answered(state, "yes")
    assert out.action == "next" and yes.guarantees.startswith("User confirmed at ") and yes.step == Step.CHECKS
    no, out = answered(state, "no")
    assert out.action == "stay" and no.guarantees == "" and (no.step, no.at) == (Step.JOB, "repo")


def test_known_problems_are_continued_past_rechecked_or_sent_back_to_the_node():
    busy = Detected(hardware=HardwareFacts(host="n", nvml=True, gpus=[
        GpuFacts(index=0, name="H100", memory_used_mib=70000, memory_total_mib=81559, utilization=99)]))
    state = at(Step.JOB, "guarantees", detected=busy)
    anyway, out = answered(state, "anyway")
    assert out.action == "next" and anyway.guarantees.startswith("User chose to continue at ")
    assert "GPU 0 busy" in anyway.guarantees
    node, out = answered(state, "node")
    assert out.action == "stay" and node.at == "node" and node.guarantees == ""
    again, out = answered(state, "recheck")
    assert out.action == "recheck" and again.guarantees == ""


def test_checkpoints_are_picked_from_the_proposals_then_from_the_users_own_list():
    checks = [Checkpoint(name="loss", where="train.py:4", what="loss", steps="1-30", tolerance="rtol 1e-5"),
              Checkpoint(name="grad norm", where="train.py:5", what="norm", steps="1-30", tolerance="rtol 1e-3")]
    state = at(Step.CHECKS, "checks", checks=checks, answered=["checks"])
    new, out = answered(state, ["1"])
    assert out.error is None and [(c.name, c.enabled) for c in new.checks] == [("loss", False), ("grad norm", True)]


@pytest.mark.parametrize(("key", "picked", "field", "kept"), [
    ("allowed", [ALLOWED_CHANGES[3], ALLOWED_CHANGES[0]], "allowed_changes", [ALLOWED_CHANGES[0], ALLOWED_CHANGES[3]]),
    ("allowed", ["not a change"], "allowed_changes", []),
    ("hints", ["bf16", "my own hint"], "hints", ["bf16", "my own hint"]),
    ("hands_off", ["data/", "eval/"], "hands_off", "data/, eval/"),
])
def test_the_rules_lists_are_kept(key, picked, field, kept):
    new, out = answered(at(Step.RULES, key), picked)
    assert out.error is None and getattr(new, field) == kept and key in new.answered


def test_a_placeholder_in_a_list_is_refused():
    state = at(Step.RULES, "hints")
    new, out = answered(state, ["bf16", "<your hint>"])
    assert new is state and out.error == say("placeholder", "algo", found="<your hint>")


@pytest.mark.parametrize(("picked", "action", "place"), [("yes", "write", "writing"), ("no", "back", "confirm")])
def test_the_confirmation_writes_or_goes_back(picked, action, place):
    new, out = answered(at(Step.CONFIRM, "confirm"), picked)
    assert (out.action, new.step, new.at) == (action, Step.CONFIRM, place)
    if place == "writing":  # an Enter before the next frame: no second write
        assert answered(new, "yes") == (new, flow.Outcome(None, "stay"))


def test_the_write_is_the_flows_place_and_an_enter_meanwhile_does_nothing(tmp_path):
    state = at(Step.CONFIRM, "writing", contract_path=str(tmp_path / "contract.md"))
    assert flow.current(state).prompt == f"Writing {tmp_path / 'contract.md'} …"
    assert answered(state, "yes") == (state, flow.Outcome(None, "stay"))
    assert flow.back(state) is state  # its outcome comes back to this place
    assert [q.key for q in flow.questions(state, Step.CONFIRM)] == ["writing"]


@pytest.mark.parametrize(("diff", "error", "place", "said"), [
    ("-old\n+new\n", None, "overwrite", ""),
    (None, "Permission denied", "path", "Cannot write {path}: Permission denied. Answers kept; give another path."),
    (None, None, "done", "")])
def test_a_writes_outcome_is_the_next_place(tmp_path, diff, error, place, said):
    path = str(tmp_path / "contract.md")
    new, line = flow.written(at(Step.CONFIRM, "writing", contract_path=path, reader_register="mlsys"), diff, error)
    assert (new.at, line) == (place, said.format(path=path))
    assert new.written == (path if place == "done" else None)


@pytest.mark.parametrize(("picked", "action", "place"), [
    ("overwrite", "overwrite", "writing"), ("other", "stay", "path"), ("back", "stay", "confirm")])
def test_a_different_contract_on_disk_is_overwritten_written_elsewhere_or_left(picked, action, place):
    new, out = answered(at(Step.CONFIRM, "overwrite"), picked)
    assert (out.action, new.at, new.step) == (action, place, Step.CONFIRM)
    assert new.answered == []  # a phase of the write, not an answer of the contract


@pytest.mark.parametrize("place", ["overwrite", "path", "done"])
def test_esc_from_a_question_of_the_write_is_the_confirmation(place):
    """Not the rules' last question: the confirmation is one question back from what the write asked."""
    new = flow.back(at(Step.CONFIRM, place, written="/r/contract.md" if place == "done" else None))
    assert (new.step, new.at) == (Step.CONFIRM, "confirm")
    assert flow.current(new).key == "confirm"


def test_another_path_is_the_repos_when_relative_and_a_folder_gets_contract_md(tmp_path):
    (tmp_path / "notes").mkdir()
    state = at(Step.CONFIRM, "path", repo_path=str(tmp_path), contract_path=str(tmp_path / "a" / "contract.md"))
    assert flow.current(state).default == str(tmp_path / "a" / "contract.md")
    for typed, where in [("notes", tmp_path / "notes" / "contract.md"), ("c.md", tmp_path / "c.md"),
                         (str(tmp_path / "x.md"), tmp_path / "x.md")]:
        new, out = answered(state, typed)
        assert (out.action, new.contract_path, new.at) == ("write", str(where), "writing"), typed
    new, out = answered(state, "")
    assert new is state and out.error == say("empty", "algo")


def test_done_offers_to_hide_the_apps_files_and_says_when_it_leaves_them(tmp_path):
    state = at(Step.CONFIRM, "done", repo_path=str(tmp_path), contract_path=str(tmp_path / "contract.md"),
               reader_register="mlsys")
    q = flow.current(state)
    assert q.prompt.startswith(f"Written: {tmp_path / 'contract.md'}. Next: /who-ate-my-flops:optimize")
    assert [o.value for o in q.options] == ["no", "yes"] and "contract.md" in q.options[1].label
    assert answered(state, "yes")[1].action == "exclude"
    new, out = answered(state, "no")
    assert (out.action, out.said, new.at) == ("stay", ".git/info/exclude left alone · ctrl+q quits.", "done")
    outside = at(Step.CONFIRM, "done", repo_path=str(tmp_path / "r"), contract_path=str(tmp_path / "c.md"))
    assert flow.current(outside).options == []  # nothing of the app's in the checkout: nothing to offer


def test_a_session_saved_during_the_write_resumes_at_the_confirmation():
    for place in flow.PHASES:
        assert flow.resumed(at(Step.CONFIRM, place)).at == "confirm"
    assert flow.resumed(at(Step.RULES, "hints")).at == "hints"


def test_the_last_question_of_each_step_leads_to_the_next_ones_first():
    for step, key, value, nxt in [(Step.READER, "reader", "MLSys engineer", (Step.JOB, "repo")),
                                  (Step.CHECKS, "recorder", "parity", (Step.RULES, "allowed")),
                                  (Step.RULES, "anything_else", "", (Step.CONFIRM, "confirm"))]:
        new, _ = answered(at(step, key), value)
        assert (new.step, new.at) == nxt, key


def test_unattended_says_nobody_vouched_and_moves_on():
    state = at(Step.JOB, "guarantees")
    new = flow.unattended(state)
    assert new.guarantees.startswith("Not confirmed by a person: the answers file supplied the answers (")
    assert new.answered == ["guarantees"] and new.step == Step.CHECKS
    assert flow.unattended(new.model_copy(update={"step": Step.JOB, "at": "guarantees"})).answered == ["guarantees"]


TRAIN = ("import argparse, torch\np = argparse.ArgumentParser()\n"
         "p.add_argument('--max-steps', type=int, default=5000)\nargs = p.parse_args()\n"
         "for i in range(args.max_steps):\n    loss = model(x)\n    loss.backward()\n    opt.step()\n")


def test_a_reading_that_lands_shows_the_table_first_and_a_later_one_keeps_the_users_place(tmp_path):
    from wamf_tui.read.analyze import analyze_script

    (tmp_path / "train.py").write_text(TRAIN)
    analysis = analyze_script(tmp_path / "train.py", tmp_path)
    waiting = at(Step.JOB, "reading", repo_path=str(tmp_path), script="train.py", reading=True)
    new = flow.take_analysis(waiting, analysis)
    assert not new.reading and new.analysis is analysis and new.at == "changes"
    assert [c.what for c in new.changes][0] == "total steps cut to 30 (was 5000)"
    assert waiting.reading and waiting.analysis is None  # the state it was given is unchanged
    later = flow.take_analysis(new.model_copy(update={"answered": ["changes"], "at": "node"}), analysis)
    assert later.at == "node"  # already answered: the user stays where they are
    other = flow.take_analysis(at(Step.CHECKS, "recorder", repo_path=str(tmp_path), script="train.py"), analysis)
    assert (other.step, other.at) == (Step.CHECKS, "recorder")
    asked = waiting.model_copy(update={"answered": ["repo", "activate", "command"]})
    inference = flow.take_analysis(asked, Analysis(script="train.py", kind="inference"))
    assert inference.changes == [] and flow.current(inference).key == "run"  # no table: on to the run line


def test_a_reading_that_fails_lets_the_run_line_be_asked_on_what_is_known():
    waiting = at(Step.JOB, "reading", script="train.py", reading=True)
    new = flow.analysis_failed(waiting)
    assert not new.reading and (new.step, new.at) == (Step.JOB, "run") and waiting.reading
    elsewhere = flow.analysis_failed(at(Step.CHECKS, "recorder").model_copy(update={"reading": True}))
    assert not elsewhere.reading and (elsewhere.step, elsewhere.at) == (Step.CHECKS, "recorder")
    done = at(Step.JOB, "node")
    assert flow.analysis_failed(done) is done  # nothing was being read: nothing moves


def test_a_reread_says_what_moved_and_keeps_the_users_own_run_line(tmp_path):
    from wamf_tui.propose import proposals
    from wamf_tui.read.analyze import analyze_script

    (tmp_path / "train.py").write_text(TRAIN)
    state = flow.take_analysis(at(Step.RULES, "allowed", repo_path=str(tmp_path), script="train.py"),
                               analyze_script(tmp_path / "train.py", tmp_path))
    own = state.model_copy(update={"run": "python train.py --max-steps=7"})
    (tmp_path / "train.py").write_text("# moved\n" + TRAIN.replace("max-steps", "iters").replace("max_steps", "iters"))
    again = analyze_script(tmp_path / "train.py", tmp_path)
    kept, said = flow.take_reread(own, again)
    assert kept.run == "python train.py --max-steps=7" and said == ["your own run line is kept: check its flags"]
    followed, said = flow.take_reread(state.model_copy(update={"run": proposals.run_line(state)}), again)
    assert "--iters=30" in followed.run and said == ["the run line follows it"]
    checks = proposals.checkpoints(state)
    picked = state.model_copy(update={"run": proposals.run_line(state), "answered": ["checks"],
                                      "checks": [c.model_copy(update={"enabled": False}) for c in checks]})
    moved, said = flow.take_reread(picked, again)
    assert said == ["the run line follows it", "checkpoint lines re-read"]
    assert [c.enabled for c in moved.checks] == [False] * len(moved.checks)  # the user's choices stay
    assert [c.where for c in moved.checks] != [c.where for c in checks]
