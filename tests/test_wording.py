"""Every message in both registers, short, and the algorithm register explains systems terms first."""

from __future__ import annotations

import re

import pytest

from wamf_tui.wording import GLOSSARY, MESSAGES, READER_OPTIONS, register_for, say

SENTENCE_END = re.compile(r"[.?!](?:\s|$)")


def sentences(text: str) -> int:
    return len(SENTENCE_END.findall(re.sub(r"\{\w+\}", "X", text).strip())) or 1


@pytest.mark.parametrize("key", list(MESSAGES))
def test_both_registers_and_short(key):
    m = MESSAGES[key]
    assert m.mlsys.strip() and m.algo.strip(), f"{key}: a register is missing"
    assert bool(m.help_mlsys) == bool(m.help_algo), f"{key}: help exists in one register only"
    for text in (m.mlsys, m.algo):
        assert sentences(text) <= 2, f"{key}: over two sentences: {text}"


def test_algo_register_explains_each_term_on_first_use():
    explained: set[str] = set()
    for key, m in MESSAGES.items():
        for text in (m.algo, m.help_algo):
            for term in GLOSSARY:
                uses = [x.end() for x in re.finditer(rf"\b{re.escape(term)}s?\b", text, re.I)]
                if not uses or term in explained:
                    continue
                assert text[uses[0]:].startswith(" ("), f"{key}: '{term}' used before it is explained: {text}"
                explained.add(term)


def test_mlsys_register_does_not_explain():
    for key, m in MESSAGES.items():
        for term in GLOSSARY:
            assert not re.search(rf"\b{re.escape(term)}s? \((a|the|how|slow|NVIDIA)", m.mlsys), key


def test_reader_answer_picks_the_nearer_register():
    assert register_for(READER_OPTIONS[0]) == "mlsys"
    assert register_for(READER_OPTIONS[1]) == "algo"
    assert register_for("I write CUDA kernels for a living") == "mlsys"
    assert register_for("research scientist, some profiling") == "algo"
    assert register_for("somewhere in between") == "algo"  # unsure: explain rather than assume


def test_say_formats_and_differs_by_register():
    a = say("done", "algo", path="c.md", claude="/x", codex="$x")
    m = say("done", "mlsys", path="c.md", claude="/x", codex="$x")
    assert "/x" in a and "$x" in a and a != m


def test_allowed_changes_explained_for_algorithm_engineers_only():
    from snapshot_states import state_at

    from wamf_tui import flow
    from wamf_tui.model import ALLOWED_CHANGES, Step

    algo = flow.current(state_at(Step.RULES, "algo"))
    mlsys = flow.current(state_at(Step.RULES, "mlsys"))
    assert [o.value for o in algo.options] == list(ALLOWED_CHANGES)
    assert all(o.note for o in algo.options) and not any(o.note for o in mlsys.options)


def test_explain_gives_each_registers_help_and_falls_back_to_the_prompt():
    from wamf_tui.wording import explain

    m = MESSAGES["confirm"]
    assert explain("confirm", "mlsys") == m.help_mlsys and explain("confirm", "algo") == m.help_algo
    assert m.help_mlsys != m.help_algo
    assert explain("dirty_recheck", "mlsys") == MESSAGES["dirty_recheck"].mlsys  # no help: the words themselves
    assert explain("dirty_recheck", "algo") == MESSAGES["dirty_recheck"].algo
    assert say("done", "mlsys") == MESSAGES["done"].mlsys  # no fields given: the text as written, braces and all


def test_the_done_lines_name_the_contract_and_both_commands():
    from wamf_tui.model import InitState
    from wamf_tui.wording import CLAUDE, CODEX, done_lines, done_message

    state = InitState(contract_path="/r/contract.md", reader_register="mlsys")
    assert done_message(state) == (f"Written: /r/contract.md. Next: {CLAUDE} (Claude Code) or {CODEX} (Codex); "
                                   "diagnose for one measured fix.")
    assert done_lines(state) == [done_message(state), f"  Claude Code: {CLAUDE}", f"  Codex:       {CODEX}",
                                 "  (or who-ate-my-flops:diagnose for one measured fix)"]


def test_every_question_a_user_can_ask_to_explain_says_more_than_its_own_words():
    """`?` on a question whose words have no help repeats them: the audit found eight such questions."""
    from wamf_tui.questions import REGISTRY

    asks = [a for step in REGISTRY.values() for a in step]
    repeat = [a.key for a in asks if any(not getattr(MESSAGES[a.key], f"help_{r}") for r in ("mlsys", "algo"))]
    assert len(asks) > 20 and repeat == []


def test_the_hands_off_question_offers_to_pick_folders_only_where_it_lists_some():
    from snapshot_states import state_at

    from wamf_tui.model import Step
    from wamf_tui.questions import rules

    state = state_at(Step.RULES, "algo")
    listed = rules._hands_off(state)
    none = rules._hands_off(state.model_copy(update={"repo_path": "/nonexistent"}))
    assert ("pick folders" in listed.prompt) is bool(listed.options)
    assert not none.options and "pick folders" not in none.prompt
