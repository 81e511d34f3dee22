"""Correctness checkpoints where training really happens: one fixture job per pattern, each row's
file:line asserted against the line it must point at."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import make_repo

from wamf_tui.model import InitState
from wamf_tui.propose import proposals
from wamf_tui.read.analyze import analyze_script

EVAL_FIRST = """\
import torch

@torch.no_grad()
def estimate_loss(model, batch):
    out = model(batch)
    loss = criterion(out, batch)
    return loss

def evaluate(model, loader):
    for b in loader:
        val_loss = criterion(model(b), b)

loss_fn = torch.nn.CrossEntropyLoss()
for step, batch in enumerate(loader):
    out = model(batch)
    loss = loss_fn(out, batch)
    loss.backward()
    optimizer.step()
    if step % 100 == 0:
        val_loss = evaluate(model, val_loader)
"""

AMP_ACCUM = """\
import torch
scaler = torch.cuda.amp.GradScaler()
for step in range(100):
    for micro in range(4):
        x, y = get_batch()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits, loss = model(x, y)
            loss = loss / grad_accum
        scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
"""

ACCELERATE = """\
from accelerate import Accelerator
accelerator = Accelerator(mixed_precision="bf16")
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
def train():
    for batch in loader:
        outputs = model(**batch)
        loss = outputs.loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
train()
"""

FABRIC = """\
import lightning as L
fabric = L.Fabric()
for batch in loader:
    inputs = batch["x"]
    pred = model(inputs)
    loss = torch.nn.functional.mse_loss(pred, batch["y"])
    fabric.backward(loss)
    optimizer.step()
"""

HF_SUBCLASS = """\
from transformers import Trainer, TrainingArguments

class MyTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False):
        outputs = model(**inputs)
        return outputs.loss * 2

args = TrainingArguments(output_dir="out", bf16=True)
trainer = MyTrainer(model=model, args=args)
trainer.train()
"""


def rows(tmp_path: Path, files: dict[str, str], entry: str = "train.py", command: str = "") -> dict:
    root = make_repo(tmp_path / "job", files)
    state = InitState(repo_path=str(root), script=entry, command=command,
                      analysis=analyze_script(root / entry, root))
    return {c.name: c for c in proposals.checkpoints(state)}


def anchors(tmp_path: Path, files: dict[str, str]) -> dict[str, str]:
    """Each role of the step read from `train.py` of a repo of `files`, at its `file:line`."""
    root = make_repo(tmp_path / "job", files)
    return {x.role: f"{x.file}:{x.line}" for x in analyze_script(root / "train.py", root).anchors}


def at(text: str, needle: str, file: str = "train.py") -> str:
    return f"{file}:{next(i for i, s in enumerate(text.splitlines(), 1) if needle in s)}"


def test_the_eval_function_above_the_loop_is_never_the_loss(tmp_path):
    got = rows(tmp_path, {"train.py": EVAL_FIRST})
    assert got["loss"].where == at(EVAL_FIRST, "    loss = loss_fn(out, batch)")
    loop_forward = [i for i, s in enumerate(EVAL_FIRST.splitlines(), 1) if s == "    out = model(batch)"][-1]
    assert got["model outputs"].where == f"train.py:{loop_forward}"  # the loop's, not estimate_loss's
    assert got["grad norm"].where.startswith(at(EVAL_FIRST, "optimizer.step()"))  # no clip: computed there
    assert got["loss"].tolerance == "rtol 1e-5 steps 1-5, rtol 1e-3 after"  # fp32


def test_scaler_accumulation_and_bf16(tmp_path):
    got = rows(tmp_path, {"train.py": AMP_ACCUM})
    assert got["loss"].where == at(AMP_ACCUM, "logits, loss = model(x, y)")  # back through `loss / accum`
    assert got["model outputs"].where == at(AMP_ACCUM, "logits, loss = model(x, y)")
    assert got["batch"].where == at(AMP_ACCUM, "x, y = get_batch()")
    assert got["grad norm"].where == at(AMP_ACCUM, "clip_grad_norm_")
    assert got["loss"].tolerance.startswith("rtol 1e-2 steps 1-5, rtol 5e-2 after (bf16, train.py:")


def test_accelerate_and_its_precision_from_the_command(tmp_path):
    got = rows(tmp_path, {"train.py": ACCELERATE.replace('mixed_precision="bf16"', "")},
               command="accelerate launch --mixed_precision=fp16 train.py")
    assert got["loss"].where == at(ACCELERATE, "loss = outputs.loss")
    assert got["model outputs"].where == at(ACCELERATE, "outputs = model(**batch)")
    assert got["loss"].tolerance.endswith("(fp16, the command)")


DEEPSPEED_ENGINE = """\
import deepspeed
import torch
model, optimizer, _, lr_scheduler = deepspeed.initialize(model=model, optimizer=optimizer)
for epoch in range(3):
    for step, batch in enumerate(train_dataloader):
        outputs = model(**batch, use_cache=False)
        loss = outputs.loss
        model.backward(loss)
        model.step()
"""


def test_a_deepspeed_engine_steps_itself(tmp_path):
    """DeepSpeed-Chat: `model.backward(loss)` then `model.step()`, the engine's own optimizer step (its grad
    clip is in the DeepSpeed config, so the norm is computed there)."""
    got = rows(tmp_path, {"train.py": DEEPSPEED_ENGINE})
    assert got["loss"].where == at(DEEPSPEED_ENGINE, "loss = outputs.loss")
    assert got["grad norm"].where.startswith(at(DEEPSPEED_ENGINE, "model.step()"))


OPTIONAL_SCALER = """\
import torch
scaler = torch.amp.GradScaler() if dtype == torch.float16 else None
for step in range(1000):
    loss = model(x, y)
    if scaler is not None:
        scaler.scale(loss).backward()
    else:
        loss.backward()
    if scaler is not None:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
