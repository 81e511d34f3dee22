"""A trial checks every claim of the contract (#33): real CPU PyTorch jobs that save, start a tracker,
evaluate at step 0 or write into the checkout. The contract each is checked against is the one the
app proposes for it (its typed facts, `InitState`), or that one with one claim turned false: the
claim the job disproves fails and names the job's line; the right contract holds every claim."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import make_repo

from wamf_tui import answers
from wamf_tui.bench import results, trial
from wamf_tui.contract import proof
from wamf_tui.detect.run import detect_all
from wamf_tui.model import Claim, Effect, InitState, TrialResult
from wamf_tui.session import store as session

JOB = """import argparse
import torch
p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=100)
{flags}args = p.parse_args()
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
{setup}for step in range(args.steps):
{body}    loss = model(torch.randn(4, 8)).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
{after}"""

SAVES = JOB.format(flags='p.add_argument("--save-every", type=int, default=10)\n', setup="", body="",
                   after="    if (step + 1) % args.save_every == 0:\n"
                         "        torch.save(model.state_dict(), f'ckpt_{step}.pt')\n")
SAVE_LINE = "train.py:15"
# TensorBoard is not installed here: the job's own `tensorboardX` (a module on its path, its code) stands in
TENSORBOARD = JOB.format(flags="", setup='from tensorboardX import SummaryWriter\nwriter = SummaryWriter("runs")\n',
                         body="", after='    writer.add_scalar("loss", loss.item(), step)\n')
FAKE_TB = ("import os\nclass SummaryWriter:\n    def __init__(self, logdir=None):\n"
           "        os.makedirs(logdir or 'runs', exist_ok=True)\n    def add_scalar(self, *a):\n        pass\n")
EVALS = JOB.format(flags='p.add_argument("--eval-every", type=int, default=5)\n',
                   setup="def evaluate(model):\n    model.eval()\n    with torch.no_grad():\n"
                         "        print(model(torch.ones(1, 8)).item())\n    model.train()\n",
                   body="    if step % args.eval_every == 0:\n        evaluate(model)\n", after="")
WRITES = JOB.format(flags='p.add_argument("--log", default="progress.txt")\n', setup="", body="",
                    after='    open(args.log, "a").write(f"{step} {loss.item()}\\n")\n')


@pytest.fixture
def activate(tmp_path) -> str:
    bin_dir = tmp_path / "envbin"
    bin_dir.mkdir()
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    return f"export PATH={bin_dir}:$PATH"


def proposed(repo: Path, activate: str) -> InitState:
    """The contract the app proposes for the job: its analysis, changes, rows and run line (30 steps)."""
    state = session.new_state(repo)
    state = state.model_copy(update={"detected": detect_all(repo)})
    state, refused = answers.fill(state, {"activate": activate, "script": "train.py", "steps": 30})
    assert refused == []
    return state


def tried(state: InitState) -> TrialResult:
    job = trial.Trial(state.activate, state.run, Path(state.repo_path), grace_s=1.0)
    return proof.run(job, proof.expected(state))


def by_claim(result: TrialResult) -> dict[str, Claim]:
    return {c.claim: c for c in result.claims}


def failed(result: TrialResult) -> list[Claim]:
    return [c for c in result.claims if not c.ok]


def with_row(state: InitState, site: str) -> InitState:
    """The contract with the changes row of the fact at `site` taking it out of the run."""
    changes = [c.model_copy(update={"off": True, "enabled": True}) if site in c.sites else c for c in state.changes]
    assert changes != state.changes
    return state.model_copy(update={"changes": changes})


@pytest.mark.slow
def test_saves_every_10_steps_a_contract_whose_run_line_lacks_the_switch_fails_at_the_save_line(tmp_path, activate):
    repo = make_repo(tmp_path / "job", {"train.py": SAVES, ".gitignore": "runs/\n"})
    state = proposed(repo, activate)
    assert "--save-every=" in state.run
    right = tried(state)
    assert failed(right) == [] and by_claim(right)["saves off"].observed == "0 written"
    assert by_claim(right)["cap 30 steps"].observed == "30 ran"
    wrong = tried(state.model_copy(update={"run": state.run.replace(" --save-every=1000000000", "")}))
    saves = by_claim(wrong)["saves off"]
    assert (saves.ok, saves.where, saves.fix) == (False, SAVE_LINE, "switch it off with --save-every")
    assert saves.observed == "3 written (ckpt_9.pt)" and saves.row.startswith("torch.save off")
    assert not by_claim(wrong)["nothing written into the checkout"].ok  # ckpt_*.pt, in the repo


@pytest.mark.slow
def test_a_tracker_the_contract_says_is_off_fails_naming_its_line(tmp_path, activate):
    repo = make_repo(tmp_path / "job", {"train.py": TENSORBOARD, "tensorboardX/__init__.py": FAKE_TB,
                                        ".gitignore": "runs/\n"})
    state = proposed(repo, activate)
    right = tried(state)  # the app says it stays on: it has no switch
    assert failed(right) == [], failed(right)
    wrong = tried(with_row(state, "train.py:9"))
    trackers = by_claim(wrong)["trackers off"]
    assert (trackers.ok, trackers.where) == (False, "train.py:9")
    assert trackers.observed == "tensorboard started, writing to runs"


@pytest.mark.slow
def test_an_eval_at_step_0_the_contract_takes_out_fails_at_its_call(tmp_path, activate):
    repo = make_repo(tmp_path / "job", {"train.py": EVALS, ".gitignore": "runs/\n"})
    state = proposed(repo, activate)
    right = tried(state)  # the app says it still runs once, at step 0
    assert failed(right) == [], failed(right)
    wrong = tried(with_row(state, "train.py:16"))
    evals = by_claim(wrong)["evals off"]
    assert (evals.ok, evals.where, evals.fix) == (False, "train.py:16", "switch it off with --eval-every")
    assert evals.observed == "eval() on the trained model at step 0"


@pytest.mark.slow
def test_a_file_written_into_the_working_folder_fails_the_checkout_claim_at_its_line(tmp_path, activate):
    repo = make_repo(tmp_path / "job", {"train.py": WRITES, ".gitignore": "runs/\n"})
    state = proposed(repo, activate)
    wrong = tried(state)  # reading the code did not see the log file: the trial does
    checkout = by_claim(wrong)["nothing written into the checkout"]
    assert (checkout.ok, checkout.observed, checkout.where) == (False, "wrote progress.txt", "train.py:14")
    right = tried(state.model_copy(update={"run": state.run + f" --log={repo}.wamf-bench/progress.txt"}))
    assert failed(right) == [], failed(right)


@pytest.mark.slow
def test_row_lines_are_traced_for_the_first_steps_only(tmp_path, activate):
    repo = make_repo(tmp_path / "job", {"train.py": SAVES, ".gitignore": "runs/\n"})
    state = proposed(repo, activate)
    state = state.model_copy(update={"checks": [*state.checks, state.checks[0].model_copy(
        update={"name": "after", "where": "train.py:1", "site": "train.py:1"})]})  # the import line: before any step
    result = tried(state)
    rows = {c.claim: c for c in result.claims if c.claim.startswith("row ")}
    assert rows["row loss"].ok and rows["row loss"].observed == "ran in step 1, 2, 3"  # then the tracer is off
    assert not rows["row after"].ok and rows["row after"].observed == "ran only before the first step"
    assert "FAILED  rows: 4 of 5 lines ran during training steps" in proof.describe(result.claims)


BOTH = JOB.format(flags='p.add_argument("--save-every", type=int, default=10)\n'
                         'p.add_argument("--eval-every", type=int, default=5)\n',
                  setup="def evaluate(model):\n    model.eval()\n    model.train()\n",
                  body="    if (step + 1) % args.eval_every == 0:\n        evaluate(model)\n",
                  after="    if (step + 1) % args.save_every == 0:\n        torch.save(model.state_dict(), 'c.pt')\n")


def test_rewording_the_contracts_rows_leaves_every_verdict_the_same(tmp_path):
    """The claims come from the changes' and rows' typed facts (`kind`, `sites`, `off`, `cap`, `site`), never
    from their sentences: the same trial holds the reworded contract to the same verdicts."""
    repo = make_repo(tmp_path / "job", {"train.py": BOTH, ".gitignore": "runs/\n"})
    state = proposed(repo, "true")
    assert state.analysis is not None
    save, ev = state.analysis.checkpoints[0], state.analysis.evals[0]
    sites = [f"{save.file}:{save.line}", f"{ev.file}:{ev.line}"]
    rows = [c.site for c in state.checks if c.site]
    seen = [Effect(kind="save", what="torch.save", where=sites[0], stack=[sites[0]], step=9, path="c.pt"),
            Effect(kind="eval", what="eval", where=sites[1], stack=[sites[1]], step=0)]
    seen += [Effect(kind="line", what=site, where=site, step=s) for site in rows for s in range(3)]
    result = result_with(seen, steps=30)
    reworded = state.model_copy(update={
        "changes": [c.model_copy(update={"what": f"change {i}, as agreed"}) for i, c in enumerate(state.changes)],
        "checks": [c.model_copy(update={"where": f"the {c.name} line"}) for c in state.checks]})

    def verdicts(s: InitState) -> list[tuple]:
        return [(c.claim, c.expected, c.observed, c.ok, c.where, c.fix) for c in proof.check(proof.expected(s), result)]

    assert verdicts(reworded) == verdicts(state)
    claims = {c[0]: c for c in verdicts(state)}
    assert claims["cap 30 steps"][3] and len(rows) == 4 and all(claims[f"row {c.name}"][3] for c in state.checks)
    assert claims["saves off"][3:] == (False, sites[0], "switch it off with --save-every")
    assert claims["evals off"][3:] == (False, sites[1], "switch it off with --eval-every")


def effects(*items: tuple) -> list[Effect]:
    return [Effect(kind=k, what=w, where=where, stack=[where], step=step) for k, w, where, step in items]


def result_with(effects_: list[Effect], steps: int = 30, ended: str = "exited") -> TrialResult:
    return TrialResult(command_hash="x", started="now", ended=ended, exit_status=0, steps=steps, effects=effects_)


@pytest.mark.parametrize("steps, ended, observed, ok", [
    (30, "exited", "30 ran", True),
    (31, "exited", "31 ran: the cap did not stop it", False),
    (12, "limit", "stopped at the time limit after 12", False),
    (20, "exited", "20 ran: the job ended first", False),
])
def test_the_cap_claim(steps, ended, observed, ok):
    claim = proof.check(proof.Expected(steps=30), result_with([], steps=steps, ended=ended))[0]
    assert (claim.claim, claim.observed, claim.ok) == ("cap 30 steps", observed, ok)


@pytest.mark.parametrize("stated, seen, ok", [
    ("bf16", [("autocast", "bfloat16", "t.py:3", 0), ("params", "float32", "t.py:5", 1)], True),
    ("bf16", [("params", "float32", "t.py:5", 1)], False),
    ("fp32", [("autocast", "float16", "t.py:3", 0)], False),
    ("fp32", [("params", "float32", "t.py:5", 1)], True),
])
def test_the_precision_claim(stated, seen, ok):
    claims = {c.claim: c for c in proof.check(proof.Expected(precision=stated), result_with(effects(*seen)))}
    assert claims[f"precision {stated}"].ok is ok


@pytest.mark.parametrize("mode, ok", [("disabled", True), ("offline", False), ("online", False)])
def test_a_wandb_run_in_disabled_mode_starts_no_tracker(mode, ok):
    seen = [Effect(kind="tracker", what="wandb", mode=mode, where="t.py:4")]
    claims = {c.claim: c for c in proof.check(proof.Expected(), result_with(seen))}
    assert claims["trackers off"].ok is ok


def test_the_claims_of_a_contract_without_its_session_come_from_its_text():
    text = ("## Required\n\n```\nrun             WAMF_MAX_STEPS=25 WAMF_OUT=out python wamf_bench.py t.py\n```\n\n"
            "| checkpoint | where | what | steps | tolerance |\n|---|---|---|---|---|\n"
            "| loss | t.py:9 | loss value | every step | rtol 1e-5 |\n"
            "| model outputs | t.py:8 | mean \\|output\\|, shape | steps 1-3 | rtol 1e-5 |\n"
            "| grad norm | the clip call | norm | every step | rtol 1e-3 |\n")
    exp = proof.from_contract(text)
    assert (exp.steps, exp.out, exp.rows) == (25, "out", (("loss", "t.py:9"), ("model outputs", "t.py:8")))
    # run from the benchmark folder: its `WAMF_OUT=.` is that folder
    moved = text.replace("WAMF_MAX_STEPS=25 WAMF_OUT=out python wamf_bench.py t.py",
                         "mkdir -p runs/wamf-bench && cd runs/wamf-bench && WAMF_OUT=. python /w/wamf_bench.py "
                         "../../t.py")
    assert proof.from_contract(moved).out == "runs/wamf-bench"


@pytest.mark.slow
def test_try_json_carries_the_claims(tmp_path, activate):
    """A contract with no session of it at hand: its cap and rows come from its text."""
    from test_trial import wamf

    repo = make_repo(tmp_path / "job", {"train.py": SAVES, ".gitignore": "runs/\ncontract.md\n"})
    (repo / "contract.md").write_text(f"## Required\n\n```\nactivate        {activate}\nrun             "
                                      "WAMF_MAX_STEPS=12 python wamf_bench.py train.py\n```\n")
    out = wamf("try", str(repo), "--json")
    assert out.returncode == 4, out.stderr  # it ran, and a claim failed
    claims = {c["claim"]: c for c in json.loads(out.stdout)["claims"]}
    assert claims["cap 12 steps"] == {"claim": "cap 12 steps", "expected": "12 ran, then the job ended",
                                      "observed": "12 ran", "ok": True, "where": "", "fix": "", "row": "", "kind": ""}
    assert (claims["saves off"]["ok"], claims["saves off"]["where"], claims["saves off"]["kind"]) == (
        False, SAVE_LINE, "save")
    assert claims["saves off"]["observed"] == "1 written (ckpt_9.pt)"


def test_the_rows_a_trial_disproved_are_marked_and_the_run_question_offers_the_fix():
    from wamf_tui import flow
    from wamf_tui.model import BenchmarkChange, Checkpoint, Step

    save_row = "torch.save off (train.py:15)"
    state = InitState(activate="a", run="python train.py --steps=30", changes=[
        BenchmarkChange(what=save_row, how="--save-every=1000000000", why="no checkpoints left behind"),
        BenchmarkChange(what="seeds pinned", how="WAMF_SEED=0", why="same answer twice")],
        checks=[Checkpoint(name="loss", where="train.py:40", what="loss value", steps="every step", tolerance="x")])
    claims = [Claim(claim="saves off", expected="none", observed="3 written (ckpt_9.pt)", ok=False, where=SAVE_LINE,
                    fix="switch it off with --save-every", row=save_row),
              Claim(claim="row loss", expected="", observed="never ran", ok=False, where="train.py:40", row="loss",
                    fix="point it at a line the loop runs")]
    tried_it = TrialResult(command_hash=results.command_hash("a", state.run), started="now", ended="exited",
                           exit_status=0, claims=claims)
    state = state.model_copy(update={"trial": tried_it})

    def note(step, key, label_start):
        q = next(q for q in flow.questions(state, step) if q.key == key)
        return next(o.note for o in q.options if o.label.startswith(label_start))

    assert note(Step.JOB, "changes", save_row) == ("disproved by the trial: 3 written (ckpt_9.pt) at train.py:15; "
                                                  "fix: switch it off with --save-every")
    assert note(Step.JOB, "changes", "seeds pinned") == "same answer twice"
    assert note(Step.CHECKS, "checks", "loss").startswith("disproved by the trial: never ran at train.py:40")
    run_q = next(q for q in flow.questions(state, Step.JOB) if q.key == "run")
    assert ("the trial disproved saves off (3 written (ckpt_9.pt) at train.py:15): switch it off with --save-every"
            in run_q.prompt)
    stale = state.model_copy(update={"run": "python train.py --steps=40"})  # another command: not its trial
    assert proof.disproved(stale) == {} and proof.trial_fixes(stale) == []


def test_what_the_trial_saw_run_with_no_switch_is_offered_as_a_row_that_says_it_stays_on():
    """A save the reading missed (no switch known) that the trial saw: offered, unticked, as a row saying it
    stays on; taken, the contract says so, the claim holds on the same trial and the next one, and the row
    survives the table being proposed again. A failure with a switch is the switch's fix, not an offer."""
    from wamf_tui import flow
    from wamf_tui.contract.render import bundled_template, render
    from wamf_tui.model import Analysis, BenchmarkChange, Fact, Step
    from wamf_tui.propose import proposals

    site = "train.py:20"
    seen = [Effect(kind="save", what="torch.save", where=site, stack=[site], step=9, path="ckpt_9.pt")]
    wandb = Fact(name="wandb", file="train.py", line=9, off_switch="WANDB_MODE=disabled")  # a switch known there
    state = InitState(activate="a", run="python train.py --steps=30", analysis=Analysis(
        script="train.py", trackers=[wandb]), changes=[
        BenchmarkChange(what="total steps cut to 30", how="--steps=30", why="a short run", kind="steps", cap=30)])
    claims = proof.check(proof.expected(state), result_with(seen), "/repo")
    saves = by_claim(TrialResult(command_hash="x", started="", ended="exited", claims=claims))["saves off"]
    assert (saves.ok, saves.kind, saves.where) == (False, "save", site)
    tracker = Claim(claim="trackers off", expected="none", observed="wandb started", ok=False, where="train.py:9",
                    fix="switch it off with WANDB_MODE=disabled", kind="tracker")
    state = state.model_copy(update={"trial": TrialResult(
        command_hash=results.command_hash("a", state.run), started="now", ended="exited", exit_status=0,
        claims=[*claims, tracker])})
    state, offered = proof.with_offers(state)
    row = state.changes[-1]
    assert offered == 1 and (row.kind, row.sites, row.enabled, row.seen, row.off) == ("save", [site], False, True,
                                                                                     False)
    assert proof.with_offers(state)[1] == 0  # offered once
    q = next(q for q in flow.questions(state, Step.JOB) if q.key == "changes")
    assert [o.checked for o in q.options] == [True, False]
    taken = state.model_copy(update={"changes": [*state.changes[:-1], row.model_copy(update={"enabled": True})]})
    assert [c.claim for c in proof._failed(taken)] == ["trackers off"]
    assert site in proof.expected(taken).on["save"]
    again = {c.claim: c for c in proof.check(proof.expected(taken), result_with(seen), "/repo")}
    assert again[f"saves only at {site}"].ok
    text = render(taken, bundled_template())
    assert f"save at {site} runs in every benchmark run" in text and "claim FAILED: saves" not in text
    assert f"save at {site} stays on, as the trial saw" in text and "claim FAILED: trackers off" in text
    assert proposals.plan(taken, 30)[-1] == taken.changes[-1]


