"""Step 4: the confirmation, then the write's own questions. Each is a place in `InitState.at`, so
the whole of step 4 is the flow's: `confirm`; `writing` while the file is written; `overwrite` when a
different contract is there; `path` when it could not be written or the user names another place;
`done`, with the offer to hide the app's files from git status."""

from __future__ import annotations

from pathlib import Path

from ..contract.git_exclude import own_files
from ..infra.visible import visible
from ..model import InitState, Step
from ..wording import done_message, say
from .base import Action, Ask, Option, Outcome, Question, Value, opt, put

PHASES = ("writing", "overwrite", "path", "done")


def _at(key: str):
    return lambda s: s.at == key


def _confirm(state: InitState) -> Question:
    return put(state, "confirm", "choice", free_text=False, default="yes",
               options=[opt(state, "confirm_yes", "yes"), opt(state, "confirm_no", "no")])


def _writing(state: InitState) -> Question:
    return put(state, "writing", "choice", free_text=False, fmt={"path": visible(state.contract_path)})


def _overwrite(state: InitState) -> Question:
    return put(state, "overwrite", "choice", free_text=False, default="overwrite",
               fmt={"path": visible(state.contract_path)},
               options=[opt(state, "overwrite_yes", "overwrite"), opt(state, "overwrite_other", "other"),
                        opt(state, "confirm_no", "back")])


def _writing_now(state: InitState, action: Action, **update: str) -> tuple[InitState, Outcome]:
    """To the write at once, in the answer itself: an Enter pressed before the next frame then meets the
    `writing` question, which takes nothing, and never starts a second write."""
    return state.model_copy(update={**update, "at": "writing"}), Outcome(None, action)


def _take_overwrite(state: InitState, value: Value) -> tuple[InitState, Outcome]:
    if value == "overwrite":
        return _writing_now(state, "overwrite")
    return state.model_copy(update={"at": "path" if value == "other" else "confirm"}), Outcome(None, "stay")


def _path(state: InitState) -> Question:
    return put(state, "path", "text", default=visible(state.contract_path))


def contract_path(state: InitState, text: str) -> str:
    """Where a typed path puts the contract: relative to the repo, and `contract.md` inside a folder."""
    p = Path(text).expanduser()
    p = p if p.is_absolute() else Path(state.repo_path) / p
    return str(p / "contract.md" if p.is_dir() else p)


def _take_path(state: InitState, value: Value) -> tuple[InitState, Outcome]:
    return _writing_now(state, "write", contract_path=contract_path(state, str(value)))


def _take_confirm(state: InitState, value: Value) -> tuple[InitState, Outcome]:
    return _writing_now(state, "write") if value == "yes" else (state, Outcome(None, "back"))


def _done(state: InitState) -> Question:
    own = own_files(state)
    r = state.reader_register
    options = [Option(say("exclude_no", r), "no"), Option(say("exclude_yes", r, files=", ".join(own)), "yes")]
    return Question("done", "choice", f"{done_message(state)} {say('done_keys', r)}", "", options if own else [],
                    default="no", free_text=False)


def _take_done(state: InitState, value: Value) -> tuple[InitState, Outcome]:
    if value == "yes":
        return state, Outcome(None, "exclude")
    return state, Outcome(None, "stay", say("exclude_left", state.reader_register))


def written(state: InitState, diff: str | None, error: str | None) -> tuple[InitState, str]:
    """The place after a write: the overwrite question over a different contract, another path after a
    failure (with why), or done. Returns the state and a line to show as an error ("" for none)."""
    if diff is not None:
        return state.model_copy(update={"at": "overwrite"}), ""
    if error:
        said = say("write_failed", state.reader_register, path=visible(state.contract_path), reason=error)
        return state.model_copy(update={"at": "path"}), said
    return state.model_copy(update={"at": "done", "written": state.contract_path}), ""


ASKS = (
    Ask("confirm", Step.CONFIRM, _confirm, _take_confirm,
        when=lambda s: s.at not in PHASES, words=("confirm_yes", "confirm_no")),
    Ask("writing", Step.CONFIRM, _writing, when=_at("writing"), remembered=False, waits=True),
    Ask("overwrite", Step.CONFIRM, _overwrite, _take_overwrite, when=_at("overwrite"), remembered=False,
        words=("overwrite_yes", "overwrite_other")),
    Ask("path", Step.CONFIRM, _path, _take_path, when=_at("path"), remembered=False),
    Ask("done", Step.CONFIRM, _done, _take_done, when=_at("done"), remembered=False,
        words=("done_keys", "exclude_no", "exclude_yes", "exclude_left", "write_failed")),
)