"""


def test_the_fp16_scalers_branch_is_not_the_default_path(tmp_path):
    """nanochat: a GradScaler only for fp16, `if scaler is not None: ... else: loss.backward()`; a bf16 or fp32
    run takes the `else`, so the step's anchors are there. A job that always scales keeps the scaler's."""
    got = rows(tmp_path, {"train.py": OPTIONAL_SCALER})
    assert got["grad norm"].where.startswith(at(OPTIONAL_SCALER, "        optimizer.step()"))
    a = analyze_script(make_repo(tmp_path / "b", {"train.py": OPTIONAL_SCALER}) / "train.py")
    backward = next(f"train.py:{x.line}" for x in a.anchors if x.role == "backward")
    assert backward == at(OPTIONAL_SCALER, "        loss.backward()")


def test_fabric(tmp_path):
    got = rows(tmp_path, {"train.py": FABRIC})
    assert got["loss"].where == at(FABRIC, "loss = torch.nn.functional.mse_loss")
    assert got["model outputs"].where == at(FABRIC, "pred = model(inputs)")
    assert got["batch"].where == at(FABRIC, 'inputs = batch["x"]')


def test_a_loop_in_a_sibling_module_is_followed(tmp_path):
    trainer = ("class Trainer:\n    def fit(self):\n        for b in self.loader:\n            out = self.model(b)\n"
               "            loss = self.crit(out, b)\n            loss.backward()\n            self.opt.step()\n")
    entry = "from trainer import Trainer\n\nif __name__ == '__main__':\n    Trainer().fit()\n"
    got = rows(tmp_path, {"train.py": entry, "trainer.py": trainer})
    assert got["loss"].where == "trainer.py:5" and got["model outputs"].where == "trainer.py:4"


def test_hf_trainer_with_and_without_its_own_compute_loss(tmp_path):
    got = rows(tmp_path, {"train.py": HF_SUBCLASS})
    assert got["loss"].where == at(HF_SUBCLASS, "return outputs.loss * 2")
    assert "bf16" in got["loss"].tolerance or "rtol 1e-5" in got["loss"].tolerance
    plain = HF_SUBCLASS.replace("class MyTrainer(Trainer):\n    def compute_loss(self, model, inputs, "
                                "return_outputs=False):\n        outputs = model(**inputs)\n"
                                "        return outputs.loss * 2\n", "").replace("MyTrainer(", "Trainer(")
    got = rows(tmp_path / "plain", {"train.py": plain})
    built = at(plain, "trainer = Trainer(").split(":")[1]
    train = at(plain, "trainer.train()")
    assert got["loss"].where == f"{train} via TrainerCallback.on_log (logging_steps=1: " \
                                f"loss and grad_norm every step), attached to the Trainer of line {built}"
    # the library's loop runs the forward: a hook on the model it is given, at the call that runs the loop
    assert got["model outputs"].where == f"{train} via a forward hook on the model the Trainer of line {built} " \
                                         "runs in Trainer.compute_loss"
    assert got["batch"].where.startswith(f"{train} via the inputs Trainer.training_step gives the model")


@pytest.mark.parametrize("default", ["1.0", "0.0"])
def test_grad_norm_when_clipping_is_off_by_default(tmp_path, default):
    body = (f"import argparse, torch\np = argparse.ArgumentParser()\np.add_argument('--clip', default={default})\n"
            "args = p.parse_args()\nfor b in loader:\n    loss = model(b)\n    loss.backward()\n"
            "    if args.clip > 0:\n        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)\n"
            "    optimizer.step()\n")
    got = rows(tmp_path, {"train.py": body})
    if default == "1.0":
        assert got["grad norm"].where == "train.py:9" and "clip call returns" in got["grad norm"].what
    else:  # the clip never runs by default: a norm computed at the step, said as such
        assert got["grad norm"].where == "train.py:10, just before the step"
        assert "computed there" in got["grad norm"].what


@pytest.mark.parametrize("clip", [True, False])
def test_grad_norm_where_clipping_runs_and_where_it_does_not(tmp_path, clip):
    body = ("for b in loader:\n    loss = model(b)\n    loss.backward()\n"
            + ("    gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n" if clip else "")
            + "    optimizer.step()\n")
    got = rows(tmp_path, {"train.py": "import torch\n" + body})
    if clip:
        assert got["grad norm"].where == "train.py:5" and "clip call returns" in got["grad norm"].what
    else:
        assert got["grad norm"].where.startswith("train.py:5, just before the step")
        assert "computed there" in got["grad norm"].what


def test_examples_of_what_else_to_check_come_from_the_job(tmp_path):
    body = ("import torch, wandb\nfor b in loader:\n    loss = model(b)\n    loss.backward()\n    opt.step()\n"
            "    wandb.log({'train/loss': loss.item(), 'train/acc': acc, 'lr': lr})\n"
            "def _validate_tool_calls(x):\n    pass\n")
    root = make_repo(tmp_path / "job", {"train.py": body})
    state = InitState(repo_path=str(root), script="train.py", analysis=analyze_script(root / "train.py", root))
    assert proposals.extra_check_examples(state) == "train/acc, lr"


def test_a_lightning_module_behind_a_hydra_target(tmp_path):
    entry = ("import hydra\nimport lightning as L\n\n@hydra.main(config_path='configs', config_name='train')\n"
             "def main(cfg):\n    model = hydra.utils.instantiate(cfg.model)\n    trainer = L.Trainer()\n"
             "    trainer.fit(model)\n\nif __name__ == '__main__':\n    main()\n")
    module = ("import lightning as L\nimport torch\n\nclass MNISTLitModule(L.LightningModule):\n"
              "    def training_step(self, batch, idx):\n        x, y = batch\n"
              "        return torch.nn.functional.cross_entropy(self(x), y)\n\n"
              "    def validation_step(self, batch, idx):\n        return self.loss(batch)\n")
    got = rows(tmp_path, {"train.py": entry, "configs/train.yaml": "defaults:\n  - model: mnist\n",
                          "configs/model/mnist.yaml": "_target_: src.models.mnist_module.MNISTLitModule\nlr: 0.1\n",
                          "src/__init__.py": "", "src/models/__init__.py": "", "src/models/mnist_module.py": module})
    assert got["loss"].where == "src/models/mnist_module.py:7"
    assert got["grad norm"].where == ("src/models/mnist_module.py:5 via on_before_optimizer_step hook "
                                      "(grad norm before each step) of MNISTLitModule")


SUBCLASSED = """\
import pytorch_lightning as pl


