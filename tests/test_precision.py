"""The precision the capped steps compute in, read from a fixture job's code per idiom and weighed at the
command's values (`read.precision`), and the checkpoint tolerances that follow from it."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_launch import walk

from wamf_tui.propose import proposals
from wamf_tui.read.analyze import analyze_script
from wamf_tui.read.precision import Precision, job_precision

ARGS = "import argparse, torch\np = argparse.ArgumentParser()\n{flags}args = p.parse_args()\n"
LOOP = "for step in range(10):\n    loss = model(x)\n    loss.backward()\n    opt.step()\n"


def read(tmp_path: Path, text: str, command: str = "") -> Precision:
    root = tmp_path / "job"
    root.mkdir(exist_ok=True)
    (root / "train.py").write_text(text)
    return job_precision(analyze_script(root / "train.py", root), command.split())


@pytest.mark.parametrize("code, dtype, line", [
    ("with torch.autocast('cuda', dtype=torch.bfloat16):\n    y = model(x)\n", "bf16", 1),
    ("with torch.autocast('cuda', torch.bfloat16):\n    y = model(x)\n", "bf16", 1),
    ("with torch.cuda.amp.autocast():\n    y = model(x)\n", "fp16", 1),
    ("scaler = torch.cuda.amp.GradScaler()\n", "fp16", 1),
    ("model = build()\nmodel.half()\n", "fp16", 2),
    ("model = Net().to(torch.bfloat16)\n", "bf16", 1),
    ("model = build()\nmodel.to(device='cuda', dtype=torch.float16)\n", "fp16", 2),
    ("import lightning as L\nfabric = L.Fabric(precision='bf16-mixed')\n", "bf16", 2),
    ("from lightning import Trainer\ntrainer = Trainer(precision=16)\n", "fp16", 2),
    ("from accelerate import Accelerator\nacc = Accelerator(mixed_precision='fp16')\n", "fp16", 2),
])
def test_each_idiom_in_code_gives_its_dtype_and_line(tmp_path, code, dtype, line):
    assert read(tmp_path, "import torch\n" + code) == Precision(dtype, f"train.py:{line + 1}", "code")


@pytest.mark.parametrize("code", ["model = build().to('cuda')\n", "q = q.to(torch.bfloat16)\n",
                                  "def scaler(**kwargs):\n    return torch.amp.GradScaler(**kwargs)\n"])
def test_no_cast_of_the_weights_and_no_helper_passing_its_arguments_on(tmp_path, code):
    assert read(tmp_path, "import torch\n" + code).dtype == "fp32"


AMP_FLAG = ARGS.format(flags="p.add_argument('--amp', action='store_true')\n") + \
    "scaler = torch.cuda.amp.GradScaler(enabled=args.amp)\n" \
    "if args.amp:\n    ctx = torch.autocast('cuda', dtype=torch.float16)\n"


@pytest.mark.parametrize("command, expected", [
    ("", Precision("fp32", "", "default")),
    ("--amp", Precision("fp16", "train.py:5", "values")),
])
def test_an_amp_switch_counts_at_its_resolved_value(tmp_path, command, expected):
    assert read(tmp_path, AMP_FLAG, command) == expected


ACCELERATE = ARGS.format(flags="p.add_argument('--mixed_precision', type=str, default='no')\n") + \
    "from accelerate import Accelerator\nacc = Accelerator(mixed_precision=args.mixed_precision)\n"


@pytest.mark.parametrize("command, dtype", [("", "fp32"), ("--mixed_precision bf16", "bf16"),
                                            ("--mixed_precision=fp16", "fp16")])
def test_an_accelerators_mixed_precision_from_the_jobs_setting(tmp_path, command, dtype):
    assert read(tmp_path, ACCELERATE, command).dtype == dtype


NANO = ("import torch\nfrom contextlib import nullcontext\ndevice = 'cuda'\n"
        "dtype = 'bfloat16' if torch.cuda.is_bf16_supported() else 'float16'\n"
        "device_type = 'cuda' if 'cuda' in device else 'cpu'\n"
        "ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]\n"
        "ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type, dtype=ptdtype)\n")


def test_a_dtype_table_under_a_condition_not_resolved_is_a_possible_16_bit(tmp_path):
    p = read(tmp_path, NANO)
    assert (p.dtype, p.where, p.how, p.condition) == ("bf16", "train.py:7", "possible", "not (device_type == 'cpu')")


def test_the_commands_dtype_setting_decides_the_table(tmp_path):
    assert read(tmp_path, NANO, "--dtype=float32").dtype == "fp32"
    assert read(tmp_path, NANO, "--dtype=float16").dtype == "fp16"


def test_an_accelerator_given_no_precision_takes_the_launchers(tmp_path):
    job = "from accelerate import Accelerator\nacc = Accelerator()\n"
    assert read(tmp_path, job, "accelerate launch --mixed_precision=no train.py").dtype == "fp32"
    assert read(tmp_path, job, "accelerate launch --mixed_precision bf16 train.py").dtype == "bf16"
    assert read(tmp_path, job) == Precision("bf16", "train.py:2", "possible", "mixed_precision is 16-bit")


def test_a_precision_setting_left_at_none_is_the_frameworks_choice_not_fp32(tmp_path):
    job = ARGS.format(flags="p.add_argument('--precision', default=None)\n") + \
        "import lightning as L\nprecision = args.precision or pick()\nfabric = L.Fabric(precision=precision)\n"
    assert read(tmp_path, job) == Precision("bf16", "train.py:7", "possible", "precision is 16-bit")
    assert read(tmp_path, job, "--precision 32-true").dtype == "fp32"


def test_a_trainers_bf16_field_and_the_launchers_switch(tmp_path):
    hf = ARGS.format(flags="p.add_argument('--bf16', type=bool, default=False)\n")
    assert read(tmp_path, hf, "--bf16 True") == Precision("bf16", "the command", "values")
    assert read(tmp_path, hf, "--bf16 False").dtype == "fp32"
    assert job_precision(None, "accelerate launch --mixed_precision=fp16 train.py".split()).dtype == "fp16"


def test_an_imported_modules_main_block_sets_no_precision(tmp_path):
    root = tmp_path / "job"
    root.mkdir()
    (root / "train.py").write_text("from helper import f\n" + LOOP)
    (root / "helper.py").write_text("import torch\ndef f():\n    pass\nif __name__ == '__main__':\n"
                                    "    torch.set_default_dtype(torch.float16)\n    m = net().half()\n")
    assert job_precision(analyze_script(root / "train.py", root), []).dtype == "fp32"


def test_tolerances_under_a_table_picked_autocast_are_never_fp32s(tmp_path):
    root, state, refused = walk(tmp_path, {"train.py": NANO + LOOP})
    tolerances = [c.tolerance for c in proposals.checkpoints(state) if c.tolerance != "exact"]
    assert tolerances and all("1e-5" not in t and "bf16, train.py:7, when not (device_type == 'cpu')" in t
                              for t in tolerances)


def test_autocast_behind_a_switch_left_off_keeps_fp32_tolerances(tmp_path):
    root, state, refused = walk(tmp_path, {"train.py": AMP_FLAG + LOOP})
    loss = next(c for c in proposals.checkpoints(state) if c.name == "loss")
    assert loss.tolerance == "rtol 1e-5 steps 1-5, rtol 1e-3 after"


def test_training_arguments_fp16_in_the_code_or_from_a_setting(tmp_path):
    """alpaca-lora: `transformers.TrainingArguments(..., fp16=True)` runs the Trainer's step under fp16 AMP;
    `bf16=args.bf16` only where the setting holds; `fp16=False` is fp32."""
    literal = "import transformers\nargs = transformers.TrainingArguments(output_dir='o', fp16=True)\n"
    assert read(tmp_path, literal) == Precision("fp16", "train.py:2", "code")
    setting = ARGS.format(flags="p.add_argument('--bf16', action='store_true')\n") + \
        "from transformers import TrainingArguments\ntargs = TrainingArguments(output_dir='o', bf16=args.bf16)\n"
    assert read(tmp_path, setting, "--bf16").dtype == "bf16"
    assert read(tmp_path, setting).dtype == "fp32"
    off = "from transformers import TrainingArguments\nt = TrainingArguments(output_dir='o', fp16=False)\n"
    assert read(tmp_path, off).dtype == "fp32"
