"""A tiny but real PyTorch training job: a small MLP learning a noisy linear map.

Behind flags: a wandb tracker (--wandb) and a checkpoint written every
--save-every steps into --out-dir.
"""

import argparse
import os

import torch
from torch import nn


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out-dir", default="runs/demo")
    p.add_argument("--save-every", type=int, default=500)
    p.add_argument("--eval-every", type=int, default=200)
    p.add_argument("--wandb", action="store_true")
    return p.parse_args()


def batch(gen, n, w):
    x = torch.randn(n, 32, generator=gen)
    return x, x @ w + 0.01 * torch.randn(n, 8, generator=gen)


def main():
    args = get_args()
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    w = torch.randn(32, 8, generator=gen)
    model = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 8))
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps)
    loss_fn = nn.MSELoss()
    if args.wandb:
        import wandb

        wandb.init(project="wamf-demo", config=vars(args))
    os.makedirs(args.out_dir, exist_ok=True)
    for step in range(1, args.steps + 1):
        x, y = batch(gen, args.batch_size, w)
        out = model(x)
        loss = loss_fn(out, y)
        optimizer.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        if step % 50 == 0:
            print(f"step {step} loss {loss.item():.5f} grad_norm {grad_norm:.3f}")
            if args.wandb:
                wandb.log({"loss": loss.item(), "grad_norm": float(grad_norm)}, step=step)
        if step % args.eval_every == 0:
            with torch.no_grad():
                vx, vy = batch(gen, 256, w)
                print(f"step {step} val_loss {loss_fn(model(vx), vy).item():.5f}")
        if step % args.save_every == 0:
            torch.save(model.state_dict(), os.path.join(args.out_dir, f"step{step}.pt"))


if __name__ == "__main__":
    main()