class SequenceModel(pl.LightningModule):
    def step(self, batch):
        x, y = batch
        return self.loss_fn(self.forward(x), y), None

    def shared_step(self, batch, phase='train'):
        loss, output = self.step(batch)
        return {"loss": loss, "output": output}

    def training_step(self, batch, batch_idx):
        return self.shared_step(batch, phase='train')


class SequenceLMModel(SequenceModel):
    def step(self, batch):
        x, y = batch
        output = self.forward(x).logits
        loss = self.loss_fn(output, y)
        return loss, output
"""


def test_a_lightning_step_the_config_builds_runs_its_own_overrides(tmp_path):
    """flash-attention's `task._target_: src.tasks.seq.SequenceLMModel`: its inherited `training_step` returns
    `self.shared_step(...)`, whose `self.step(...)` is the subclass's own: the loss and forward are read there,
    the batch where the step hands it on. With no config naming the subclass, the base's own step is read."""
    entry = ("import hydra\nimport lightning as L\n\n@hydra.main(config_path='configs', config_name='train')\n"
             "def main(cfg):\n    model = hydra.utils.instantiate(cfg.task)\n    trainer = L.Trainer()\n"
             "    trainer.fit(model)\n\nif __name__ == '__main__':\n    main()\n")
    files = {"train.py": entry, "configs/train.yaml": "task:\n  _target_: src.seq.SequenceLMModel\n",
             "src/__init__.py": "", "src/seq.py": SUBCLASSED}
    root = make_repo(tmp_path / "job", files)
    got = {x.role: f"{x.file}:{x.line}" for x in analyze_script(root / "train.py", root).anchors}
    assert (got["loss"], got["forward"], got["batch"]) == (
        "src/seq.py:" + at(SUBCLASSED, "loss = self.loss_fn(output, y)").split(":")[1],
        "src/seq.py:" + at(SUBCLASSED, "output = self.forward(x).logits").split(":")[1],
        "src/seq.py:" + at(SUBCLASSED, "return self.shared_step(batch, phase='train')").split(":")[1])
    base = make_repo(tmp_path / "base", {**files, "configs/train.yaml": "task:\n  _target_: src.seq.SequenceModel\n"})
    got = {x.role: f"{x.file}:{x.line}" for x in analyze_script(base / "train.py", base).anchors}
    assert got["loss"] == "src/seq.py:" + at(SUBCLASSED, "loss, output = self.step(batch)").split(":")[1]


METHOD_LOSS = """\
import torch
model = K.config.make_denoiser_wrapper(config)(inner_model)
for batch in train_dl:
    reals, _, aug_cond = batch[image_key]
    noise = torch.randn_like(reals)
    losses = model.loss(reals, noise, sigma, aug_cond=aug_cond)
    accelerator.backward(losses.mean())
    opt.step()
"""


def test_a_loss_the_models_own_method_returns_reduced_at_the_backward(tmp_path):
    """k-diffusion: `losses = model.loss(reals, noise, sigma)` then `accelerator.backward(losses.mean())`: the loss
    and the forward are the model's method call (never the line that builds `model`), the batch where the reals
    come out of it."""
    root = make_repo(tmp_path / "job", {"train.py": METHOD_LOSS})
    got = {x.role: f"{x.file}:{x.line}" for x in analyze_script(root / "train.py", root).anchors}
    call = at(METHOD_LOSS, "losses = model.loss(")
    assert (got["loss"], got["forward"], got["batch"]) == (call, call, at(METHOD_LOSS, "reals, _, aug_cond = batch"))


WARM_UP_FIRST = """\
import torch
for step in warmup_steps:  # compile the kernels, then reset the state
    loss = model(x, y)
    loss.backward()
    manager.step_optimizers(step)
model.load_state_dict(initial_state)
for step in range(train_steps + 1):
    if step == train_steps:
        torch.save(model.state_dict(), "final.pt")
        break
    loss = model(x, y).sum() * scale
    loss.backward()
    manager.step_optimizers(step)
"""


def test_a_kernel_warm_up_loop_is_not_the_training_step(tmp_path):
    root = make_repo(tmp_path / "job", {"train.py": WARM_UP_FIRST})
    a = analyze_script(root / "train.py", root)
    got = {x.role: f"{x.file}:{x.line}" for x in a.anchors}
    assert got["loss"] == got["forward"] == at(WARM_UP_FIRST, "loss = model(x, y).sum() * scale")
    assert got["backward"] == f"train.py:{WARM_UP_FIRST.splitlines().index('    loss.backward()', 5) + 1}"
    # a trainer's own method that steps its optimizers is the optimizer step (the wrapper counts what it steps)
    assert got["optimizer_step"] == f"train.py:{len(WARM_UP_FIRST.splitlines())}"
    assert a.train_loop is not None and a.train_loop.start == 7


SIBLINGS = """\
import torch

class Trainer:
    def forward_backward_step(self, inputs, labels):
        pred = self.model(inputs)
        loss = self.loss_fn(pred, labels)
        loss.backward()
        return loss

    def train_step(self, batches):
        for inputs, labels in batches:
            self.forward_backward_step(inputs, labels)
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizers.step()

    def train(self):
        while self.step < self.steps:
            self.train_step(next(self.data))

Trainer().train()
"""