def test_a_job_that_ended_on_its_own_below_the_cap_offers_that_step_count():
    """The trial's job stopped by itself after 12 of 30 steps (a small dataset, one epoch): the steps question
    proposes 12, which says what runs; a failed job, a stale trial or a run that reached the cap offers nothing."""
    from wamf_tui import flow
    from wamf_tui.model import BenchmarkChange, Step

    state = InitState(activate="a", run="python train.py --steps=30", changes=[
        BenchmarkChange(what="total steps cut to 30", how="--steps=30", why="a short run", kind="steps", cap=30)])

    def offered(steps, status=0, run=state.run):
        t = TrialResult(command_hash=results.command_hash("a", state.run), started="now", ended="exited",
                        exit_status=status, steps=steps)
        s = state.model_copy(update={"trial": t, "run": run})
        q = next(q for q in flow.questions(s, Step.JOB) if q.key == "steps")
        return proof.steps_seen(s), q.default, f"after {steps} step(s)" in q.prompt

    assert offered(12) == (12, "12", True)
    assert offered(30) == (None, "30", False)
    assert offered(12, status=1) == (None, "30", False)
    assert offered(12, run="python train.py --steps=40")[0] is None


PARSES = """import argparse, sys
p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=100)
p.add_argument("--lr", type=float, default=0.1)
args = p.parse_args()
open({marker!r}, "w").write("trained")
"""


