"""The rows of the benchmark table for what the job does besides training: trackers, switches-on it cannot
turn off, saves, evals and uploads, each switched off through the job's own setting where one reaches it,
else said with when it still runs and its price."""

from __future__ import annotations

from ..model import Analysis, BenchmarkChange, Fact
from ..read.hydra_overrides import ENV
from ..read.switches import switch_off
from .prices import EVAL_BATCHES_MIN, checkpoint_price, eval_batches_cut, eval_price
from .when import (
    TIMED,
    after_loop,
    cap_first,
    dropped,
    eval_switch,
    every_said,
    given_anyway,
    job_evals,
    left_out,
    made_false,
    named_as_in,
    past_cap,
    runs_after,
    runs_when,
    set_in_run,
    step_files,
    still_runs,
    unread_when,
    unset_given,
)

BENCH_NAME = "wamf-bench"  # a run or model name the job makes a folder of
TRACKER_ENV = {"wandb": "WANDB_MODE=disabled", "comet": "COMET_MODE=disabled", "swanlab": "SWANLAB_MODE=disabled",
               "clearml": "CLEARML_OFFLINE_MODE=1"}  # the variable that switches each tracker off, where it has one
Args = list[str] | tuple[str, ...]


def tracker_rows(a: Analysis, args: Args) -> list[BenchmarkChange]:
    """Each tracker off by its own switch, a flag left out, or its variable; else said to stay on."""
    rows: list[BenchmarkChange] = []
    for t in a.trackers:
        # a tracker's own variable only (WANDB_MODE for wandb, ...): never one that controls another tracker
        var = TRACKER_ENV.get(t.name)
        left = left_out(t, a, args, True)
        off = switch_off(t.off_switch, a.flags, a.off_values) or ((left, [], []) if left else None) \
            or ((var, [], [var]) if var else None)
        # under a condition no switch of the job's is known for (`if config.enable_tensorboard:`): it logs when
        # that holds, which the code may or may not make so; never said to log in every run
        when = f"when {t.guard} holds" if t.guard and not off else "in every run"
        stays = f"its \"enabled\": false in {t.file} stops it" if t.file.endswith(".json") else \
            f"only a code edit stops {t.name}; it writes where the job tells it"
        how, flags, env = off or (f"{t.name} stays on (limitation: {stays})", [], [])
        what = f"{t.name} tracker off ({t.file}:{t.line})" if off else \
            f"{t.name} tracker ({t.file}:{t.line}) has no switch: it logs {when}"
        rows.append(BenchmarkChange(what=what, how=how, flags=flags, env=env,
                                       drop=dropped(how) + (unset_given(t, a, args, True) if how == left else []),
                                       why="no runs on a tracker dashboard" if off else f"it logs {when}",
                                       enabled=off is not None, kind="tracker", sites=[f"{t.file}:{t.line}"],
                                       off=off is not None, exclusion=None if off else
                                       f"{t.name} tracker at {t.file}:{t.line} stays on: it logs {when}, and "
                                       "its logging is timed in every benchmark run"))
    return rows


def overhead_rows(a: Analysis) -> list[BenchmarkChange]:
    """Work the file the run line keeps switches on (an anomaly check): said and timed, never edited."""
    rows: list[BenchmarkChange] = []
    for o in a.overheads:  # the file the run line keeps holds the switch: said, timed, never edited
        rows.append(BenchmarkChange(
            what=f"{o.name} on ({o.file}:{o.line}): it {o.cost}",
            how=f"stays on (limitation: only an edit of {o.file} turns it off)", why=f"it is {TIMED}",
            exclusion=f"{o.name} at {o.file}:{o.line} is on in every benchmark run, so it is timed: it {o.cost}"))
    return rows


