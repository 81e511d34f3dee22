"""How well wamf-tui reads real jobs: the development corpus, hand-checked, against what the app proposes.

Run by hand. Each job in `corpus.json` names a public repository at a pinned commit and the facts of
its command, checked by hand from the repo's own docs and code (facts and line numbers only):
the entry script, its launcher, the folder it runs from, what the entry needs from the launcher,
and the required inputs its command still lacks. Check the repositories out first, one folder each
named `owner+name` (the search tool's `fetch`, then `git clone` of the snapshot at the commit):

    python benchmarks/corpus_eval.py /work/corpus

It prints, per job, what the app proposes and every fact it gets wrong, then the share right per fact.
Nothing of the corpus runs: the same reading the app does (detection, the script reader, the proposals).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from wamf_tui.detect.launch import parse_launch
from wamf_tui.detect.scripts import scan_scripts
from wamf_tui.model import Detected, InitState
from wamf_tui.propose import proposals
from wamf_tui.propose.benchmark import propose
from wamf_tui.propose.cap import default_steps
from wamf_tui.propose.run_line import job_args, needs_wrapper, wrapper_path
from wamf_tui.propose.validate import check_run
from wamf_tui.read.analyze import analyze_script
from wamf_tui.read.needs import missing_inputs, say_missing
from wamf_tui.read.subcommands import called

FACTS = ("found", "top", "launcher", "cwd", "needs", "required", "check")
ROLES = ("loss", "forward", "backward", "optimizer_step", "grad_clip")


def evaluate(root: Path, job: dict, scans: dict) -> dict[str, bool | str]:
    scan = scans.setdefault(str(root), scan_scripts(root))
    paths = [c.path for c in scan.candidates]
    cand = next((c for c in scan.candidates if c.path == job["entry"]), None)
    # `top` only where the repo has one main job; a collection of examples has no single right first
    got: dict[str, bool | str] = {"found": cand is not None,
                                  "top": not job.get("primary") or bool(paths) and paths[0] == job["entry"]}
    if cand is None:
        return {**got, **{f: False for f in FACTS[2:]}, "why": f"not a candidate; top: {paths[:3]}"}
    launch = cand.launch
    command = launch.command if launch else f"python {job['entry']}"
    analysis = analyze_script(root / job["entry"], root, launch.args if launch else [], called(launch))
    got["needs"] = sorted(n.code for n in analysis.needs) == sorted(job.get("needs", []))
    args = launch.args if launch else []
    state = InitState(repo_path=str(root), script=job["entry"], command=command, launch=launch, analysis=analysis,
                      contract_path=str(root / "contract.md"), detected=Detected(scripts=scan),
                      changes=propose(analysis, default_steps(analysis, args), "speed", args)
                      if analysis.kind == "training" else [])
    run = proposals.run_line(state)  # what the user is offered: the launcher and folder after the entry's fixes
    ran = parse_launch(run, consoles=scan.consoles)  # a console script runs as itself when no wrapper is needed
    got["launcher"] = ran is not None and ran.launcher in job["launcher"]
    got["cwd"] = ran is not None and ran.cwd == job.get("cwd", "")
    args = job_args(run) or []
    missing = [r.name for r in missing_inputs(analysis.required, args, proposals.store_true(analysis))]
    got["required"] = sorted(missing) == sorted(job.get("required", []))
    # the benchmark run line the app proposes, held against the job's own parser (as `check --repo` does);
    # a job whose command lacks a required input is right to fail until the user gives it
    verdict = check_run(run, root, analysis, scan.consoles, writing=wrapper_path(state))
    expected_missing = [f"requires {say_missing([r for r in analysis.required if r.name in job.get('required', [])])}"]
    got["check"] = all(any(e in p for e in expected_missing) for p in verdict.problems) if job.get("required") \
        else not verdict.problems
    if not got["check"]:
        got["why"] = f"check: {verdict.problems}; "
    found = {a.role: f"{a.file}:{a.line}" for a in analysis.anchors}
    if "manual_update" in found:  # weights updated by hand: that update is the step
        found.setdefault("optimizer_step", found["manual_update"])
    for role, want in job.get("anchors", {}).items():
        got[role] = found.get(role) == want
        if not got[role]:
            got["why"] = f"{role} at {found.get(role)}, hand-checked {want}; "
    got["own"] = not needs_wrapper(state.changes)
    # still on: what the job's switches cannot turn off in a benchmark run (it is timed, and priced)
    left_on = [c.what for c in state.changes if any(w in c.what + c.how for w in (
        "still runs", "no switch", "limitation", "stays on", "save call(s)", "runs once"))]
    got["all_off"] = not left_on
    got["left_on"] = "; ".join(left_on)
    got["why"] = str(got.get("why", "")) + (f"run {run!r}; needs {[n.code for n in analysis.needs]}; "
                                             f"missing {missing}; top {paths[:2]}")
    return got


def main() -> int:
    corpus = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/corpus")
    jobs = json.loads((Path(__file__).parent / "corpus.json").read_text())["jobs"]
    scans: dict = {}
    right = dict.fromkeys(FACTS + ROLES, 0)
    counted = 0
    anchored = 0
    own = all_off = 0
    left_on: list[str] = []
    for job in jobs:
        root = corpus / job["repo"].replace("/", "+")
        if not root.is_dir():
            print(f"{job['repo']}: not checked out under {corpus}; skipped")
            continue
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
        if not head.startswith(job["commit"]):
            print(f"{job['repo']}: at {head[:10]}, not the pinned {job['commit'][:10]}; facts may differ")
        got = evaluate(root, job, scans)
        counted += 1
        wrong = [f for f in FACTS + ROLES if f in got and not got[f]]
        anchored += "anchors" in job
        for f in FACTS + ROLES:
            right[f] += bool(got.get(f))
        own += bool(got.get("own"))
        all_off += bool(got.get("all_off"))
        if got.get("left_on"):
            left_on.append(f"  {job['repo']} {job['entry']}: {got['left_on']}")
        print(f"{'ok  ' if not wrong else 'MISS'} {job['repo']} {job['entry']}"
              + (f"  wrong: {', '.join(wrong)}; {got['why']}" if wrong else ""))
    print()
    for f in FACTS:
        print(f"{f:<15} {right[f]}/{counted}")
    for f in ROLES:  # scored over the jobs whose anchors were checked by hand
        print(f"{f:<15} {right[f]}/{anchored}")
    # measures, not hand-checked facts: how much of the benchmark the job's own switches do
    print(f"{'own switches':<15} {own}/{counted}  (the run line needs no wrapper)")
    print(f"{'all off':<15} {all_off}/{counted}  (every save, eval, tracker and upload switched off; "
          "what is left on, below, is timed and priced)")
    print("\n".join(left_on))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