@pytest.mark.parametrize("flags, ok", [("--steps=3 --lr=0.5", True), ("--steps=3 --bogus=1", False)])
def test_parse_only_stops_when_the_jobs_parser_returns(tmp_path, flags, ok):
    marker = tmp_path / "trained"
    repo = make_repo(tmp_path / "job", {"train.py": PARSES.format(marker=str(marker))})
    job = trial.Trial("", f"{sys.executable} train.py {flags}", repo, parse_only=True)
    result = job.run()
    verdict = proof.parsed(result)
    assert verdict.ok is ok and not marker.exists()  # the job itself never ran past its parser
    if ok:
        assert verdict.observed == "argparse read 2 settings at train.py:5"
        parsed = next(e for e in result.effects if e.kind == "parsed")
        assert parsed.values == {"steps": "3", "lr": "0.5"}
    else:
        assert result.exit_status == 2 and verdict.observed == "the job does not know these arguments: --bogus=1"


def test_the_run_question_offers_the_parse_only_check_where_the_flags_cannot_all_be_read():
    from wamf_tui import flow
    from wamf_tui.model import Analysis, Step

    state = InitState(activate="a", script="train.py", analysis=Analysis(script="train.py"))
    run_q = next(q for q in flow.questions(state, Step.JOB) if q.key == "run")
    assert "--parse-only" not in run_q.prompt
    state = state.model_copy(update={"analysis": Analysis(script="train.py", parser_open="parse_known_args")})
    run_q = next(q for q in flow.questions(state, Step.JOB) if q.key == "run")
    assert "(parse_known_args): `wamf-tui try --parse-only` runs the job only until its parser returns" in run_q.prompt


