from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import full_state

from wamf_tui.contract import render as contract
from wamf_tui.model import InitState

# Shaped like the plugin's template/contract.md: placeholders in the Required block, TBD bodies, comments.
PLUGIN_TEMPLATE = """# Campaign contract

Define the workload you want optimized here.

---

## Required

```
reader          <who reads the reports, in their words>
repo            <path to the local checkout, and the branch>
activate        <the command that gets you into the environment>
run             <the command that runs the job>
node            <the machine to measure on. It has to be empty.>
```
---

## Correctness Instrumentation Plan

TBD

<!-- Name the recorder and where its checkpoints go. -->

---

## Everything else

TBD

<!--
| | what goes here |
|---|---|
| **Allowed changes** | <list them> |
-->
"""


@pytest.mark.parametrize("template", [contract.bundled_template(), PLUGIN_TEMPLATE], ids=["bundled", "plugin"])
def test_rendered_contract_passes_check(template):
    text = contract.render(full_state(), template)
    assert contract.check(text) == []
    assert "reader          algorithm engineer, new to systems" in text
    assert "| loss | train.py:42 | loss | 1-30 | rtol 1e-5 |" in text
    assert "| **Allowed changes** | system configs · enabling existing" in text
    assert "TBD" not in text and "<!--" not in text


@pytest.mark.parametrize("template", [contract.bundled_template(), PLUGIN_TEMPLATE], ids=["bundled", "plugin"])
def test_unanswered_keys_fail_check(template):
    state = full_state()
    state = state.model_copy(update={"run": ""})
    problems = contract.check(contract.render(state, template))
    assert [p.message for p in problems] == ["key 'run' is still TBD"]


def test_check_flags_each_downstream_rule():
    good = contract.render(full_state(), contract.bundled_template())
    lines = good.splitlines()
    assert contract.check(good) == []

    def problems(text: str) -> list[tuple[int, str]]:
        return [(p.line, p.message) for p in contract.check(text)]

    bad = good.replace("python train.py --steps 30", "python <script path>")
    n = next(i for i, line in enumerate(lines, 1) if line.startswith("run "))
    assert problems(bad) == [(n, "placeholder <script path>")]
    assert problems(good + "\nTBD\n")[-1][1] == "line is only TBD"
    assert (len(lines) + 2, 'stub text "Copy the settled contract here."') in problems(
        good + "\nCopy the settled contract here.\n")
    assert ("key 'node' is missing from the Required block") in [m for _, m in problems(
        "\n".join(x for x in lines if not x.startswith("node ")))]
    assert "key 'repo' has no value" in [m for _, m in problems(good.replace("/home/u/job (main @ abc1234)", ""))]
    no_plan = good.replace("## Correctness Instrumentation Plan", "## Plan")
    assert (0, "missing section '## Correctness Instrumentation Plan'") in problems(no_plan)
    table_row = next(x for x in lines if x.startswith("| **Hands off**"))
    assert "first cell should be the topic in bold (**Topic**)" in [
        m for _, m in problems(good.replace(table_row, "| Hands off | nothing |"))]
    assert "table row has 3 cells, expected 2" in [
        m for _, m in problems(good.replace(table_row, "| **Hands off** | a | b |"))]
    swapped = good.replace("reader          ", "XX").replace("repo            ", "reader          ").replace(
        "XX", "repo            ")
    assert any("out of order" in m for _, m in problems(swapped))


def test_arrows_and_comparisons_are_not_placeholders():
    text = contract.render(full_state(), contract.bundled_template()).replace(
        "python train.py --steps 30", "python train.py --steps 30  # loss -> down, lr <= 1e-3")
    assert contract.check(text) == []
    assert contract.placeholder_in("a -> b, c <= d, x<y") is None
    assert contract.placeholder_in("use <path>") == "<path>"


def test_values_are_written_literally():
    state = full_state()
    state = state.model_copy(update={"reader": "[bold]me[/] \x1b[31mred\nsecond line | pipe"})
    state = state.model_copy(update={"anything_else": "a | b"})
    text = contract.render(state, contract.bundled_template())
    assert "reader          [bold]me[/] \\x1b[31mred second line | pipe" in text
    assert "checks within tolerance) · a \\| b |" in text
    assert contract.check(text) == []


