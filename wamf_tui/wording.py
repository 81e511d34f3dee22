"""Every sentence the user reads, in two registers.

`mlsys`: the technique and the number, no explanation.
`algo`: what it does to the training, in batches, steps, memory and loss; a
systems term is explained in parentheses the first time it appears (messages
are listed here in the order the flow shows them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .infra.visible import visible
from .model import InitState, Kind, Register


@dataclass(frozen=True)
class Message:
    mlsys: str
    algo: str
    help_mlsys: str = ""
    help_algo: str = ""


READER_OPTIONS = (
    "I am an MLSys engineer. I could do these optimizations myself, I would rather not spend the time.",
    "I am an algorithm engineer. I do not know systems, and I will not recognise most of your optimization techniques.",
)

# Terms an algorithm engineer may not know; the algo register explains each on first use.
GLOSSARY = (
    "worktree",
    "benchmark",
    "warm-up",
    "steady step",
    "recorder",
    "tolerance",
    "kernel",
    "NVML",
    "world size",
)


MESSAGES: dict[str, Message] = {
    # step 0
    "reader": Message(
        "How well do you know ML systems? Pick one, or say it in your words.",
        "How well do you know ML systems? Pick one, or say it in your words.",
        "Your answer sets how every later message and report is written. It goes into the contract's reader line as you wrote it.",
        "Your answer sets how every later message and report is written. It goes into the contract's reader line as you wrote it.",
    ),
    # step 1
    "repo": Message(
        "Repo and branch to optimize.",
        "The repository to speed up, and its branch.",
        "optimize branches a worktree from this commit; uncommitted changes stay behind.",
        "The optimizer works in a worktree (a second copy of the repo made from a commit), so your checkout stays untouched.",
    ),
    "not_git": Message(
        "{path} is not a git repo; optimize needs one for its worktree. Continue with this folder?",
        "{path} is not a git repository, which the optimizer needs for its own copy of the code. Continue with this folder anyway?",
        "Yes: the contract names this folder; the optimizer may still refuse it. No: run git init first.",
        "If you continue, the contract names this folder, but the optimizer may refuse to start. Running git init here first avoids that.",
    ),
    "dirty": Message(
        "Checkout is dirty ({summary}). optimize branches from HEAD, so these changes are not in its worktree.",
        "Your checkout has uncommitted changes ({summary}). The optimizer starts from the last commit, so it will not see them.",
        "Commit or stash in another pane and re-check, or continue from HEAD and leave them out.",
        "Commit or stash them in another pane, then re-check; or continue without them.",
    ),
    "dirty_recheck": Message("Re-check (I will commit or stash in another pane)", "Re-check (I will commit or stash them in another pane)"),
    "dirty_continue": Message("Continue from HEAD without them", "Continue from the last commit without them"),
    "activate": Message(
        "Command that enters the job's environment.",
        "The command that enters the Python environment your job runs in.",
        "Runs before every measured run, in a fresh shell.",
        "It is typed before each run, in a fresh terminal, exactly as you would.",
    ),
    "command": Message(
        "Command that runs the job today, from the repo root.",
        "The command you use to start your job today, typed from the repo folder.",
        "Found in the repo's docs, shell scripts and Makefiles; training scripts first. Type to write your own.",
        "I found these in your README and scripts, training jobs first. Type your own if none is right.",
    ),
    "command_unknown": Message(
        "No Python entry in that command, or its script is not in the repo: {found}.",
        "I could not find the Python script this command starts ({found}); please name it, for example python train.py.",
    ),
    "changes": Message(
        "Benchmark conversion: toggle rows, edit the step count, Enter confirms.",
        "To time the job many times, I run a benchmark (a short version of your job: same model and batch, fewer steps, nothing saved). Toggle rows, Enter confirms.",
        "Flags and env vars only; the script is never edited. Exclusions go into Anything else with their cost.",
        "Each row uses your script's own flag or an environment variable; your code is never edited.",
    ),
    "steps": Message(
        "Optimizer steps per benchmark run (warm-up + >=10 steady).{notes}",
        "How many training steps one timed run takes. The first ones are warm-up (slow start-up steps: compiling, loading data), then at least 10 steady steps (the normal speed you see mid-training).{notes}",
        "Type all to keep the whole job when it fits in about 8 minutes.",
        "Type all to run your whole job each time, if it finishes within about 8 minutes.",
    ),
    "steps_ended": Message(
        " The trial's job ended on its own after {steps} step(s), below the cap: {steps} says what runs.",
        " In the trial your job finished by itself after {steps} step(s), fewer than asked: {steps} is what really runs.",
    ),
    "steps_number": Message("A whole number of steps, or all.", "Please type a whole number of training steps, or all for the whole job."),
    "mode": Message(
        "Speed or accuracy mode?",
        "Should timed runs be as fast as possible, or give bit-for-bit identical results?",
        "Accuracy mode turns on deterministic algorithms (slower) so checks can be bit-exact; speed mode compares within tolerance.",
        "Identical results need slower, deterministic maths. Speed mode keeps the normal maths and compares numbers within a small margin instead.",
    ),
    "mode_speed": Message("speed: deterministic algorithms off, checks within tolerance",
                          "speed: normal maths, results compared within a small margin"),
    "mode_accuracy": Message("accuracy: deterministic algorithms on, bit-exact checks",
                             "accuracy: identical results every run, slower"),
    "run": Message(
        "Command that runs the job (the benchmark version).{notes} t: try it now.",
        "The command that runs the job: the short timed version.{notes} t: try it on this machine now (it asks first).",
        "Run from the repo root after activate. Keep model size, batch, sequence length, precision and world size.",
        "It must keep your model size, batch size, sequence length and number of GPUs, or the speed-up would not carry over.",
    ),
    "must_not_change": Message(
        "Held fixed by the accuracy check.",
        "What must stay the same so the results still mean the same thing.",
        "Listed settings are never changed to win speed: a change touching them is refused.",
        "The optimizer will not change anything listed here to gain speed, so a speed-up never comes from training a different model.",
    ),
    "node": Message(
        "Node to measure on; its GPUs must be idle.",
        "The machine to time the job on. Its GPUs must have no other job, or the timings are wrong.",
        "NVML process and utilisation readings, when available, back the proposal.",
        "I checked the GPUs with NVML (NVIDIA's monitoring library) where it was available.",
    ),
    "reading": Message(
        "Reading {script} ...",
        "Reading {script} to propose the short timed version ...",
        "The run line depends on what the script does; it comes when the reading is done.",
        "The next questions depend on what your script does; they come as soon as I have read it.",
    ),
    "toggles_dropped": Message(
        "The toggles you left this list with were dropped: its rows changed since.",
        "I could not keep the ticks you changed here before going back: the list changed since, so it shows "
        "my proposal again.",
    ),
    "paste_joined": Message("Pasted {lines} lines, joined into one.", "You pasted {lines} lines; I joined them into one line."),
    "run_missing": Message(
        "The job's parser requires {names}; add it to the command.",
        "Your script will not start without {names}; please add it to the command.",
    ),
    "run_left_out": Message(
        "{source} leaves {names} to you; add it with your value (without it the job runs on its default).",
        "{source} asks you to fill in {names}; please add it to the command with your value. Without it, your script would quietly use its own default and time a different job.",
    ),
    "run_dropped": Message(
        "Your own run line is dropped: the {what} changed, so the run line is proposed again from it.",
        "The run line you wrote is replaced: you changed the {what}, and the run line is built from it. Edit the new one at the run question.",
    ),
    "guarantees_problems": Message(
        "Found here: {problems}. Fix and re-scan, name the node the job runs on, or continue anyway?",
        "I found problems here: {problems}. Fix them and re-scan, name the machine the job runs on, or continue anyway?",
    ),
    "guarantee_recheck": Message("Re-scan (I fixed it in another pane)", "Re-scan (I fixed it in another pane)"),
    "guarantee_node": Message("Name the node where the job runs", "Name the machine where the job runs"),
    "guarantee_anyway": Message("Continue anyway (recorded in the contract)", "Continue anyway (the contract says so)"),
    "guarantees": Message(
        "You vouch that: {items}. Confirm?",
        "Please confirm, since I cannot run your job: {items}.",
        "Init runs the job only when you ask (t, a trial), so these are your word, recorded with the time.",
        "I only run your job when you ask for a trial (t), so these are your word. The contract records them with the time.",
    ),
    "guarantee_yes": Message("Yes, I confirm", "Yes, I confirm"),
    "guarantee_no": Message("No, let me fix something first", "No, let me fix something first"),
    # step 2
    "checks": Message(
        "Correctness checkpoints (space toggles, Enter accepts):",
        "The optimizer compares these numbers before and after each change, within a tolerance (how far they may drift). Space toggles, Enter accepts:",
        "Recorded on unmodified code and after each change; compared within tolerance.",
        "If a change moves these numbers by more than the tolerance, it is thrown away.",
    ),
    "extra_checks": Message(
        "What else should we check?{examples}",
        "What else should we check?{examples}",
        "Free text; leave empty if nothing.",
        "Anything your training computes that must not change. Leave empty if nothing.",
    ),
    "recorder": Message(
        "Recorder for the checkpoints.",
        "The recorder (the small tool that writes those numbers to a file during a run).",
        "Prefer one the repo has; else parity: PARITY=1 PARITY_OUT=records.jsonl, then parity compare.",
        "If your repo has one, it is used; otherwise the optimizer installs parity.",
    ),
    # step 3
    "allowed": Message(
        "Allowed changes (space toggles, Enter accepts):",
        "What may the optimizer change? Space toggles, Enter accepts:",
        "Kernels includes Triton and custom CUDA.",
        "A kernel (a small program that runs on the GPU) is the deepest level; leave it off if you would rather not review GPU code.",
    ),
    "own_tests": Message(
        "Command for your own test suite.",
        "The command that runs your own tests, so nothing else in the repo breaks.",
        "Run after each change; a change that fails it is dropped. Empty: none.",
        "The optimizer runs it after each change and throws away any change that makes it fail. Leave it empty if "
        "you have no tests.",
    ),
    "hands_off": Message(
        "Hands off: {pick}type paths or changes not allowed.",
        "Files or parts of the code it must not touch: {pick}type paths and changes you would not accept.",
        "Named paths are never edited; a change named here is never made.",
        "It will not edit anything you name here, nor make a change you describe here. Leave it empty if "
        "anything may change.",
    ),
    "memory_trade": Message(
        "Memory for speed: allowed, and how much?",
        "May it use more GPU memory to go faster? How much?",
        "A cap on peak GPU memory over today's (e.g. +20%); 'no more than today' forbids the trade.",
        "Some speed-ups keep more on the GPU. Say how much more memory is fine (for example +20%), or keep "
        "'no more than today'.",
    ),
    "when_to_stop": Message(
        "Stop target, and what then.",
        "When is it fast enough, and what should it do then?",
        "It stops at this gain and reports; empty: it runs while it finds gains.",
        "Once it reaches this speed-up it stops and reports back. Leave it empty and it keeps going while it "
        "finds gains.",
    ),
    "hints": Message(
        "Where does time go, as far as you know? (space toggles)",
        "Where does the time seem to go? (space toggles)",
        "A profile or a hunch: it measures first and uses this only to order what it tries.",
        "A guess is fine: it measures for itself and only uses this to decide what to look at first.",
    ),
    "anything_else": Message(
        "Anything else (data paths, required flags, owners).",
        "Anything else it should know: where data lives, flags it needs, who owns what.",
        "Free text, copied into the contract as written.",
        "Whatever you type is copied into the contract as you wrote it. Leave it empty if there is nothing.",
    ),
    # step 4
    "confirm": Message(
        "Read the contract preview. Does it describe the job (y writes it, n goes back)?",
        "Please read the contract preview. Does it describe the job you want sped up (y writes it, n goes back)?",
        "Enter or y writes it; n goes back to change an answer. F2 gives the preview most of the screen.",
        "Enter or y writes it; n goes back so you can change an answer. F2 gives the preview most of the screen, to read it whole.",
    ),
    "confirm_yes": Message("Yes, write it", "Yes, write it"),
    "confirm_no": Message("No, go back", "No, go back"),
    "writing": Message("Writing {path} …", "Writing {path} …", "Written whole or not at all; nothing else changes.",
                       "The file appears whole or not at all, and nothing else in your repo changes."),
    "overwrite": Message(
        "{path} exists; differences below. Overwrite (old kept as .bak)?",
        "{path} already exists; the differences are below. Replace it (the old one is kept as .bak)?",
        "The old file is kept beside it as .bak; Write somewhere else asks for another path.",
        "Nothing is lost: the old file is kept beside it with .bak added. Or pick Write it somewhere else to type another path.",
    ),
    "overwrite_yes": Message("Overwrite, keep a .bak", "Replace it, keep a .bak"),
    "overwrite_other": Message("Write somewhere else", "Write it somewhere else"),
    "path": Message("Path for the contract.", "Where should the contract go? Type a path.",
                    "Relative paths are from the repo; the file is written whole or not at all.",
                    "A path relative to the repo works. The file appears whole or not at all."),
    "write_failed": Message(
        "Cannot write {path}: {reason}. Answers kept; give another path.",
        "I could not write {path} ({reason}). Your answers are kept; type another path.",
    ),
    "done": Message(
        "Written: {path}. Next: {claude} (Claude Code) or {codex} (Codex); diagnose for one measured fix.",
        "Written: {path}. Next, start the optimizer with {claude} in Claude Code or {codex} in Codex; it runs on its own from there.",
        "c copies the command, p the contract's path; ctrl+q quits. Esc goes back to change an answer.",
        "Press c to copy the command that starts the optimizer, p to copy the contract's path, ctrl+q to quit. Esc "
        "goes back if you want to change an answer.",
    ),
    "done_keys": Message("c copies the Claude Code command, p the contract's path.",
                         "Press c to copy the Claude Code command, p to copy the contract's path."),
    "exclude_no": Message("Leave .git/info/exclude alone", "Leave git's ignore list alone"),
    "exclude_yes": Message("Add {files} to .git/info/exclude", "Hide {files} from git status (adds them to .git/info/exclude)"),
    "exclude_left": Message(".git/info/exclude left alone · ctrl+q quits.", "Git's ignore list is left alone · ctrl+q quits."),
    # refusals
    "tbd": Message("TBD is refused downstream; give the real value.",
                   "The next tool refuses TBD; please give the real value."),
    "placeholder": Message(
        "{found} reads as an unfilled placeholder downstream; write it without the angle brackets.",
        "{found} looks like a blank to fill in to the next tool; please write it without the angle brackets.",
    ),
    "empty": Message("Needs a value.", "This one needs an answer."),
}


# One line each, for a reader who does not know the category (algorithm register only).
ALLOWED_NOTES = {
    "system configs": "settings such as data-loader workers, environment variables, launch flags",
    "enabling existing acceleration features with small code edits": "e.g. mixed precision or torch.compile, already in PyTorch",
    "installing faster backends": "e.g. a faster attention or optimizer package",
    "changing Python-level workflow code": "how the training loop feeds and moves data, not the model's maths",
    "modifying Triton/CUDA kernels": "writing GPU code by hand: the deepest and riskiest level",
}


def say(key: str, register: Register, **fmt: object) -> str:
    msg = MESSAGES[key]
    text = msg.mlsys if register == "mlsys" else msg.algo
    return text.format(**fmt) if fmt else text


def explain(key: str, register: Register) -> str:
    msg = MESSAGES[key]
    text = msg.help_mlsys if register == "mlsys" else msg.help_algo
    return text or say(key, register)


_MLSYS = re.compile(
    r"mlsys|systems? engineer|could do|myself|cuda|kernel|triton|perf|hpc|infra|compiler|profil", re.I
)
_ALGO = re.compile(
    r"algorithm|research|scientist|new to|do not know|don't know|not recogni|no idea|beginner|modell?ing", re.I
)


def register_for(reader: str) -> Register:
    """The register nearer to the reader's own words; algorithm engineer when unsure."""
    m, a = len(_MLSYS.findall(reader)), len(_ALGO.findall(reader))
    return "mlsys" if m > a else "algo"


