"""The contract's claims, checked against what a trial saw (#33): the cap stops the run, saves,
trackers, uploads and evals are off where it says so, each checkpoint row's line runs during the
training steps, the precision is the one stated, and nothing is written into the checkout.

`expected` reads the claims from the session's typed facts (the analysis and the changes agreed);
`check` holds them against the trial's `Effect`s (`step_probe`) and gives one `Claim` each, with
the job's `file:line` and what to change where it fails.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..model import Analysis, BenchmarkChange, Claim, Effect, Fact, InitState, OffKind, TrialResult
from ..read.reach import reached_effects

if TYPE_CHECKING:
    from ..bench.trial import Trial

KINDS: dict[OffKind, str] = {"save": "saves", "tracker": "trackers", "upload": "uploads", "eval": "evals"}
_SITE = re.compile(r"^([^\s:]+):(\d+)\b")


@dataclass(frozen=True)
class Expected:
    """What the contract claims, as the trial can check it."""

    steps: int | None = None  # the step cap; None: the whole job runs
    rows: tuple[tuple[str, str], ...] = ()  # (checkpoint row, its file:line)
    on: dict[str, tuple[str, ...]] = field(default_factory=dict)  # kind -> file:line it says stay on
    off_rows: dict[str, dict[str, str]] = field(default_factory=dict)  # kind -> {file:line: the row saying off}
    switches: dict[str, str] = field(default_factory=dict)  # file:line -> the job's switch that turns it off
    precision: str = ""  # bf16, fp16, fp32; "" when not stated
    out: str = ""  # the run line's WAMF_OUT
    move: str = ""  # the job's switch for where it writes

    def lines(self) -> list[str]:
        """The rows' lines the probe traces."""
        return [site for _, site in self.rows]


def cap(state: InitState) -> int | None:
    """The step cap of the agreed steps row (`BenchmarkChange.cap`); a run line typed by hand, with no
    such row, by its wrapper's WAMF_MAX_STEPS."""
    row = next((c for c in state.changes if c.kind == "steps"), None)
    if row is not None:
        return row.cap if row.enabled else None
    m = re.search(r"\bWAMF_MAX_STEPS=(\d+)", state.run)
    return int(m.group(1)) if m else None


def _facts(a: Analysis) -> dict[str, list[Fact]]:
    a = reached_effects(a)
    return {"save": a.checkpoints, "tracker": a.trackers, "upload": a.uploads, "eval": a.evals}


def expected(state: InitState) -> Expected:
    """The claims, from typed facts only: each fact's row of the changes table (its `kind`, `sites` and
    `off`, never its wording), the cap, the rows' `site`, the precision."""
    on: dict[str, tuple[str, ...]] = {}
    off_rows: dict[str, dict[str, str]] = {}
    switches: dict[str, str] = {}
    if state.analysis is not None:
        for kind, facts in _facts(state.analysis).items():
            stays, off = [], {}
            kept = state.kept(kind)
            for f in facts:
                site = f"{f.file}:{f.line}"
                change = next((c for c in state.changes if c.kind == kind and site in c.sites), None)
                if change is not None and change.enabled and change.off and site not in kept:
                    off[site] = change.what
                else:
                    stays.append(site)
                if f.off_switch:
                    switches[site] = f.off_switch
            on[kind], off_rows[kind] = tuple(stays), off
    for kind in KINDS:  # and what the user took from a trial's offer (`offers`), read or not
        on[kind] = tuple(dict.fromkeys([*on.get(kind, ()), *state.kept(kind)]))
    rows = tuple((c.name, c.site) for c in state.checks if c.enabled and c.site)
    from ..propose.proposals import output_switch, precision

    return Expected(steps=cap(state), rows=rows, on=on, off_rows=off_rows, switches=switches,
                    precision=precision(state)[0], out=_out_folder(state.run), move=output_switch(state))


def offers(state: InitState) -> list[BenchmarkChange]:
    """Rows the latest trial of this command offers for the benchmark table: each save, tracker, upload or eval
    the contract said off that the trial saw run, where no switch of the job's is known, as staying on
    (timed, priced, said). Offered unticked: the user takes one with a key, and the contract says what runs."""
    rows: dict[str, BenchmarkChange] = {}
    taken = {site for c in state.changes if c.seen for site in c.sites}
    switched = expected(state).switches  # a known switch is the fix there, not a row saying it stays on
    for c in _failed(state):
        if c.kind not in KINDS or not c.where or c.where in taken or c.where in switched:
            continue
        label = KINDS[c.kind].removesuffix("s")
        rows.setdefault(c.where, BenchmarkChange(
            what=f"{label} at {c.where} stays on: the trial saw it ({c.observed})", how="timed in every run",
            why="a trial of this run line saw it run; only a code edit stops it", enabled=False, kind=c.kind or None,
            sites=[c.where], seen=True, exclusion=f"{label} at {c.where} runs in every benchmark run (a trial saw "
                                                   f"it: {c.observed}), so it is timed"))
    return list(rows.values())


