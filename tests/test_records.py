"""The records the session's facts are made of (`infra.records`): what they accept, refuse and write."""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated, Literal

import pytest

from wamf_tui.infra.records import After, Before, Dump, Invalid, Record
from wamf_tui.infra.visible import RepoText
from wamf_tui.model import Analysis, Fact, InitState, Step


class Leaf(Record):
    name: RepoText
    size: int = 0
    kind: Literal["a", "b"] = "a"


class Tree(Record):
    leaves: list[Leaf] = []
    by_name: dict[str, Leaf] = {}
    top: Leaf | None = None
    ratio: float = 1.0
    label: Annotated[str, Before(lambda v: v.strip() if isinstance(v, str) else v), After(str.upper)] = ""
    path: Annotated[str, Dump(lambda v: "dumped:" + v)] = ""


def test_nested_data_becomes_records_and_unknown_keys_are_ignored():
    tree = Tree.model_validate({"leaves": [{"name": "x", "size": 3}], "by_name": {"y": {"name": "y"}},
                                "top": {"name": "t", "kind": "b"}, "ratio": 2, "label": " hi ", "gone": 1})
    assert tree.leaves == [Leaf(name="x", size=3)] and tree.by_name["y"] == Leaf(name="y")
    assert tree.top == Leaf(name="t", kind="b") and tree.ratio == 2.0 and isinstance(tree.ratio, float)
    assert tree.label == "HI"


@pytest.mark.parametrize(("data", "loc"), [
    ({"leaves": [{"name": "x", "size": "3"}]}, ("leaves", 0, "size")),
    ({"leaves": [{"size": 3}]}, ("leaves", 0, "name")),
    ({"top": {"name": "t", "kind": "c"}}, ("top",)),
    ({"leaves": {"name": "x"}}, ("leaves",)),
    ({"ratio": True}, ("ratio",)),
    ({"top": {"name": "t", "kind": ["a"]}}, ("top",)),  # unhashable where a Literal is: refused, not a TypeError
])
def test_data_that_does_not_fit_names_where(data, loc):
    with pytest.raises(Invalid) as e:
        Tree.model_validate(data)
    assert e.value.loc == loc


def test_a_record_made_from_keywords_is_checked_and_its_repo_text_gated():
    assert Leaf(name="a\x1b]52;c;x\x07").name == "a\\x1b]52;c;x\\x07"
    with pytest.raises(Invalid):
        Leaf(name="x", kind="z")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Leaf(name="x", colour="red")  # type: ignore[call-arg]


def test_construct_and_copy_take_values_as_given():
    raw = Leaf.model_construct(name="\x1b", size=1)
    assert raw.name == "\x1b" and raw.kind == "a"
    leaf = Leaf(name="x")
    assert leaf.model_copy(update={"size": 5}).size == 5 and leaf.size == 0


@pytest.mark.parametrize("make", [Tree, Tree.model_construct, lambda: Tree.model_validate({})])
def test_each_record_gets_its_own_list(make):
    a, b = make(), make()
    a.leaves.append(Leaf(name="x"))
    a.by_name["x"] = Leaf(name="x")
    assert b.leaves == [] and b.by_name == {} and make().leaves == []


def test_a_deep_copy_shares_nothing():
    tree = Tree(leaves=[Leaf(name="x")])
    deep = tree.model_copy(deep=True)
    deep.leaves[0].size = 9
    assert tree.leaves[0].size == 0


def test_json_writes_enums_as_values_and_dump_steps_and_reads_back():
    tree = Tree(leaves=[Leaf(name="é")], path="p")
    data = json.loads(tree.model_dump_json())
    assert data["path"] == "dumped:p" and data["leaves"][0]["name"] == "é"
    assert tree.model_dump()["path"] == "p"  # the python form is the value itself
    state = InitState(step=Step.CHECKS)
    assert json.loads(state.to_json())["step"] == 2 and InitState.from_json(state.to_json()) == state


def test_a_lone_surrogate_is_written_escaped_and_read_back():
    state = InitState(written="/tmp/caf\udce9/contract.md")
    text = state.to_json()
    text.encode("utf-8")
    assert InitState.from_json(text).written == state.written


def test_a_frozen_record_refuses_changes():
    with pytest.raises(dataclasses.FrozenInstanceError):
        InitState().at = "x"  # type: ignore[misc]


def test_an_old_label_of_a_config_system_reads_as_its_kind():
    old = Analysis.model_validate({"script": "t.py", "config_system": "jsonargparse CLI"})
    assert old.config_system == "jsonargparse"
    assert Analysis(script="t.py", config_system="HfArgumentParser").config_system == "hf"  # type: ignore[arg-type]
    assert Fact(name="x", file="f.py", line=1).off_switch is None