def test_the_optimizer_stepped_in_a_sibling_method_is_the_steps(tmp_path):
    """The backward in one method, the clip and the optimizer step in the method that calls it (torchtitan)."""
    got = anchors(tmp_path, {"train.py": SIBLINGS})
    assert (got["backward"], got["optimizer_step"], got["grad_clip"]) == (
        at(SIBLINGS, "loss.backward()"), at(SIBLINGS, "self.optimizers.step()"), at(SIBLINGS, "clip_grad_norm_"))


BRANCHED_LOSS = """\
import torch
from pipeline import run_schedule

def loss_func(args, loss_mask, output_tensor):
    if args.kd_dir is not None:
        loss_func_kd = build_kd_loss(args.kd_dir)
        loss, n = loss_func_kd(loss_mask, output_tensor)
    elif getattr(args, "modelopt", False):
        loss, n = loss_func_modelopt(loss_mask, output_tensor)
    else:
        losses = output_tensor.view(-1).float()
        loss = torch.sum(losses * loss_mask.view(-1))
    return loss

def forward_step(batch, model):
    output_tensor = model(batch["tokens"], labels=batch["labels"])
    return output_tensor, loss_func

for step in range(1000):
    run_schedule(forward_step, model)
    optimizer.step()
"""


def test_the_loss_is_the_one_the_default_path_computes(tmp_path):
    """Megatron's `loss_func`: a distillation branch (`args.kd_dir is not None`) and a ModelOpt one come first;
    the loss the job computes by default is in the `else`, reduced from `losses`. `loss_func_kd = build(...)` is
    a function, and `loss_func_modelopt(...)` runs no model."""
    got = anchors(tmp_path, {"train.py": BRANCHED_LOSS})
    assert (got["loss"], got["forward"]) == (at(BRANCHED_LOSS, "loss = torch.sum"),
                                             at(BRANCHED_LOSS, "output_tensor = model("))


def test_a_probes_backward_whose_gradients_are_zeroed_is_not_the_step(tmp_path):
    """lingua: a periodic probe runs a throw-away forward and backward on half a batch, then zeroes the
    gradients ("cancel this fake step"); the step is the forward and backward after it."""
    body = ("import torch\n\ndef train(model, optimizer, loader, probe_freq=None):\n    for x, y in loader:\n"
            "        if probe_freq is not None:\n            probe_loss = model(x[:1], y[:1])\n"
            "            probe_loss.backward()\n            optimizer.zero_grad()\n"
            "        loss = model(x, y)\n        loss.backward()\n        optimizer.step()\n"
            "        optimizer.zero_grad()\n\nif __name__ == '__main__':\n    train(None, None, [])\n")
    root = make_repo(tmp_path / "job", {"train.py": body})
    a = analyze_script(root / "train.py", root)
    assert {(x.role, x.line) for x in a.anchors if x.role in ("loss", "backward", "optimizer_step")} == {
        ("loss", 9), ("backward", 10), ("optimizer_step", 11)}


def test_the_batch_is_where_the_input_is_taken_from_the_loaders_batch(tmp_path):
    """diffusers: `for step, batch in enumerate(loader)`, `latents = vae.encode(batch["pixel_values"])`, then
    several transforms before `unet(noisy_latents, ...)`: the batch row is where the data leaves the batch."""
    body = ("import torch\n\ndef train(unet, vae, loader, opt):\n    for step, batch in enumerate(loader):\n"
            "        latents = vae.encode(batch['pixel_values'])\n        latents = latents * 0.18\n"
            "        noise = torch.randn_like(latents)\n        noisy = latents + noise\n"
            "        pred = unet(noisy)\n        loss = torch.nn.functional.mse_loss(pred, noise)\n"
            "        loss.backward()\n        opt.step()\n\nif __name__ == '__main__':\n    train(1, 2, [], 3)\n")
    got = rows(tmp_path, {"train.py": body})
    assert got["batch"].where == at(body, "latents = vae.encode(batch['pixel_values'])")


GAN = """\
import torch


def train_loop(state, batch, accel):
    batch = prepare(batch, accel.device)
    with torch.no_grad():
        signal = state.transform(batch["signal"].clone())
    out = state.generator(signal.audio_data, signal.sample_rate)
    recons = AudioSignal(out["audio"], signal.sample_rate)
    output = {}
    output["adv/disc_loss"] = state.gan_loss.discriminator_loss(recons, signal)
    state.optimizer_d.zero_grad()
    accel.backward(output["adv/disc_loss"])
    state.optimizer_d.step()


for batch in loader:
    train_loop(state, batch, accel)
"""


def test_a_loss_stored_into_a_dict_is_followed_to_the_model_that_made_its_input(tmp_path):
    """descript-audio-codec: `output[key] = gan_loss.discriminator_loss(recons, signal)` is a loss over the
    generator's output (a loss call is no model, whatever its name holds); `recons` wraps `out["audio"]`, made by
    `state.generator(...)`; the batch is what the generator reads (`signal.audio_data`), made above."""
    got = rows(tmp_path, {"train.py": GAN})
    assert got["model outputs"].where == at(GAN, "out = state.generator(")
    assert got["batch"].where == at(GAN, "signal = state.transform(")
    assert got["loss"].where == at(GAN, 'accel.backward(output["adv/disc_loss"])')


HIFI = """\
import itertools
import torch

optim_g = torch.optim.AdamW(generator.parameters(), 2e-4)
optim_d = torch.optim.AdamW(itertools.chain(msd.parameters(), mpd.parameters()), 2e-4)
for epoch in range(3100):
    for i, batch in enumerate(train_loader):
        x, y, _, y_mel = batch
        y_g_hat = generator(x)
        optim_d.zero_grad()
        y_df_hat_r, y_df_hat_g, _, _ = mpd(y, y_g_hat.detach())
        loss_disc_f, _, _ = discriminator_loss(y_df_hat_r, y_df_hat_g)
        y_ds_hat_r, y_ds_hat_g, _, _ = msd(y, y_g_hat.detach())
        loss_disc_s, _, _ = discriminator_loss(y_ds_hat_r, y_ds_hat_g)
        loss_disc_all = loss_disc_s + loss_disc_f
        loss_disc_all.backward()
        optim_d.step()
"""