FAKE_HUB = {  # the job's own stand-in for huggingface_hub (not installed here): a network call that writes a file
    "huggingface_hub/__init__.py": "from .hf_api import HfApi, create_repo, upload_folder\n",
    "huggingface_hub/hf_api.py": "class HfApi:\n    def create_repo(self, repo_id):\n"
                                 "        open('REACHED_THE_NETWORK', 'w').close()\n"
                                 "    def upload_folder(self, folder_path, repo_id):\n"
                                 "        open('REACHED_THE_NETWORK', 'w').close()\n"
                                 "api = HfApi()\ncreate_repo = api.create_repo\nupload_folder = api.upload_folder\n",
    "train.py": "from huggingface_hub import upload_folder\nprint('trained')\nupload_folder('.', 'me/model')\n",
}


def test_a_hub_upload_is_stopped_before_the_network_and_fails_the_uploads_claim(tmp_path):
    repo = make_repo(tmp_path / "job", FAKE_HUB)
    result = proof.run(trial.Trial("", f"{sys.executable} train.py", repo), proof.Expected())
    assert not (repo / "REACHED_THE_NETWORK").exists()
    uploads = by_claim(result)["uploads off"]
    assert (uploads.ok, uploads.where, uploads.observed) == (False, "train.py:3",
                                                             "upload_folder called (stopped before the network)")
    assert result.cause == "the job uploads to the Hub (upload_folder), which a trial stops: switch its upload off " \
                           "in the run line"


