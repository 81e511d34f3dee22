"""Non-interactive use: fill the state from an answers file (JSON or TOML, the same
field names as the state) by walking the same flow the app walks, so the same
proposals, refusals and checks apply. No Textual here.
"""

from __future__ import annotations

import json
from pathlib import Path

from . import flow
from .infra.files import TooLarge, read_text
from .infra.visible import visible
from .model import InitState, Step

# question key -> the state field an answers file names for it
FIELD = {
    "reader": "reader", "repo": "repo", "activate": "activate", "command": "command", "run": "run",
    "must_not_change": "must_not_change", "node": "node", "extra_checks": "extra_checks", "recorder": "recorder",
    "allowed": "allowed_changes", "own_tests": "own_tests", "hands_off": "hands_off", "memory_trade": "memory_trade",
    "when_to_stop": "when_to_stop", "hints": "hints", "anything_else": "anything_else", "steps": "steps",
    "mode": "mode",
}


MAX_BYTES = 256 * 1024
LISTS = {"checks", "allowed_changes", "hints"}  # the answers that are lists; every other one is a text


class AnswersError(ValueError):
    """An answers file that cannot be used, with a one-line reason."""


def load(path: str | Path) -> dict[str, object]:
    p, shown = Path(path), visible(str(path))
    try:
        text = read_text(p, MAX_BYTES)
    except OSError as e:
        raise AnswersError(f"cannot read {shown}: {e.strerror or e}") from None
    except TooLarge:
        raise AnswersError(f"{shown} is over {MAX_BYTES // 1024} KiB; an answers file is a few lines") from None
    except UnicodeDecodeError as e:
        raise AnswersError(f"{shown} is not UTF-8 text: {e}") from None
    try:
        if p.suffix.lower() == ".toml":
            import tomllib  # Python 3.11+

            data = tomllib.loads(text)
        else:
            data = json.loads(text)
    except ImportError:
        raise AnswersError("TOML answers need Python 3.11+; use JSON") from None
    except (ValueError, RecursionError) as e:
        reason = "nested too deeply" if isinstance(e, RecursionError) else e
        raise AnswersError(f"{shown} is not valid {p.suffix.lstrip('.').upper() or 'JSON'}: {reason}") from None
    if not isinstance(data, dict):
        raise AnswersError(f"{shown} must hold a table of answers")
    known = set(FIELD.values()) | {"checks", "script"}  # `script` alone: the app finds its command
    unknown = sorted(set(data) - known)
    if unknown:
        raise AnswersError(f"unknown answer '{visible(unknown[0])}' in {shown}; known: "
                           f"{', '.join(sorted(known))}")
    data = {k: v for k, v in data.items() if v is not None}  # null: as if left out
    for key, value in data.items():
        lists = key in LISTS
        ok = isinstance(value, list) and all(isinstance(x, str) for x in value) if lists else isinstance(
            value, str | int | float) and not isinstance(value, bool)
        if not ok:
            raise AnswersError(f"answer '{key}' in {shown} must be {'a list of texts' if lists else 'a text'}")
    return data


def fill(state: InitState, answers: dict[str, object]) -> tuple[InitState, list[str]]:
    """Walk steps 0-3 on the answers file, proposals where it is silent. The state reached, and the
    refusal, if any."""
    for _ in range(200):
        if state.step == Step.CONFIRM:
            return state, []
        q = flow.current(state)
        assert q is not None
        field = FIELD.get(q.key)
        if q.key == "guarantees":  # nobody is there to vouch: say what was checked instead
            state = flow.unattended(state)
            continue
        if q.key == "command" and "command" not in answers and answers.get("script") and not state.script:
            state = state.model_copy(update={"script": str(answers["script"])})
            q = flow.current(state)  # its proposal is now the command that runs that script
            assert q is not None
        if q.key == "checks" and "checks" in answers:
            names = answers["checks"]
            value: str | list[str] = [o.value for o in q.options if o.label.split(":")[0] in names]  # type: ignore[operator]
        elif field in answers:
            given = answers[field]
            value = [str(x) for x in given] if isinstance(given, list) else str(given)
        elif q.kind == "multi":
            value = [o.value for o in q.options if o.checked]
        else:
            value = q.default
        state, outcome = flow.answer(state, value)
        if outcome.error:
            return state, [f"{field or q.key}: {outcome.error}"]
        if q.key == "command" and state.analysis is None and state.script:
            from .read.analyze import analyze_script

            script = Path(state.repo_path) / state.script
            if script.is_file():
                from .detect.environment import installed
                from .read.subcommands import called

                command = state.launch.args if state.launch else []
                versions = installed(state.detected.env, state.activate)
                state = flow.take_analysis(state, analyze_script(script, state.repo_path, command,
                                                                 called(state.launch), versions))
    return state, ["the flow did not reach step 4"]
