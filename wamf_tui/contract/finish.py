"""Step 4's work, one way for the app and for `--yes`: the contract held against the downstream rules and
its run line against the job's code, then the contract written with the benchmark wrapper it needs.

The app calls these from its screen (the review, from the reading already done: `read=False`) and from a
writing thread (the write); `--yes` calls them in a row. Neither writes anything the other would not.
"""

from __future__ import annotations

from pathlib import Path

from ..model import InitState
from ..propose.run_line import needs_wrapper, wrapper_path
from ..propose.validate import Verdict, check_run
from ..propose.wrapper import write_wrapper
from . import render as contract


def run_verdict(state: InitState, read: bool = True) -> Verdict:
    """The run line against the job's code. With `read` False (the app's event loop) no script is read:
    the reading already done is used, and the command detection read stands for a console subcommand."""
    scan = state.detected.scripts
    return check_run(state.run, Path(state.repo_path), state.analysis, scan.consoles if scan else {},
                     Path(state.contract_path).parent, read=read, writing=wrapper_path(state),
                     seen=frozenset(c.path for c in scan.candidates) if scan else frozenset(), job=state.launch,
                     documented=state.launch.args if state.launch else ())


def problems(text: str, verdict: Verdict) -> list[tuple[int, str]]:
    """(line, message) for every rule the contract breaks; the run line's problems on the `run` line."""
    found = [(p.line, p.message) for p in contract.check(text)]
    line = contract.required_block(text).get("run", (0, ""))[0]
    return found + [(line, f"run: {m}") for m in verdict.problems]


def write(state: InitState, text: str, overwrite: bool) -> tuple[contract.WriteResult, str | None]:
    """The contract, then the wrapper when the benchmark needs it (only once the contract is written).
    Returns the write's outcome and the wrapper's error, if any."""
    result = contract.save_contract(Path(state.contract_path), text, overwrite)
    error = write_wrapper(Path(wrapper_path(state))) if result.written and needs_wrapper(state.changes) else None
    return result, error