def test_a_sum_of_losses_is_followed_to_a_model_named_by_what_the_optimizer_trains(tmp_path):
    """hifi-gan: `loss_disc_all = loss_disc_s + loss_disc_f`, each from `discriminator_loss` over the outputs of
    `msd` and `mpd`, named as models only by their parameters going to an optimizer."""
    got = rows(tmp_path, {"train.py": HIFI})
    assert got["loss"].where == at(HIFI, "loss_disc_all = loss_disc_s + loss_disc_f")
    assert got["model outputs"].where == at(HIFI, "= msd(y, y_g_hat.detach())")
    assert got["batch"].where == at(HIFI, "x, y, _, y_mel = batch")


REWRAPPED = """\
import torch


class Trainer:
    def run_step(self):
        data = next(self.data_iter)
        loss_dict = self.model(data)
        if isinstance(loss_dict, torch.Tensor):
            loss_dict = {"total_loss": loss_dict}
        losses = sum(loss_dict.values())
        self.optimizer.zero_grad()
        losses.backward()
        self.optimizer.step()

    def train(self):
        for _ in range(10):
            self.run_step()


Trainer().train()
"""


def test_the_forward_behind_a_rewrap_of_its_output_is_the_model_call(tmp_path):
    """`loss_dict = {"total_loss": loss_dict}` rewraps what the model made: the forward is the model call
    above it, and the batch where that call's input was taken (detectron2's SimpleTrainer.run_step)."""
    got = anchors(tmp_path, {"train.py": REWRAPPED})
    assert got["forward"] == at(REWRAPPED, "loss_dict = self.model(data)")
    assert got["batch"] == at(REWRAPPED, "data = next(self.data_iter)")
    assert got["loss"] == at(REWRAPPED, "losses = sum(loss_dict.values())")


MICROBATCHES = """\
import torch
import torch.nn.functional as F


def main(data):
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.Adam(model.parameters())
    mp_trainer = MixedPrecisionTrainer(model)

    def forward_backward(loader):
        batch = next(loader)
        for i, (sub_batch, sub_labels) in enumerate(split(batch)):
            logits = model(sub_batch)
            loss = F.cross_entropy(logits, sub_labels)
            loss = loss.mean()
            mp_trainer.backward(loss * len(sub_batch) / len(batch))

    for step in range(100):
        forward_backward(data)
        mp_trainer.optimize(opt)


main(None)
"""


def test_a_scaled_microbatch_loss_and_a_helpers_optimize_are_the_step(tmp_path):
    """guided-diffusion: `mp_trainer.backward(loss * len(sub_batch) / len(batch))` scales the loss by two
    sizes (the loss is the left term, not `batch`), and `mp_trainer.optimize(opt)` steps the optimizer."""
    got = anchors(tmp_path, {"train.py": MICROBATCHES})
    assert got["loss"] == at(MICROBATCHES, "loss = F.cross_entropy(logits, sub_labels)")
    assert got["forward"] == at(MICROBATCHES, "logits = model(sub_batch)")
    assert got["optimizer_step"] == at(MICROBATCHES, "mp_trainer.optimize(opt)")


INLINE_LOSS = """\
import torch
import torch.nn.functional as F

model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
warm = torch.empty(2, requires_grad=True)
torch.empty(2).sum().backward()
for inputs, labels in loader:
    outputs = model(inputs)
    F.cross_entropy(outputs, labels, reduction="sum").backward()
    opt.step()
"""


def test_a_loss_computed_in_the_backward_call_is_the_loss_row(tmp_path):
    """airbench: `F.cross_entropy(outputs, labels).backward()` computes the loss on the backward's own line; a
    tensor made there (`torch.empty(2).sum().backward()`) is no loss."""
    got = anchors(tmp_path, {"train.py": INLINE_LOSS})
    assert got["loss"] == got["backward"] == at(INLINE_LOSS, "F.cross_entropy(outputs")
    assert got["forward"] == at(INLINE_LOSS, "outputs = model(inputs)")


def test_a_reduced_loss_given_to_backward_is_the_loss(tmp_path):
    """sparsify: `loss.div(acc_steps).backward()` backpropagates the loss computed above it."""
    text = ("import torch\nfor x in loader:\n    out = model(x)\n    loss = out.fvu + out.aux\n"
            "    loss.div(acc_steps).backward()\n    opt.step()\n")
    got = anchors(tmp_path, {"train.py": text})
    assert got["loss"] == at(text, "loss = out.fvu") and got["backward"] == at(text, "loss.div(acc_steps)")
    assert got["forward"] == at(text, "out = model(x)")


CLOSURES = """\
import torch


def train_one_epoch(model, loader, optimizer, task):
    for batch_idx, (input, target) in enumerate(loader):
        def _forward():
            with torch.autocast("cuda"):
                result = task(input, target)
                _loss = result["loss"]
            return _loss, result

        def _backward(_loss):
            _loss.backward()
            optimizer.step()

        loss, result = _forward()
        _backward(loss)


train_one_epoch(model, loader, optimizer, task)
"""


def test_a_step_in_local_closures_is_traced_through_their_call_and_return(tmp_path):
    """timm: `_backward(_loss)` backpropagates what `loss, result = _forward()` returned; the loss is made in
    `_forward` (`_loss = result["loss"]`) from the model call `task(input, target)`."""
    got = anchors(tmp_path, {"train.py": CLOSURES})
    assert got["backward"] == at(CLOSURES, "_loss.backward()")
    assert got["optimizer_step"] == at(CLOSURES, "optimizer.step()")
    assert got["loss"] == at(CLOSURES, '_loss = result["loss"]')
    assert got["forward"] == at(CLOSURES, "result = task(input, target)")