def test_write_atomic_keeps_old_file_when_write_fails(tmp_path, monkeypatch):
    path = tmp_path / "contract.md"
    path.write_text("old contract\n")

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    result = contract.save_contract(path, "new contract\n", overwrite=True)
    assert result.error == "No space left on device"
    assert path.read_text() == "old contract\n"
    assert [p.name for p in tmp_path.iterdir()] == ["contract.md"]  # no temp file left behind


def test_save_contract_shows_diff_then_keeps_backup(tmp_path):
    path = tmp_path / "contract.md"
    path.write_text("old\n")
    first = contract.save_contract(path, "new\n")
    assert not first.written and "-old" in first.diff and "+new" in first.diff
    assert path.read_text() == "old\n"
    second = contract.save_contract(path, "new\n", overwrite=True)
    assert second.written and second.backup == tmp_path / "contract.md.bak"
    assert path.read_text() == "new\n" and second.backup.read_text() == "old\n"


def test_unwritable_place_is_a_message(tmp_path):
    """Root ignores permission bits (CI runs as root), so /proc stands in for a read-only directory."""
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    target = Path("/proc/wamf-contract.md") if os.geteuid() == 0 else ro / "contract.md"
    try:
        result = contract.save_contract(target, "x\n")
    finally:
        ro.chmod(0o700)
    assert result.error and not result.written
    assert not target.exists()


def test_load_template_rejects_other_files(tmp_path):
    other = tmp_path / "notes.md"
    other.write_text("# notes\n")
    with pytest.raises(ValueError, match="not a contract template"):
        contract.load_template(str(other))
    with pytest.raises(OSError):
        contract.load_template(str(tmp_path / "missing.md"))
    assert contract.load_template(None) == contract.bundled_template()


def test_model_json_round_trip():
    state = full_state()
    state = state.model_copy(update={"hints": ["memory"]})
    again = InitState.from_json(state.to_json())
    assert again == state


def test_everything_else_says_each_answer_and_a_default_for_each_left_empty():
    """The section's rows, word for word: each answer, and for each one left empty what the optimizer reads."""
    from wamf_tui.bench.results import command_hash
    from wamf_tui.model import BenchmarkChange, Checkpoint, TrialResult

    empty = InitState()
    assert contract.everything_else_rows(empty) == [
        ("Allowed changes", "none agreed yet"), ("Your own tests", "none"), ("Hands off", "nothing named"),
        ("When to stop", "not set"), ("Hints", "none"),
        ("Anything else", "Benchmark mode: speed (deterministic algorithms off, checks within tolerance)")]
    st = InitState(
        allowed_changes=["system configs", "installing faster backends"], own_tests="pytest tests/",
        hands_off="the `data/` loader",
        memory_trade="up to 10 GB", when_to_stop="2x or 6 hours", hints=["bf16", "compile"], must_not_change="the loss",
        mode="accuracy", dirty_decision="diff saved to dirty.patch", guarantees="same tokens seen", anything_else="  ",
        activate="source .venv/bin/activate", run="python train.py --steps=30",
        changes=[BenchmarkChange(what="a", how="b", why="c", exclusion="eval at train.py:9 excluded"),
                 BenchmarkChange(what="d", how="e", why="f", exclusion="save off", enabled=False,
                                 flags=["--save_every=0"]),  # un-ticked: its switch is not in the run line
                 BenchmarkChange(what="g", how="h", why="i", exclusion="tensorboard stays on", enabled=False)],
        checks=[Checkpoint(name="loss", where="train.py:4", what="loss", steps="1-30", tolerance="rtol 1e-5"),
                Checkpoint(name="grad", where="train.py:5", what="g|n", steps="1", tolerance="0", enabled=False)],
        recorder="parity (record: PARITY=1)", extra_checks="eval accuracy at the end")
    trial = TrialResult(command_hash=command_hash(st.activate, st.run), started="2026-12-01 10:00", ended="exited",
                        exit_status=0, wall_s=61.0, steps=30)
    st = st.model_copy(update={"trial": trial})
    rows = contract.everything_else_rows(st)
    assert rows[:6] == [
        ("Allowed changes", "system configs · installing faster backends"), ("Your own tests", "pytest tests/"),
        ("Hands off", "the `data/` loader; memory for speed: up to 10 GB"), ("When to stop", "2x or 6 hours"),
        ("Hints", "bf16, compile"), ("What must not change", "the loss")]
    assert rows[6] == ("Anything else", "Benchmark mode: accuracy (deterministic algorithms on, bit-exact checks) · "
                                        "diff saved to dirty.patch · eval at train.py:9 excluded · "
                                        "tensorboard stays on · same tokens seen")  # nothing to switch: said
    assert rows[7] == ("Trial", contract.trial_body(st)) and rows[7][1].startswith("measured by a trial")
    st = st.model_copy(update={"run": st.run + " --lr=1"})  # the trial ran another command: its section goes
    assert contract.trial_body(st) == ""
    assert contract.plan_body(st).splitlines() == [
        "Recorder: parity (record: PARITY=1).", "", "| checkpoint | where | what | steps | tolerance |",
        "|---|---|---|---|---|", "| loss | train.py:4 | loss | 1-30 | rtol 1e-5 |", "",
        "Also check: eval accuracy at the end"]
    assert contract.plan_body(empty).splitlines() == ["Recorder: parity.", "", "No checkpoint agreed yet."]
    assert contract.else_body(empty).splitlines()[:3] == [
        "| topic | agreed |", "|---|---|", "| **Allowed changes** | none agreed yet |"]