HYDRA_JOB = """import hydra
@hydra.main(version_base=None, config_path="conf", config_name="config")
def main(cfg):
    open({marker!r}, "w").write("trained")
main()
"""


@pytest.mark.parametrize("overrides, ok", [("lr=0.5 steps=3", True), ("lrr=0.5", False)])
def test_parse_only_stops_a_hydra_app_once_its_config_is_composed(tmp_path, overrides, ok):
    marker = tmp_path / "trained"
    repo = make_repo(tmp_path / "job", {"train.py": HYDRA_JOB.format(marker=str(marker)),
                                        "conf/config.yaml": "lr: 0.1\nsteps: 100\n"})
    result = trial.Trial("", f"{sys.executable} train.py {overrides}", repo, parse_only=True).run()
    verdict = proof.parsed(result)
    assert verdict.ok is ok and not marker.exists() and not (repo / "outputs").exists()
    if ok:
        assert next(e for e in result.effects if e.kind == "parsed").values == {"lr": "0.5", "steps": "3"}
    else:
        assert verdict.observed == "Hydra's config has no key lrr: prefix it with + to add it, or fix its name"


@pytest.mark.slow
def test_parse_only_never_trains_a_job_whose_parser_it_does_not_know(tmp_path):
    job = ("import sys\nimport torch\nmodel = torch.nn.Linear(8, 1)\n"
           "opt = torch.optim.SGD(model.parameters(), lr=0.01)\nfor step in range(int(sys.argv[1])):\n"
           "    model(torch.randn(4, 8)).pow(2).mean().backward()\n    opt.step()\n"
           "    torch.save(model.state_dict(), f'ckpt_{step}.pt')\n")
    repo = make_repo(tmp_path / "job", {"train.py": job})
    result = trial.Trial("", f"{sys.executable} train.py 50", repo, parse_only=True).run()
    assert (result.exit_status, result.steps) == (0, 1)  # stopped at the end of its first step, before its save
    assert not list(repo.glob("ckpt_*")) and not proof.parsed(result).ok