def save_rows(a: Analysis, steps: int | None, args: Args, wrapper_cap: bool) -> list[BenchmarkChange]:
    """Each checkpoint save off, past the cap, after the loop the cap stops, or still running and priced.
    `wrapper_cap`: the wrapper stops the job mid-loop."""
    rows: list[BenchmarkChange] = []
    own_files = step_files(a)
    given = set_in_run(a, args)
    # saves in the modules it imports that no switch of the job reaches: one row, not one per library helper
    # (but one a guard fires at step 0 is timed in every run, and said on its own)
    elsewhere = [c for c in a.checkpoints if c.file not in own_files and not still_runs(c)
                 and not switch_off(c.off_switch, a.flags, a.off_values) and not left_out(c, a, args)]
    for c in a.checkpoints:
        if c in elsewhere:
            continue
        off = switch_off(c.off_switch, a.flags, a.off_values) or made_false(c, given)
        if given_anyway(off, args):  # `if args.use_ema: save` with the command's `--use_ema`: it saves
            off = None
        if not off and (left := left_out(c, a, args)):  # never runs, not even at step 0
            rows.append(BenchmarkChange(
                what=f"{c.name} off ({c.file}:{c.line})", how=left, why="no checkpoints left behind",
                drop=unset_given(c, a, args), kind="save", sites=[f"{c.file}:{c.line}"], off=True,
                exclusion=f"checkpoint at {c.file}:{c.line} excluded ({left}); {checkpoint_price(a, c.off_switch)}"))
            continue
        if not off and past_cap(c, steps):
            rows.append(BenchmarkChange(
                what=f"{c.name} off ({c.file}:{c.line}): {every_said(c, 'saves')}, past the benchmark's {steps}",
                how=f"{steps} steps, below the interval", why="no checkpoints left behind",
                kind="save", sites=[f"{c.file}:{c.line}"], off=True,
                exclusion=f"checkpoint at {c.file}:{c.line} excluded: it first runs at step {c.every}, past the "
                          f"benchmark's {steps}; {checkpoint_price(a, c.off_switch)}"))
            continue
        how, flags, env = off or ("stays on (limitation: only a code edit stops the write; it writes where the job "
                                  "tells it)", [], [])
        # after the loop, its guard counts epochs or the end, never steps: the loop must end first
        end = after_loop(a, c) if not off else None
        if end and wrapper_cap:  # the cap stops the job inside the loop: the save after it never comes
            rows.append(BenchmarkChange(
                what=f"{c.name} off ({c.file}:{c.line}): it runs after {end}, {cap_first(end, steps)}",
                how="WAMF_MAX_STEPS (wrapper)", kind="save", sites=[f"{c.file}:{c.line}"], off=True,
                why="no checkpoints left behind",
                exclusion=f"checkpoint at {c.file}:{c.line} excluded: it runs after {end}, which the wrapper's "
                          f"step cap stops first; {checkpoint_price(a, c.off_switch)}"))
            continue
        # no switch of its own: it writes whenever the job reaches it and its guard holds (into the run
        # folder, at best); none when the run line makes its guard false
        still = None if made_false(c, given) else runs_after(end) or still_runs(c) \
            or (None if off else f"has no switch: it runs {runs_when(c)}")
        rows.append(BenchmarkChange(
            what=f"{c.name} off ({c.file}:{c.line})" if not still else f"{c.name} ({c.file}:{c.line}) {still}",
            how=how, flags=flags, env=env, why=f"its write is {TIMED}" if still else "no checkpoints left behind",
            kind="save", sites=[f"{c.file}:{c.line}"], off=not still,
            exclusion=f"checkpoint at {c.file}:{c.line} " + (f"{still} in every benchmark run, so it is timed"
                                                             if still else "excluded")
            + f"; {checkpoint_price(a, c.off_switch)}"))
        if still and c.folder and not flags:
            # it writes whatever the switches: into a folder named for the benchmark, never over the job's own
            # (a name the command gives is the real run's, and is replaced)
            named = f"{c.folder}={BENCH_NAME}"
            rows.append(BenchmarkChange(
                what=f"{c.name} ({c.file}:{c.line}) writes into a folder named {BENCH_NAME}", how=named,
                flags=[named], drop=[c.folder] if any(w.split("=")[0] == c.folder for w in args) else [],
                why="its write lands beside the job's own checkpoints, never over them"))
    if elsewhere:  # saves in the modules it imports: one row, not one per library helper
        files = sorted({c.file for c in elsewhere})
        what = (f"{len(elsewhere)} save call(s) in imported modules ({', '.join(files[:3])}"
                + (f" and {len(files) - 3} more" if len(files) > 3 else "") + ")")
        rows.append(BenchmarkChange(
            what=what, how="no switch: they run only if the job calls them", why="priced, not timed",
            exclusion=f"{what} not switched off: they run whenever the job calls them; "
                      "price: bytes on disk / write bandwidth per call (to measure)"))
    return rows