GOOD = contract.render(full_state(), contract.bundled_template())


def _edit(lines: dict[int, str | None]) -> str:
    """The good contract with lines replaced (a string) or removed (None), 1-based as `check` counts."""
    out = GOOD.splitlines()
    for n in sorted(lines, reverse=True):
        if lines[n] is None:
            del out[n - 1]
        else:
            out[n - 1] = lines[n]  # type: ignore[assignment]
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(("edit", "said"), [
    ({1: "Campaign contract"}, [(0, "no title line ('# ...')")]),
    ({1: "<!-- # Campaign contract -->"}, [(0, "no title line ('# ...')")]),  # a comment is no title
    ({21: "", 23: "", 24: "", 25: ""}, [(19, "section '## Correctness Instrumentation Plan' is empty")]),
    ({19: "## Plan"}, [(0, "missing section '## Correctness Instrumentation Plan'"),
                       (19, "section '## Plan' is not one of the contract's three")]),
    ({38: GOOD.splitlines()[37] + "\n\n## Trial\n\nsteps 30"},  # a trial's baseline is a row, not a section
     [(40, "section '## Trial' is not one of the contract's three")]),
    ({9: "", 15: ""}, [(7, "'## Required' has no fenced block of key lines")]),
    ({10: "owner  me"}, [(9, "key 'reader' is missing from the Required block"),
                         (10, "unknown key 'owner' in the Required block")]),
    ({12: "repo            /elsewhere"}, [(9, "key 'activate' is missing from the Required block"),
                                           (12, "key 'repo' appears twice")]),
    ({11: "repo"}, [(11, "key 'repo' has no value")]),
    ({13: "run             TBD"}, [(13, "key 'run' is still TBD")]),
    ({14: None}, [(9, "key 'node' is missing from the Required block")]),
    ({10: GOOD.splitlines()[10], 11: GOOD.splitlines()[9]},
     [(9, "keys are out of order: expected reader, repo, activate, run, node")]),
    ({32: None, 33: None, 34: None, 35: None, 36: None, 37: None},
     [(29, "'## Everything else' needs a two-column table with at least one row")]),
    ({32: "|===|===|"}, [(32, "table separator row should be |---|---|")]),
    ({34: "| **Your own tests** | none | more |"}, [(34, "table row has 3 cells, expected 2")]),
    ({34: "| Your own tests | none |"}, [(34, "first cell should be the topic in bold (**Topic**)")]),
    ({34: "| **Your own tests** |  |"}, [(34, "row **Your own tests** has no value")]),
    ({3: "Copy the settled contract here.", 36: "TBD", 21: "Recorder: <name>."},
     [(3, 'stub text "Copy the settled contract here."'), (21, "placeholder <name>"), (36, "line is only TBD")]),
])
def test_each_rule_names_its_line_and_says_what_is_wrong(edit, said):
    """Every rule of `check`, one at a time, with the exact line and words; the rest of the contract passes."""
    assert contract.check(GOOD) == []
    assert [(p.line, p.message) for p in contract.check(_edit(edit))] == said


