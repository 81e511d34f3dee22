"""The proposals, each on a state built here: the correctness checkpoints row by row (where, what, steps,
tolerance) for each precision, mode and kind of job, and the small lines the questions offer."""

from __future__ import annotations

from typing import Literal

import pytest

from wamf_tui.model import (
    Analysis,
    Anchor,
    Checkpoint,
    Detected,
    EnvFacts,
    GpuFacts,
    GpuProcess,
    HardwareFacts,
    InitState,
    PrecisionSignal,
)
from wamf_tui.propose import proposals


def job(*anchors: tuple[str, int, str], kind: str = "training", precision: list[PrecisionSignal] | None = None,
        flags: dict[str, str | None] | None = None) -> Analysis:
    return Analysis(script="train.py", kind=kind, precision=precision or [], flags=flags or {},
                    anchors=[Anchor(role=role, file="train.py", line=line, text=text) for role, line, text in anchors])


def signal(kind: Literal["autocast", "cast"], line: int, dtype: Literal["bf16", "fp16"]) -> PrecisionSignal:
    """A line of code that runs the step in `dtype` and nothing else."""
    return PrecisionSignal(kind=kind, file="train.py", line=line, text=dtype, dtypes=[dtype])


STEP = (("loss", 10, "loss = crit(out, y)"), ("forward", 9, "out = model(x)"), ("batch", 8, "x, y = batch"),
        ("backward", 11, "loss.backward()"), ("grad_clip", 12, "clip_grad_norm_(model.parameters(), 1.0)"),
        ("optimizer_step", 13, "opt.step()"))


def rows(state: InitState) -> list[tuple[str, str, str, str, str]]:
    return [(c.name, c.where, c.what, c.steps, c.tolerance) for c in proposals.checkpoints(state)]


def test_an_fp32_step_gets_every_checkpoint_at_its_line():
    assert rows(InitState(analysis=job(*STEP))) == [
        ("loss", "train.py:10", "loss value", "every step", "rtol 1e-5 steps 1-5, rtol 1e-3 after"),
        ("grad norm", "train.py:12", "total gradient norm (the value the clip call returns)", "every step",
         "rtol 1e-3"),
        ("model outputs", "train.py:9", "mean |output|, shape, dtype", "steps 1-3", "rtol 1e-5"),
        ("batch", "train.py:8", "input shapes and dtypes", "steps 1-3", "exact")]


@pytest.mark.parametrize(("precision", "command", "said"), [
    ([signal("autocast", 5, "bf16")], "", "bf16, train.py:5"),
    ([signal("cast", 6, "fp16")], "", "fp16, train.py:6"),
    ([], "accelerate launch --mixed_precision=bf16 train.py", "bf16, the command"),
    ([], "python train.py --fp16", "fp16, the command"),
    ([signal("cast", 7, "fp16"), signal("autocast", 8, "bf16")], "",
     "bf16, train.py:8"),  # bf16 wins where both are read
])
def test_half_precision_loosens_every_tolerance_and_says_where_it_was_read(precision, command, said):
    got = rows(InitState(analysis=job(*STEP, precision=precision), command=command))
    assert [r[4] for r in got] == [f"rtol 1e-2 steps 1-5, rtol 5e-2 after ({said})", f"rtol 5e-2 ({said})",
                                   f"rtol 1e-2 ({said})", "exact"]


@pytest.mark.parametrize("switch", ["--bf16 False", "--fp16 no", "--mixed_precision=no"])
def test_a_precision_switch_turned_off_is_fp32(switch):
    got = rows(InitState(analysis=job(*STEP), command=f"python train.py {switch}"))
    assert got[0][4] == "rtol 1e-5 steps 1-5, rtol 1e-3 after"


def test_accuracy_mode_asks_for_bit_exact_values():
    got = rows(InitState(analysis=job(*STEP, precision=[signal("autocast", 5, "bf16")]),
                         mode="accuracy"))
    assert [r[4] for r in got] == ["bit-exact", "bit-exact", "bit-exact", "exact"]