def test_a_write_into_a_git_ignored_file_of_the_checkout_fails_the_outputs_claim():
    """`train.log` under a `*.log` ignore rule: git sees nothing, the probe saw the write outside WAMF_OUT."""
    seen = [Effect(kind="write", what="file", path="/r/train.log", where="train.py:11")]
    claims = {c.claim: c for c in proof.check(proof.Expected(out="runs/wamf-bench"), result_with(seen), "/r")}
    assert (claims["outputs in runs/wamf-bench"].ok, claims["outputs in runs/wamf-bench"].where) == (False,
                                                                                                  "train.py:11")
    assert claims["nothing written into the checkout"].ok


def test_a_write_git_sees_is_the_checkout_claims_alone():
    seen = [Effect(kind="write", what="file", path="/r/out.txt", where="train.py:11")]
    result = result_with(seen).model_copy(update={"touched": ["out.txt"]})
    claims = {c.claim: c for c in proof.check(proof.Expected(out="runs/wamf-bench"), result, "/r")}
    assert not claims["nothing written into the checkout"].ok and claims["outputs in runs/wamf-bench"].ok


def test_a_job_that_fails_before_its_first_step_gets_no_verdict_on_what_it_never_reached():
    failed = result_with([], steps=0).model_copy(update={"exit_status": 2})
    claims = {c.claim: c for c in proof.check(proof.Expected(steps=30), failed)}
    assert "saves off" not in claims and "trackers off" not in claims
    assert not claims["cap 30 steps"].ok and "exit 2" in claims["cap 30 steps"].observed