CHAINED = """\
import torch


def train(model, loader, eval_loader, opt):
    for step, batch in enumerate(loader):
        loss = model(**batch).loss
        loss.backward()
        opt.step()
    with torch.no_grad():
        for batch in eval_loader:
            outputs = model(**batch)
            print(outputs.loss)


train(model, loader, eval_loader, opt)
"""


def test_a_loss_read_off_the_model_call_itself_has_its_forward_there(tmp_path):
    """llama-cookbook: `loss = model(**batch).loss` is the forward; the eval loop's `model(**batch)` under
    no_grad is not."""
    got = anchors(tmp_path, {"train.py": CHAINED})
    assert got["forward"] == got["loss"] == at(CHAINED, "loss = model(**batch).loss")
    assert got["batch"] == at(CHAINED, "for step, batch in enumerate(loader)")


LOSS_FN = """\
import torch


def training_loop(ddp, optimizer, dataset_iterator, loss_fn, scaling):
    for step in range(100):
        images, labels = next(dataset_iterator)
        images = images.to("cuda") / 127.5 - 1
        loss = loss_fn(net=ddp, images=images, labels=labels)
        loss.sum().mul(scaling).backward()
        optimizer.step()


training_loop(ddp, optimizer, dataset_iterator, loss_fn, 1.0)
"""


def test_a_loss_function_given_the_model_runs_the_forward(tmp_path):
    """edm: `loss_fn(net=ddp, images=images, ...)` runs the network inside, and
    `loss.sum().mul(s).backward()` backpropagates that loss."""
    got = anchors(tmp_path, {"train.py": LOSS_FN})
    assert got["backward"] == at(LOSS_FN, "loss.sum().mul(scaling).backward()")
    assert got["forward"] == got["loss"] == at(LOSS_FN, "loss = loss_fn(net=ddp")
    assert got["batch"] in (at(LOSS_FN, "images = images.to("), at(LOSS_FN, "images, labels = next("))


METHODS = """\
import torch


class Trainer:
    def model_forward(self, batch):
        logits = self.dist_model(input_ids=batch["input_ids"]).logits
        shifted = logits[..., :-1, :].contiguous()
        labels = batch["labels"][..., 1:]
        ce_loss = self.loss_fn(shifted.view(-1, shifted.size(-1)), labels.view(-1))
        return ce_loss, logits

    def train_micro_batch(self, micro_batch, tokens):
        ce_loss, logits = self.model_forward(micro_batch)
        ce_loss = ce_loss / tokens
        loss = ce_loss
        return loss, ce_loss

    def train_step(self, batch):
        tokens = batch["input_ids"].numel()
        for micro_batch in self.split_batch(batch):
            loss, ce_loss = self.train_micro_batch(micro_batch, tokens)
            loss.backward()
        self.optim.step()

    def fit(self):
        for batch in self.loader:
            self.train_step(batch)


Trainer().fit()
"""


def test_a_loss_a_method_of_the_class_returns_is_traced_into_it_and_the_one_it_calls(tmp_path):
    """OLMo: `loss = self.train_micro_batch(mb, n)` returns what `self.model_forward(mb)` computed from the model's
    logits, reshaped on the way (`logits[..., :-1, :].contiguous()`); the batch is the one the step hands in."""
    got = anchors(tmp_path, {"train.py": METHODS})
    assert got["loss"] == at(METHODS, "ce_loss = self.loss_fn(")
    assert got["forward"] == at(METHODS, "logits = self.dist_model(")
    assert got["batch"] == at(METHODS, "for micro_batch in self.split_batch(batch)")
    assert got["backward"] == at(METHODS, "loss.backward()")


TASK = """\
import torch


class Task:
    def train_step(self, model, samples):
        output = model(samples)
        return output["loss"], {k: v for k, v in output.items() if "loss" in k}

    def inner_loop(self, model, data_loader, optimizer):
        for i in range(100):
            samples = next(data_loader)
            samples = prepare_sample(samples)
            if not isinstance(samples, dict):
                samples = {"is_empty": True}
            loss, loss_dict = self.train_step(model=model, samples=samples)
            loss.backward()
            optimizer.step()


Task().inner_loop(model, loader, opt)
"""


def test_a_loss_a_method_reads_off_the_model_output_is_the_loss_there_and_its_batch_is_no_literal(tmp_path):
    """LAVIS: `return output["loss"], ...` after `output = model(samples)`: the loss is the return, the forward the
    model call; the batch is where it is made, not the `{"is_empty": True}` that stands in for a bad one."""
    got = anchors(tmp_path, {"train.py": TASK})
    assert got["loss"] == at(TASK, 'return output["loss"]')
    assert got["forward"] == at(TASK, "output = model(samples)")
    assert got["batch"] == at(TASK, "samples = prepare_sample(samples)")


LIT = """\
import lightning as L
import torch


class Vocoder(L.LightningModule):
    def training_step(self, batch, batch_idx):
        audio = batch
        audio_hat = self.generator(audio)
        mel_loss = self.melspec_loss(audio_hat, audio)
        loss = mel_loss * self.coeff
        self.log("train/loss", loss)
        return {"loss": loss, "audio": audio_hat}
"""