# the closing words and the keys, shared by the app and the non-interactive path
CLAUDE = "/who-ate-my-flops:optimize"
CODEX = "$who-ate-my-flops:optimize"


def done_message(state: InitState) -> str:
    return say("done", state.reader_register, path=visible(state.contract_path), claude=CLAUDE, codex=CODEX)


def done_lines(state: InitState) -> list[str]:
    return [done_message(state), f"  Claude Code: {CLAUDE}", f"  Codex:       {CODEX}",
            "  (or who-ate-my-flops:diagnose for one measured fix)"]


# how a copy went (`clipboard.Way`'s value): the user learns where to paste from, and can select the text here
COPIED = {
    "tmux": "Copied into tmux's paste buffer (prefix ] pastes it; with tmux's set-clipboard on, your"
            " terminal's clipboard has it too): {text}",
    "tmux-osc52": "tmux's buffer refused it; sent through tmux to your terminal's clipboard (OSC 52, which"
                  " needs tmux's allow-passthrough on). If nothing arrived, select it here: {text}",
    "osc52": "Sent to your terminal's clipboard (OSC 52). If nothing arrived, select it here: {text}",
}


KEYS = (
    ("Enter", "accept the proposal, or record what you typed"),
    ("1-9", "pick an option; in a checklist, toggle it (while the answer line is empty)"),
    ("space", "toggle a checklist row (while the answer line is empty)"),
    ("up / down", "move through the options"),
    ("shift+up / down", "scroll the question's text, where the pane is too small for all of it"),
    ("Tab / shift+Tab", "move focus between panes, to scroll them"),
    ("Esc", "one question back (your answers and toggles stay); from a step's first, the step before"),
    ("?", "explain the current question (while the answer line is empty)"),
    ("F1", "this list of keys"),
    ("F2", "the contract preview on most of the screen (again: back)"),
    ("ctrl+t", "switch wording: MLSys engineer / algorithm engineer"),
    ("ctrl+r", "re-run detection (after a commit or stash in another pane)"),
    ("ctrl+p", "command palette: jump to a step, copy, re-scan"),
    ("t", "at the run question and step 4: try the benchmark now (says what runs; a second key starts it)"),
    ("y / n", "step 4: write the contract / go back"),
    ("c / p", "after writing: copy the optimize command / the contract path (tmux's buffer, or OSC 52)"),
    ("ctrl+q", "quit; answers are saved and the next start offers to resume"),
)


# Each config system as a reader names it: the only place its name is a sentence.
SYSTEM_LABELS: dict[Kind, str] = {
    "unknown": "unknown", "constants": "constants in the code", "argparse": "argparse",
    "configurator": "configurator", "hf": "HfArgumentParser", "hf_trainer": "HfArgumentParser (TrainingArguments)",
    "fire": "fire", "hydra": "hydra", "omegaconf": "OmegaConf", "omegaconf_cli": "OmegaConf dot-list (from_cli)",
    "omegaconf_dotlist": "OmegaConf dot-list over a YAML file (its class's loader)",
    "omegaconf_loader": "OmegaConf dot-list over a YAML file (a function's loader)", "tyro": "tyro", "jsonargparse": "jsonargparse CLI",
    "lightning_cli": "LightningCLI", "click": "click", "typer": "typer", "absl": "absl",
    "yacs": "yacs (KEY VALUE opts)", "mmengine": "mmengine config (--cfg-options key=value)", "ml_collections": "absl with an ml_collections config",
    "simple_parsing": "simple_parsing", "configargparse": "configargparse", "argbind": "argbind",
    "draccus": "draccus",
}


def system_label(kind: Kind) -> str:
    return SYSTEM_LABELS[kind]