def test_a_trial_stopped_by_hand_makes_no_claim_on_the_cap():
    stopped = result_with([], steps=7, ended="stopped")
    assert "cap 30 steps" not in {c.claim for c in proof.check(proof.Expected(steps=30), stopped)}


FAKE_LIGHTNING = {  # the job's own stand-in for Lightning's checkpoint writer (Lightning is not installed here)
    "lightning/__init__.py": "", "lightning/fabric/__init__.py": "", "lightning/fabric/utilities/__init__.py": "",
    "lightning/fabric/utilities/cloud_io.py": "import io\nimport torch\n\ndef _atomic_save(checkpoint, filepath):\n"
                                              "    buf = io.BytesIO()\n    torch.save(checkpoint, buf)\n"
                                              "    with open(filepath, 'wb') as f:\n        f.write(buf.getvalue())\n",
    "train.py": "import torch\nfrom lightning.fabric.utilities.cloud_io import _atomic_save\n"
                "model = torch.nn.Linear(2, 1)\n_atomic_save(model.state_dict(), 'epoch=0.ckpt')\n",
}


def test_a_checkpoint_lightning_writes_through_a_buffer_is_a_save(tmp_path):
    """Lightning saves into a BytesIO, then writes the bytes itself: the buffer's torch.save names no file, and
    a checkpoint routed into WAMF_OUT raised no write either; `_atomic_save` is the save, with its path."""
    repo = make_repo(tmp_path / "job", FAKE_LIGHTNING)
    result = proof.run(trial.Trial("", f"{sys.executable} train.py", repo), proof.Expected())
    saves = [e for e in result.effects if e.kind == "save"]
    assert [(e.path.rsplit("/", 1)[-1], e.where, e.count) for e in saves] == [("epoch=0.ckpt", "train.py:4", 1)]
    assert not by_claim(result)["saves off"].ok