def test_no_clip_puts_the_norm_just_before_the_optimizer_step():
    got = rows(InitState(analysis=job(*(a for a in STEP if a[0] != "grad_clip"))))
    assert got[1] == ("grad norm", "train.py:13, just before the step",
                      "total gradient norm, computed there (no clip runs)", "every step", "rtol 1e-3")


@pytest.mark.parametrize(("default", "off"), [("0", True), ("0.0", True), ("None", True), (None, True),
                                              ("1.0", False)])
def test_a_clip_its_flag_leaves_off_is_no_checkpoint(default, off):
    clip = ("grad_clip", 12, "clip_grad_norm_(model.parameters(), args.clip) if args.clip > 0")
    state = InitState(analysis=job(*(a if a[0] != "grad_clip" else clip for a in STEP), flags={"--clip": default}))
    where = rows(state)[1][1]
    assert where == ("train.py:13, just before the step" if off else "train.py:12")


def test_a_library_loop_has_no_forward_line_and_its_hook_is_named():
    hook = ("loss", 20, "trainer.train() via TrainerCallback.on_log (logging_steps=1: loss and grad_norm every step)")
    got = rows(InitState(analysis=job(hook)))
    assert got == [("loss", "train.py:20 via trainer.train() via TrainerCallback.on_log (logging_steps=1: loss and "
                    "grad_norm every step)", "loss value", "every step", "rtol 1e-5 steps 1-5, rtol 1e-3 after")]


def test_an_inference_job_checks_its_outputs_and_inputs():
    got = rows(InitState(analysis=job(("forward", 5, "model.generate(x)"), ("batch", 4, "x = next(it)"),
                                      kind="inference")))
    assert got == [("outputs", "train.py:5", "generated tokens or output summary (mean |x|, shape, dtype)",
                    "every batch", "exact tokens"),
                   ("inputs", "train.py:4", "batch shapes and dtypes", "first 3 batches", "exact")]
    half = job(("forward", 5, "model.generate(x)"), kind="inference",
               precision=[signal("cast", 2, "fp16")])
    assert rows(InitState(analysis=half))[0][4] == "exact tokens; logits rtol 1e-2"
    assert rows(InitState(analysis=half))[1][1] == "train.py:5"  # no batch line: the forward's


def test_without_a_reading_the_checkpoints_say_where_to_look():
    assert rows(InitState()) == [
        ("loss", "where the loss is computed", "loss value", "every step", "rtol 1e-5 steps 1-5, rtol 1e-3 after"),
        ("model outputs", "the model forward call", "mean |output|, shape, dtype", "steps 1-3", "rtol 1e-5"),
        ("batch", "the model forward call", "input shapes and dtypes", "steps 1-3", "exact")]


def test_a_checkpoint_is_a_plain_model():
    assert isinstance(proposals.checkpoints(InitState())[0], Checkpoint)


def gpu(i: int, used: int = 0, util: int = 0, users: tuple[str | None, ...] = ()) -> GpuFacts:
    return GpuFacts(index=i, name="H100", memory_used_mib=used, memory_total_mib=81559, utilization=util,
                    processes=[GpuProcess(pid=100 + n, user=u) for n, u in enumerate(users)])


def on(gpus: list[GpuFacts], env: EnvFacts | None = None, **kw) -> InitState:
    return InitState(detected=Detected(hardware=HardwareFacts(host="gpu01", nvml=True, gpus=gpus), env=env), **kw)


def test_the_node_line_says_the_gpus_and_who_holds_the_busy_ones():
    assert proposals.node_line(InitState()) == ""
    assert proposals.node_line(on([])) == "gpu01 (no NVIDIA GPU visible when checked)"
    assert proposals.node_line(on([gpu(0), gpu(1)])) == "gpu01, 2x H100 80G, all free when checked"
    assert proposals.node_line(on([gpu(0), gpu(1, 9000, users=("bob", None)), gpu(2, 2000, 50)])) == \
        "gpu01, 3x H100 80G, GPU 1,2 busy when checked (held by bob, unknown)"