def test_backups_are_numbered_and_never_overwritten(tmp_path):
    path = tmp_path / "contract.md"
    assert contract.backup_path(path) == tmp_path / "contract.md.bak"
    path.write_text("v1\n")
    assert contract.save_contract(path, "v2\n", overwrite=True).backup == tmp_path / "contract.md.bak"
    (tmp_path / "contract.md.bak.1").symlink_to(tmp_path / "gone")  # a dangling link is taken too
    assert contract.save_contract(path, "v3\n", overwrite=True).backup == tmp_path / "contract.md.bak.2"
    assert contract.save_contract(path, "v4\n", overwrite=True).backup == tmp_path / "contract.md.bak.3"
    assert [(tmp_path / f"contract.md.bak{s}").read_text() for s in ("", ".2", ".3")] == ["v1\n", "v2\n", "v3\n"]
    assert path.read_text() == "v4\n"


def test_a_path_that_cannot_take_the_contract_says_why(tmp_path):
    (tmp_path / "folder").mkdir()
    assert contract.save_contract(tmp_path / "folder", "x\n").error == "that path is a folder"
    (tmp_path / "link.md").symlink_to(tmp_path / "elsewhere.md")
    assert contract.save_contract(tmp_path / "link.md", "x\n").error == "link.md is a symlink; name another path"
    old = tmp_path / "old.md"
    old.write_bytes(b"caf\xe9\n")  # not UTF-8: the difference is still shown, the file left as it is
    got = contract.save_contract(old, "cafe\n")
    assert got.diff is not None and "-caf\ufffd" in got.diff and "+cafe" in got.diff and not got.written
    assert old.read_bytes() == b"caf\xe9\n"


def test_a_template_is_filled_in_place_and_only_in_place():
    """What `render` does to a template, line by line: comments go, key lines inside the Required fence get
    their values in one column, other lines there stay, a section's `TBD` line becomes its body and what
    follows it up to the next `---` or heading goes, and runs of blank lines close up."""
    template = ("<!-- the team's notes -->\n# Our contract\n\nIntro.\n\n## Required\n\nrun TBD outside the fence\n"
                "```\nreader TBD\n\nour own line\nrun TBD\n```\n\n---\n\n## Correctness Instrumentation Plan\n\n"
                "TBD\nan old example the body replaces\n\n---\n\n\n\n## Everything else\nTBD\nmore example\n"
                "## Notes\nTBD\n\n\n")
    state = full_state()
    assert contract.render(state, template).splitlines() == [
        "", "# Our contract", "", "Intro.", "", "## Required", "", "run TBD outside the fence", "```",
        f"{'reader':<16}{state.reader}", "", "our own line", f"{'run':<16}{state.run}", "```", "", "---", "",
        "## Correctness Instrumentation Plan", "", *contract.plan_body(state).splitlines(), "", "---", "",
        "## Everything else", *contract.else_body(state).splitlines(), "## Notes", "TBD"]
    assert contract.render(state, template).endswith("TBD\n")


def test_small_tables_diff_headers_and_symlinks_exactly():
    one_row = GOOD.split("| **Your own tests**")[0].rsplit("| **Allowed changes**", 1)[0] + "| **Hints** | none |\n"
    assert contract.check(one_row) == []  # a header, its separator and one row: a table
    two_bad = _edit({34: "| **a** | b | c |", 35: "| **d** | e | f |"})
    assert [(p.line, p.message) for p in contract.check(two_bad)] == [
        (34, "table row has 3 cells, expected 2"), (35, "table row has 3 cells, expected 2")]
    assert contract.diff("a\nb\n", "a\nc\n", "c.md").splitlines() == [
        "--- c.md (on disk)", "+++ c.md (new)", "@@ -1,2 +1,2 @@", " a", "-b", "+c"]


def test_write_atomic_refuses_a_symlink_with_its_own_errno(tmp_path):
    import errno

    (tmp_path / "l.md").symlink_to(tmp_path / "t.md")
    with pytest.raises(OSError) as e:
        contract.write_atomic(tmp_path / "l.md", "x")
    assert (e.value.errno, e.value.strerror) == (errno.ELOOP, "l.md is a symlink; name another path")
    assert not (tmp_path / "t.md").exists() and [p.name for p in tmp_path.iterdir()] == ["l.md"]