def steps_seen(state: InitState) -> int | None:
    """The steps the latest trial of this command ran when the job ended on its own, with status 0, below the
    cap: the step count that says what runs (the steps question offers it)."""
    t = state.trial
    if t is None or not _current(state) or t.ended != "exited" or t.exit_status != 0 or not t.steps:
        return None
    limit = cap(state)
    return t.steps if limit is not None and t.steps < limit else None


def with_offers(state: InitState) -> tuple[InitState, int]:
    """The state with the latest trial's offers added to its benchmark table, and how many were new."""
    known = {c.what for c in state.changes}
    new = [c for c in offers(state) if c.what not in known]
    return (state.model_copy(update={"changes": [*state.changes, *new]}), len(new)) if new else (state, 0)


def _out_folder(run: str) -> str:
    """The run line's WAMF_OUT, as the folder it names: `.` after a `cd` to the benchmark folder is that folder."""
    out = re.search(r"\bWAMF_OUT=(\S+)", run)
    moved = re.match(r"(?:mkdir -p \S+ && )?cd (\S+) && ", run)
    if out is None:
        return ""
    return moved.group(1) if out.group(1) == "." and moved else out.group(1)


def of_contract(repo: Path, activate: str, run: str, text: str) -> Expected:
    """The claims of a contract `wamf-tui try` runs: from its session's typed facts while the session still
    holds this command, else what the contract's own text states."""
    from ..session import store as session

    state = session.load(repo)
    if state is not None and (state.activate, state.run) == (activate, run):
        return expected(state)
    return from_contract(text)


def from_contract(text: str) -> Expected:
    """The claims a contract holds when no session of it is at hand (`wamf-tui try` on a contract written
    elsewhere): the run line's cap and output folder, and the checkpoint table's `file:line` cells."""
    from .render import _cells, required_block

    run = required_block(text).get("run", (0, ""))[1]
    m = re.search(r"\bWAMF_MAX_STEPS=(\d+)", run)
    rows = []
    for line in text.splitlines():
        cells = _cells(line) if line.strip().startswith("|") else []
        if len(cells) == 5 and (site := _SITE.match(cells[1])):
            rows.append((cells[0], f"{site.group(1)}:{site.group(2)}"))
    return Expected(steps=int(m.group(1)) if m else None, rows=tuple(rows), out=_out_folder(run))


# --- checking ------------------------------------------------------------------------------------


def run(job: Trial, exp: Expected, on_line: Callable[[str], None] = lambda line: None) -> TrialResult:
    """The trial, its rows' lines traced, and its verdicts on the claims."""
    job.lines = exp.lines()
    result = job.run(on_line)
    return result.model_copy(update={"claims": check(exp, result, str(job.repo))})


def check(exp: Expected, result: TrialResult, repo: str = "") -> list[Claim]:
    """One verdict per claim; a claim the trial cannot speak to is left out: none where it never started, no
    effect's "off" holding where the job failed before its first step (nothing ran that could have saved or
    logged; an effect seen still fails), no cap where the user stopped it."""
    if result.ended == "not started":
        return []
    repo = os.path.realpath(repo) if repo else ""
    claims = []
    if exp.steps is not None and result.ended != "stopped":
        claims.append(_cap(exp.steps, result))
    reached = bool(result.steps) or result.exit_status == 0
    claims += [c for c in (_off(kind, label, exp, result.effects) for kind, label in KINDS.items())
               if reached or not c.ok]
    claims += [_row(name, site, result) for name, site in exp.rows] if result.steps else []
    if exp.precision:
        precision = _precision(exp.precision, result.effects)
        if precision is not None:
            claims.append(precision)
    claims.append(_checkout(exp, result, repo))
    if exp.out:
        claims.append(_outside(exp, result, repo))
    return claims


def _cap(steps: int, result: TrialResult) -> Claim:
    ran = result.steps
    claim, expected = f"cap {steps} steps", f"{steps} ran, then the job ended"
    if result.ended == "limit":
        return Claim(claim=claim, expected=expected, observed=f"stopped at the time limit after {ran}", ok=False,
                     fix="a longer time limit, or fewer steps in the run line")
    if ran > steps:
        return Claim(claim=claim, expected=expected, observed=f"{ran} ran: the cap did not stop it", ok=False,
                     fix="the step cap does not reach the job: give its own step limit in the run line")
    if ran < steps and result.ended == "exited":
        why = "the job ended first" if result.exit_status == 0 else f"it failed (exit {result.exit_status})"
        return Claim(claim=claim, expected=expected, observed=f"{ran} ran: {why}", ok=False,
                     fix=f"the job runs {ran} steps here: a cap of {ran} says what runs" if result.exit_status == 0
                     else "see the likely cause above")
    return Claim(claim=claim, expected=expected, observed=f"{ran} ran", ok=result.ended == "exited")