def test_known_problems_are_what_detection_knows_is_wrong_here():
    ok = EnvFacts(kind="venv", name=".venv", python_version="3.11.7", torch="2.13.0")
    assert proposals.known_problems(on([gpu(0)], ok)) == []
    assert proposals.known_problems(on([gpu(0)], EnvFacts(kind="venv", name=".venv"))) == [
        "torch is not installed in .venv"]
    assert proposals.known_problems(on([gpu(0)], EnvFacts(kind="conda"))) == ["torch is not installed in conda"]
    assert proposals.known_problems(on([gpu(0)], EnvFacts(error="the interpreter did not answer"))) == [
        "the interpreter did not answer"]
    assert proposals.known_problems(on([], ok)) == ["no NVIDIA GPU visible"]
    no_nvml = InitState(detected=Detected(hardware=HardwareFacts(host="h", nvml_error="NVML Shared Library Not Found")))
    assert proposals.known_problems(no_nvml) == ["NVML Shared Library Not Found"]
    assert proposals.known_problems(on([gpu(0, 9000, users=("bob",)), gpu(1, 5000)], ok)) == [
        "GPU 0 busy (bob pid 100)", "GPU 1 busy (memory in use)"]


def test_the_guarantees_name_the_run_line_the_node_and_what_was_checked():
    env = EnvFacts(kind="venv", python_version="3.11.7", torch="2.13.0")
    state = on([gpu(0), gpu(1)], env, run="python train.py", node="gpu01, 2x H100 80G (idle)")
    assert proposals.guarantee_items(state, "mlsys") == [
        "`python train.py` runs in this env", "gpu01's GPUs are idle during runs",
        "checked here: python 3.11.7, torch 2.13.0, 2 GPU(s) read via NVML"]
    assert proposals.guarantee_items(InitState(), "algo") == [
        "`the run line` runs in this environment", "nobody else uses the GPUs on the node during the runs"]
    bare = InitState(detected=Detected(env=EnvFacts(kind="system", python_version="3.12.1")))
    assert proposals.guarantee_items(bare, "algo")[-1] == "checked here: python 3.12.1"


def test_the_step_count_and_the_warm_up_the_trial_saw():
    from wamf_tui.model import BenchmarkChange, TrialResult

    cut = BenchmarkChange(what="total steps cut to 50", how="--max_steps=50", why="", flags=["--max_steps=50"])
    wrapped = BenchmarkChange(what="total steps cut to 40", how="", why="", env=["WAMF_MAX_STEPS=40"])
    whole = BenchmarkChange(what="whole job kept", how="no step limit", why="")
    assert [proposals.step_count(InitState(changes=c)) for c in ([cut], [wrapped], [whole], [])] == [
        "50", "40", "all", "30"]
    trial = TrialResult(command_hash="h", started="s", ended="exited", warmup=7)
    assert proposals.warmup_note(InitState(changes=[cut], trial=trial)) == \
        " The trial's warm-up took 7 steps: 50 leaves 43 steady."
    one = trial.model_copy(update={"warmup": 1})
    assert proposals.warmup_note(InitState(changes=[whole], trial=one)) == " The trial's warm-up took 1 step."
    assert proposals.warmup_note(InitState(changes=[cut])) == ""
    many = trial.model_copy(update={"warmup": 60})
    assert proposals.warmup_note(InitState(changes=[cut], trial=many)).endswith(": 50 leaves 0 steady.")


def test_what_must_not_change_names_the_shape_flags():
    fixed = "model size, batch size, sequence length, precision, parallelism and world size"
    assert proposals.must_not_change(InitState()) == fixed
    flags = {f: None for f in ("--lr", "--batch_size", "--seq_len", "--block_size", "--n_layer", "--n_head",
                               "--dtype", "--dim", "--precision")}
    got = proposals.must_not_change(InitState(analysis=Analysis(script="train.py", flags=flags)))
    assert got == f"{fixed} (flags: --batch_size, --seq_len, --block_size, --n_layer, --n_head, --dtype keep their " \
        "values)"
    assert proposals.must_not_change(InitState(analysis=Analysis(script="t.py", flags={"--lr": None}))) == fixed