def test_a_lightning_module_the_cli_config_names_has_its_loss_forward_and_batch_read_from_its_return(tmp_path):
    """vocos: `python train.py -c configs/vocos.yaml`, whose `model.class_path` names the LightningModule no code
    imports; its `training_step` returns `{"loss": loss}` and the framework runs the backward."""
    entry = "from lightning.pytorch.cli import LightningCLI\n\nif __name__ == '__main__':\n    LightningCLI()\n"
    root = make_repo(tmp_path / "job", {"train.py": entry, "vocoder/__init__.py": "", "vocoder/experiment.py": LIT,
                                        "configs/v.yaml": "model:\n  class_path: vocoder.experiment.Vocoder\n"})
    got = {x.role: f"{x.file}:{x.line}" for x in
           analyze_script(root / "train.py", root, ["fit", "-c", "configs/v.yaml"]).anchors}
    assert got["loss"] == "vocoder/experiment.py:" + at(LIT, "mel_loss = self.melspec_loss").split(":")[1]
    assert got["forward"] == "vocoder/experiment.py:" + at(LIT, "audio_hat = self.generator(audio)").split(":")[1]
    assert got["batch"] == "vocoder/experiment.py:" + at(LIT, "audio = batch").split(":")[1]
    assert "backward" not in got
    assert analyze_script(root / "train.py", root).anchors == []  # without the config, nothing names the module


SHARED = """\
import pytorch_lightning as pl


class Model(pl.LightningModule):
    def _shared_step(self, batch, batch_idx, prefix="train"):
        x, y, w = self.forward(batch)
        if prefix == "train":
            loss = self.loss(x, y, **w)
        else:
            loss = self.loss_val(x, y, **w)
        return loss

    def training_step(self, batch, batch_idx):
        loss = self._shared_step(batch, batch_idx, prefix="train")
        return loss
"""


def test_a_helper_branch_the_calls_own_argument_rules_out_is_not_the_loss(tmp_path):
    """s4: `_shared_step(batch, i, prefix="train")` computes the train loss in `if prefix == "train":`; its
    `else:` (the eval loss, written later) never runs from training_step."""
    got = anchors(tmp_path, {"train.py": SHARED})
    assert got["loss"] == at(SHARED, "loss = self.loss(x, y")
    assert got["forward"] == at(SHARED, "x, y, w = self.forward(batch)")


OPTIM_WRAPPER = """\
import torch


class Optimizer:
    def backward(self, loss):
        if self.amp:
            self._scaler.scale(loss).backward()
        else:
            loss.backward()

    def step(self):
        torch.nn.utils.clip_grad_norm_(self.params, self.max_grad_norm)
        self._optimizer.step()
"""
WRAPPED_TRAINER = """\
class Trainer:
    def train(self, batches):
        for batch in batches:
            out = self.model(batch["src"])
            loss = self.train_loss(batch, out)
            self.optim.backward(loss)
            self.optim.step()
"""


def test_an_optimizer_wrappers_backward_is_no_step_and_its_clip_is_the_steps(tmp_path):
    """OpenNMT-py: `Optimizer.backward(self, loss)` (read first) backpropagates a loss handed in from another
    module; the step is the trainer's `self.optim.backward(loss)`, and the clip in the wrapper's `step()` is its."""
    entry = "from optim import Optimizer\nfrom trainer import Trainer\nTrainer().train([])\n"
    got = anchors(tmp_path, {"train.py": entry, "optim.py": OPTIM_WRAPPER, "trainer.py": WRAPPED_TRAINER})
    assert got["loss"] == "trainer.py:5" and got["forward"] == "trainer.py:4" and got["backward"] == "trainer.py:6"
    assert got["optimizer_step"] == "trainer.py:7" and got["grad_clip"] == "optim.py:12"


SUMMED = """\
import torch

model = torch.nn.Linear(4, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def backprop(loss):
    loss.backward()


for step in range(10):
    x = torch.randn(2, 4)
    total = 0  # for backprop
    out = model(x)
    total += out.pow(2).mean()
    total += 0.1 * out.abs().mean()
    backprop(total)
    opt.step()
"""


def test_a_loss_summed_from_zero_is_checked_where_the_backward_gets_the_whole(tmp_path):
    got = anchors(tmp_path, {"train.py": SUMMED})
    assert got["loss"] == at(SUMMED, "    backprop(total)")  # not `total = 0`, nor one term of it
    assert got["backward"] == at(SUMMED, "loss.backward()")


REDUCED = """\
import torch

model = torch.nn.Linear(4, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = iter([torch.randn(2, 4) for _ in range(10)])
for step in range(10):
    inputs = next(loader)
    loss = model(inputs).sum() * 0.5
    loss.backward()
    opt.step()
"""


def test_the_batch_of_a_model_call_reduced_on_the_same_line_is_where_it_is_taken(tmp_path):
    got = anchors(tmp_path, {"train.py": REDUCED})
    assert got["forward"] == got["loss"] == at(REDUCED, "loss = model(inputs)")
    assert got["batch"] == at(REDUCED, "inputs = next(loader)")  # not the `.sum()` of the model's output


HANDED = """\
import torch


def update_policy(tracker, model, batch, optimizer):
    loss = model(batch).pow(2).mean()
    loss.backward()
    optimizer.step()
    return tracker


def train():
    policy = torch.nn.Linear(4, 4)
    optimizer = torch.optim.SGD(policy.parameters(), lr=0.1)
    dl_iter = iter([torch.randn(2, 4) for _ in range(10)])
    for step in range(10):
        batch = next(dl_iter)
        update_policy(None, policy, batch, optimizer)


train()
"""


def test_a_step_function_handed_its_batch_has_its_batch_row_where_the_caller_takes_it(tmp_path):
    got = anchors(tmp_path, {"train.py": HANDED})
    assert got["batch"] == at(HANDED, "batch = next(dl_iter)")
    assert got["forward"] == at(HANDED, "loss = model(batch)")


TOKEN_SCALED = """\
import torch


class Recipe:
    def _loss_step(self, batch):
        labels = batch.pop("labels")
        outputs = self._model(**batch)
        loss = self._loss_fn(outputs, labels)
        return loss

    def train(self):
        for batch in self._dataloader:
            current_num_tokens = (batch["labels"] != -100).sum()
            current_loss = self._loss_step(batch) * current_num_tokens
            current_loss.backward()
            self._optimizer.step()


if __name__ == "__main__":
    Recipe().train()
"""