def eval_rows(a: Analysis, steps: int | None, args: Args, wrapper_cap: bool) -> list[BenchmarkChange]:
    """Each eval out of the timed steps, or still running (with as few of its batches as its setting allows)."""
    rows: list[BenchmarkChange] = []
    given = set_in_run(a, args)
    for e in job_evals(a):
        off = switch_off(named_as_in(e.off_switch, args), a.flags, a.off_values) or made_false(e, given)
        named = eval_switch(e.unset)  # `--do_mmlu_eval` the docs' command gives: dropped with its eval
        kept = given_anyway(off, args)
        if kept and not eval_switch(kept):
            off, kept = None, None
        if not off and (left := left_out(e, a, args, named)):
            rows.append(BenchmarkChange(
                what=f"eval {e.name} ({e.file}:{e.line}) out of the timed steps", how=left,
                drop=unset_given(e, a, args, named), kind="eval", sites=[f"{e.file}:{e.line}"], off=True,
                why="evals are priced, not timed", exclusion=f"eval {e.name} at {e.file}:{e.line} excluded ({left}); "
                                                              f"{eval_price(a)}"))
            continue
        end = after_loop(a, e) if not off else None  # after the call that trains: an epoch's end, or the job's
        if end and wrapper_cap:
            rows.append(BenchmarkChange(
                what=f"eval {e.name} ({e.file}:{e.line}) out of the timed steps: it runs after {end}, "
                     f"{cap_first(end, steps)}", how="WAMF_MAX_STEPS (wrapper)", why="evals are priced, not timed",
                kind="eval", sites=[f"{e.file}:{e.line}"], off=True,
                exclusion=f"eval {e.name} at {e.file}:{e.line} excluded: it runs after {end}, which the wrapper's "
                          f"step cap stops first; {eval_price(a)}"))
            continue
        within = not off and e.every and (steps is None or steps >= e.every)  # the code's interval comes
        unread = None if off or past_cap(e, steps) or within or end or still_runs(e) else unread_when(e)
        how, flags, env = off or (f"{steps} steps, below its interval ({e.every})" if past_cap(e, steps) else
                                  f"no switch: the code runs it every {e.every} steps" if within else
                                  f"no switch: the job runs it after {end}" if end else
                                  "no switch: its guard holds at step 0" if still_runs(e) else
                                  "no switch read", [], [])
        still = None if made_false(e, given) else runs_after(end) or still_runs(e) or (
            f"runs at step {e.every}: the code sets its interval" if within else unread)
        cut = eval_batches_cut(a) if still else None
        rows.append(BenchmarkChange(
            what=f"eval {e.name} ({e.file}:{e.line}) " + (still if still else "out of the timed steps"),
            how=how, flags=flags, env=env, why="if it runs, it is timed" if unread else f"it is {TIMED}" if still
            else "evals are priced, not timed", kind="eval", sites=[f"{e.file}:{e.line}"], off=not still,
            drop=[kept] if kept and not still else [],
            exclusion=f"eval {e.name} at {e.file}:{e.line} " + (f"{still}, so it may be timed" if unread else
                                                               f"{still} in every benchmark run, so it is timed"
                                                               if still else "excluded") + f"; {eval_price(a)}"))
        if cut is not None and not any(c.flags == cut for c in rows):  # it runs whatever the cap: as few
            rows.append(BenchmarkChange(  # of its batches as its own setting allows
                what=f"batches of eval {e.name} ({e.file}:{e.line}) cut to {EVAL_BATCHES_MIN}", how=" ".join(cut),
                flags=cut, why="it runs whatever the step cap; its cost is timed, its result is not checked"))
    return rows


def _own(u: Fact) -> str | None:
    """An upload's own switch: its flag, or the variable its fact names (`HF_HUB_DISABLE_TELEMETRY=1` for TRL's
    usage report); never a guard's bare name, nor HF_HUB_OFFLINE, which would also block the model and data
    downloads the job needs."""
    off = u.off_switch or ""
    return off if off.startswith("--") or ENV.match(off) and not off.startswith("HF_HUB_OFFLINE") else None


def upload_rows(a: Analysis, args: Args) -> list[BenchmarkChange]:
    """Each upload off by its own flag or a flag left out; else said to run, with when."""
    rows: list[BenchmarkChange] = []
    own_files = step_files(a)
    # unguarded uploads in the modules it imports (a library helper's own `upload_folder`): one row; one the
    # job's config decides (`elif cfg.hub_model_id:`) keeps its own
    far = [u for u in a.uploads if u.file not in own_files and not u.guard and not switch_off(
        _own(u), a.flags, a.off_values)]
    for u in a.uploads:
        if u in far:
            continue
        own = _own(u)
        left = left_out(u, a, args)
        off = switch_off(own, a.flags, a.off_values) or ((left, [], []) if left else None)
        how, flags, env = off or (f"{u.name} stays on (limitation: only a code edit stops it)", [], [])
        what = f"{u.name} off ({u.file}:{u.line})" if off is not None else \
            f"{u.name} ({u.file}:{u.line}) has no switch: it runs {runs_when(u)}"
        rows.append(BenchmarkChange(what=what, how=how, flags=flags, env=env,
                                       drop=dropped(how) + (unset_given(u, a, args) if how == left else []),
                                       why="no uploads" if off else "it uploads in every run",
                                       kind="upload", sites=[f"{u.file}:{u.line}"], off=off is not None,
                                       enabled=off is not None, exclusion=None if off else
                                       f"{u.name} at {u.file}:{u.line} has no switch: it uploads {runs_when(u)}, "
                                       "timed in every benchmark run"))
    if far:
        files = sorted({u.file for u in far})
        what = (f"{len(far)} upload call(s) in imported modules ({', '.join(files[:3])}"
                + (f" and {len(files) - 3} more" if len(files) > 3 else "") + ")")
        rows.append(BenchmarkChange(
            what=what, how="no switch: they run only if the job calls them", why="the job's own uploads are above",
            enabled=False, exclusion=f"{what} not switched off: they run whenever the job calls them; "
                      "price: bytes uploaded / upload bandwidth per call (to measure)"))
    return rows
