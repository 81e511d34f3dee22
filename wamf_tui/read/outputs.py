"""Which settings name the job's output folder, by name, for every config system alike."""

import re

# the job's output folder: a bare `ckpt`, `checkpoint` or `logging` is rather a switch or an input to resume
# from, and a named one (`logits_save_dir`, `initial_checkpoint_dir`) one artifact, given only to write it
OUT_NAMES = re.compile(r"^(out|output|save|root)_?(dir|path|root)?$|^work_?dir$|^(ckpt|checkpoint|log|logging|logs)_?"
                       r"(dir|path|root)$|^outf$")