def test_a_helpers_loss_scaled_by_a_count_computed_beside_it_is_the_helpers(tmp_path):
    """torchtune's `current_loss = self._loss_step(batch) * current_num_tokens`: the token count is computed
    too (`.sum()`), yet the loss is the helper's, traced inside it to the loss call and the model's forward."""
    got = anchors(tmp_path, {"train.py": TOKEN_SCALED})
    assert got["loss"] == at(TOKEN_SCALED, "loss = self._loss_fn(outputs, labels)")
    assert got["forward"] == at(TOKEN_SCALED, "outputs = self._model(**batch)")
    assert got["batch"] == at(TOKEN_SCALED, "for batch in self._dataloader:")


ALGORITHMS = """\
import torch
import torch.nn.functional as F


class ERM:
    def update(self, minibatches):
        loss = F.cross_entropy(self.network(minibatches[0]), minibatches[1])
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()


class IGA(ERM):
    def update(self, minibatches):
        total_loss = 0
        for x, y in minibatches:
            total_loss += F.cross_entropy(self.network(x), y)
        mean_loss = total_loss / len(minibatches)
        penalty = 0
        for p in self.network.parameters():
            penalty += p.pow(2).sum()
        objective = mean_loss + self.hparams["penalty"] * penalty
        self.optimizer.zero_grad()
        objective.backward()
        self.optimizer.step()
"""

REGISTRY_ENTRY = """\
import argparse
from pkg import algorithms

p = argparse.ArgumentParser()
p.add_argument("--algorithm", default="ERM")
args = p.parse_args()
algorithm = getattr(algorithms, args.algorithm)()
for step in range(100):
    algorithm.update(next(batches))
"""


@pytest.mark.parametrize(("command", "loss", "forward"), [
    ([], "loss = F.cross_entropy(self.network(minibatches[0]), minibatches[1])",
     "loss = F.cross_entropy(self.network(minibatches[0]), minibatches[1])"),
    (["--algorithm", "IGA"], 'objective = mean_loss + self.hparams["penalty"] * penalty',
     "total_loss += F.cross_entropy(self.network(x), y)")])
def test_the_class_the_command_names_holds_the_step_and_a_sum_of_terms_is_the_loss(tmp_path, command, loss, forward):
    """DomainBed's `--algorithm IGA`: the class the command names (`algorithms.IGA`) has its own `update`,
    the step, not the `ERM.update` above it. Its objective adds a penalty to the mean loss: a new loss, made
    where the sum is, not the penalty accumulated above it; its forward is followed back through the mean to
    the per-environment losses summed into it."""
    root = make_repo(tmp_path / "r", {"train.py": REGISTRY_ENTRY, "pkg/__init__.py": "",
                                      "pkg/algorithms.py": ALGORITHMS})
    a = analyze_script(root / "train.py", root, command)
    rows = {x.role: f"{x.file}:{x.line}" for x in a.anchors}
    assert rows["loss"] == at(ALGORITHMS, loss, "pkg/algorithms.py")
    assert rows["forward"] == at(ALGORITHMS, forward, "pkg/algorithms.py")


OWN_TRAINER = """from transformers import Trainer

class MyTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        loss = torch.nn.functional.cross_entropy(outputs.logits, labels)
        return (loss, outputs) if return_outputs else loss
"""
BUILDS = ("from transformers import HfArgumentParser, TrainingArguments\nfrom my_trainer import {cls}\n"
          "args, = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"
          "trainer = {cls}(model=model, args=args, train_dataset=data)\ntrainer.train()\n")


@pytest.mark.parametrize("cls", ["MyTrainer", "Trainer"])
def test_the_repos_own_trainers_compute_loss_holds_the_loss_and_forward_rows(tmp_path, cls):
    """A Trainer subclass of the repo that overrides `compute_loss` computes the loss there: its rows sit at that
    line and at the model's call, not at the library's log hook; the library's own Trainer keeps the hooks."""
    root = make_repo(tmp_path, {"train.py": BUILDS.format(cls=cls), "my_trainer.py": OWN_TRAINER})
    a = analyze_script(root / "train.py", root)
    at = {x.role: (x.file, x.line) for x in a.anchors}
    if cls == "MyTrainer":
        assert at["loss"] == ("my_trainer.py", 7) and at["forward"] == ("my_trainer.py", 6)
    else:
        assert at["loss"] == at["forward"] == ("train.py", 5)
    assert at["batch"] == ("train.py", 5)


def test_a_model_call_in_a_patch_module_read_first_is_not_the_trainers_forward(tmp_path):
    """FastChat's train_mem.py imports its flash-attention patch (whose own `test()` calls `attn.forward(...)`)
    before the module that builds the Trainer: the Trainer's loop runs the forward, so the rows are its hooks,
    at the `trainer.train()` that runs it; a `resume_from_checkpoint` branch keeps the plain call's line."""
    patch = ("import torch\n\ndef replace():\n    pass\n\ndef test():\n    out = model(torch.ones(2))\n\n"
             "if __name__ == '__main__':\n    test()\n")
    train = ("from transformers import Trainer, TrainingArguments\n\ndef train():\n"
             "    args = TrainingArguments(output_dir='out')\n    trainer = Trainer(model=model, args=args)\n"
             "    if resume:\n        trainer.train(resume_from_checkpoint=True)\n    else:\n        trainer.train()\n")
    entry = "from patch import replace\nreplace()\nfrom train import train\n\nif __name__ == '__main__':\n    train()\n"
    got = rows(tmp_path, {"train_mem.py": entry, "patch.py": patch, "train.py": train}, entry="train_mem.py")
    plain = at(train, "        trainer.train()")
    assert got["model outputs"].where.startswith(f"{plain} via a forward hook on the model")
    assert got["batch"].where.startswith(f"{plain} via the inputs Trainer.training_step gives")
    assert got["loss"].where.startswith(f"{plain} via TrainerCallback.on_log")