def _started(e: Effect) -> bool:
    """A tracker in `disabled` mode starts nothing."""
    return e.kind != "tracker" or e.mode.lower() not in ("disabled", "dryrun")


def _off(kind: OffKind, label: str, exp: Expected, effects: list[Effect]) -> Claim:
    seen = [e for e in effects if e.kind == kind and _started(e)]
    stays = exp.on.get(kind, ())
    wrong = [e for e in seen if not set(e.stack or [e.where]) & set(stays)]  # a save in a helper the kept line calls
    n = sum(e.count for e in seen)
    claim = f"{label} off" if not stays else f"{label} only at {', '.join(stays[:3])}"
    expected = "none" if not stays else f"only at {', '.join(stays[:3])}"
    if not wrong:
        observed = "none" if not n else f"{n} at the lines the contract keeps on"
        return Claim(claim=claim, expected=expected, observed=observed if kind != "save" else
                     ("0 written" if not n else observed), ok=True)
    first = wrong[0]
    what = {"save": f"{sum(e.count for e in wrong)} written ({first.path or first.what})",
            "tracker": f"{first.what} started" + (f" (mode {first.mode})" if first.mode not in ("", "on") else "")
            + (f", writing to {first.path}" if first.path else ""),
            "upload": f"{first.what} called (stopped before the network)",
            "eval": f"{first.what}() on the trained model at step {first.step}"}[kind]
    site = next((s for s in first.stack if s in exp.off_rows.get(kind, {}) or s in exp.switches), first.where)
    switch = exp.switches.get(site, "")
    row = exp.off_rows.get(kind, {}).get(site, "")
    if switch:
        fix = f"switch it off with {switch}"
    elif kind == "save" and first.step:
        fix = f"it saves at step {first.step}: fewer steps than that, or say it stays on (only a code edit stops it)"
    else:
        fix = f"only a code edit at {first.where or 'the call'} stops it: say it stays on, so it is timed"
    return Claim(claim=claim, expected=expected, observed=what, ok=False, where=site, fix=fix, row=row, kind=kind)


def _row(name: str, site: str, result: TrialResult) -> Claim:
    """A line of the loop runs in more than one step (the probe traces the first LINE_STEPS); a line
    before the loop runs once, before the first step, and one after it once the steps are done."""
    steps = sorted({e.step for e in result.effects if e.kind == "line" and e.what == site})
    during = [s for s in steps if s < result.steps]
    claim, expected = f"row {name}", f"{site} runs during the training steps"
    if len(during) > 1 or during and result.steps == 1:
        return Claim(claim=claim, expected=expected, row=name, ok=True,
                     observed=f"ran in step {', '.join(str(s + 1) for s in during[:5])}")
    observed = "never ran" if not steps else "ran only before the first step" if steps == [0] else \
        f"ran only once, after step {steps[0]}"
    return Claim(claim=claim, expected=expected, observed=observed, ok=False, where=site, row=name,
                 fix="the row's line is not in the training step: point it at a line the loop runs")


def _precision(stated: str, effects: list[Effect]) -> Claim | None:
    autocast = sorted({e.what for e in effects if e.kind == "autocast"})
    params = sorted({d for e in effects if e.kind == "params" for d in e.what.split(",")})
    if not autocast and not params:
        return None
    dtype = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}[stated]
    seen = [f"autocast {d}" for d in autocast] + [f"weights {d}" for d in params]
    low = [d for d in autocast + params if d in ("bfloat16", "float16")]
    ok = dtype in low if stated != "fp32" else not low
    where = next((e.where for e in effects if e.kind in ("autocast", "params") and e.what in low), "")
    return Claim(claim=f"precision {stated}", expected=f"{stated} seen" if stated != "fp32" else "no 16-bit compute",
                 observed=", ".join(seen) + " seen", ok=ok, where=where if not ok else "",
                 fix="" if ok else "the contract's precision is not the job's: its tolerances follow the one seen")


def _checkout(exp: Expected, result: TrialResult, repo: str) -> Claim:
    """What git sees changed (a git-ignored folder, like the benchmark's own, is the job's business), at the
    line the probe saw write it."""
    paths = result.touched
    claim = "nothing written into the checkout"
    if not paths:  # the run's own output folder may sit in the checkout, git-ignored: said, not hidden
        inside = exp.out and not exp.out.startswith(("/", "$", "~"))
        return Claim(claim=claim, expected="nothing", ok=True,
                     observed=f"nothing git sees (the run's own {exp.out} aside)" if inside else "nothing")
    written = {os.path.join(repo, p) for p in paths}
    where = next((e.where for e in result.effects if e.where and (e.kind == "write" and e.path in written or e.kind
                  == "save" and os.path.realpath(os.path.join(repo, e.path)) in written)), "")
    fix = f"move it with {exp.move}" if exp.move else "the job writes there on its own: name its output folder " \
        "in the run line, or list the files under Hands off"
    return Claim(claim=claim, expected="nothing", observed="wrote " + ", ".join(paths[:5]) + (
        f" and {len(paths) - 5} more" if len(paths) > 5 else ""), ok=False, where=where, fix=fix)


def _outside(exp: Expected, result: TrialResult, repo: str) -> Claim:
    """Every write the probe saw outside the output folder (it reports none inside it), the checkout's git-ignored
    files included; those git sees are the checkout claim's."""
    seen_by_git = {os.path.realpath(os.path.join(repo, p)) for p in result.touched}
    elsewhere = [e for e in result.effects if e.kind == "write" and os.path.realpath(e.path) not in seen_by_git]
    claim = f"outputs in {exp.out}"
    if not elsewhere:
        return Claim(claim=claim, expected=f"writes only in {exp.out}", observed="none elsewhere", ok=True)
    return Claim(claim=claim, expected=f"writes only in {exp.out}", ok=False, where=elsewhere[0].where,
                 observed="wrote " + ", ".join(e.path for e in elsewhere[:3]),
                 fix=f"move it with {exp.move}" if exp.move else "name its output folder in the run line")


def _failed(state: InitState) -> list[Claim]:
    """The latest trial's failed claims, while the contract still runs the command it tried; one whose effect
    the user now says stays on (an offer taken) holds."""
    t = state.trial
    if t is None or not _current(state):
        return []
    return [c for c in t.claims if not c.ok and not (c.kind and c.where in state.kept(c.kind))]


def _current(state: InitState) -> bool:
    """Whether the latest trial ran the command the contract runs now (or no run line is set yet)."""
    from ..bench.results import command_hash

    t = state.trial
    return t is not None and (not state.run or t.command_hash == command_hash(state.activate, state.run))


def disproved(state: InitState) -> dict[str, Claim]:
    """The contract rows the latest trial disproved: a change's `what` or a checkpoint's name -> its claim."""
    return {c.row: c for c in _failed(state) if c.row}


def trial_fixes(state: InitState) -> list[str]:
    """What the latest trial of this command says to change, as the run question offers it."""
    return [f"the trial disproved {c.claim} ({c.observed}" + (f" at {c.where}" if c.where else "") + f"): {c.fix}"
            for c in _failed(state) if c.fix][:3]


def mark(claim: Claim) -> str:
    """A row's note when the trial disproved it."""
    return f"disproved by the trial: {claim.observed}" + (f" at {claim.where}" if claim.where else "") + (
        f"; fix: {claim.fix}" if claim.fix else "")


def parsed(result: TrialResult) -> Claim:
    """The parse-only check's verdict: the job's own parser read the run line's flags, or what it said."""
    claim, expected = "flags", "the job's parser reads every flag of the run line"
    got = next((e for e in result.effects if e.kind == "parsed"), None)
    if result.ended != "exited":
        return Claim(claim=claim, expected=expected, observed=f"{result.ended} before its parser returned", ok=False,
                     fix="a longer time limit: the entry imports slowly")
    if result.exit_status:
        return Claim(claim=claim, expected=expected, ok=False, observed=result.cause or f"exit {result.exit_status}",
                     fix="change the run line's flags to ones the parser knows")
    if got is None:
        return Claim(claim=claim, expected=expected, ok=False, observed="it ended without an argparse, "
                     "HfArgumentParser, fire or Hydra parse of its command line",
                     fix="run a full trial instead")
    observed = f"{got.what} read {len(got.values)} settings at {got.where}" + (
        f"; left over for another parser: {' '.join(got.extras[:6])}" if got.extras else "")
    return Claim(claim=claim, expected=expected, observed=observed, ok=True, where=got.where)


def describe(claims: list[Claim]) -> list[str]:
    """One line a claim, as the app and `wamf-tui try` show them: the rows' lines summed up in one."""
    lines = []
    rows = [c for c in claims if c.claim.startswith("row ")]
    for c in claims:
        if c in rows and c.ok:
            continue
        said = f"{'ok' if c.ok else 'FAILED'}  {c.claim}: {c.observed}"
        if not c.ok:
            said += (f" at {c.where}" if c.where else "") + (f"; fix: {c.fix}" if c.fix else "")
        lines.append(said)
    if rows:
        ran = sum(c.ok for c in rows)
        lines.append(f"{'ok' if ran == len(rows) else 'FAILED'}  rows: {ran} of {len(rows)} lines ran during "
                     "training steps")
    return lines
