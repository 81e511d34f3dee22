"""Which settings name the job's output folder, by name, for every config system alike."""

import ast
import re

# the job's output folder: a bare `ckpt`, `checkpoint` or `logging` is rather a switch or an input to resume
# from, and a named one (`logits_save_dir`, `initial_checkpoint_dir`) one artifact, given only to write it
OUT_NAMES = re.compile(r"^(out|output|save|root)_?(dir|path|root)?$|^work_?dir$|^(ckpt|checkpoint|log|logging|logs)_?"
                       r"(dir|path|root)$|^outf$")


def relative_folders(tree: ast.Module) -> dict[str, str]:
    """Module-level names assigned once to a path under a relative folder the code names by a literal
    (`log_dir = "log"`, `out_dir = Path("out") / name`, `os.path.join("logs", run)`): name -> that folder.
    The job writes there, in the folder it runs in, whatever its settings say."""
    counts: dict[str, int] = {}
    found: dict[str, str] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, ast.AnnAssign | ast.AugAssign) else []
        for t in targets:
            if isinstance(t, ast.Name):
                counts[t.id] = counts.get(t.id, 0) + 1
                if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None \
                        and (head := _literal_head(node.value)):
                    found[t.id] = head
    return {k: v for k, v in found.items() if counts[k] == 1}


def _literal_head(value: ast.expr) -> str | None:
    """The first folder of a path built from a relative literal: `"log"`, `Path("out") / x`,
    `os.path.join("logs", x)`; None for anything absolute or computed."""
    while isinstance(value, ast.BinOp) and isinstance(value.op, ast.Div):
        value = value.left
    if isinstance(value, ast.Constant):  # `log_dir = "log"`
        pass
    elif isinstance(value, ast.Call) and value.args and (
            isinstance(value.func, ast.Name) and value.func.id == "Path"
            or isinstance(value.func, ast.Attribute) and value.func.attr in ("Path", "join")):
        value = value.args[0]
    else:
        return None
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        head = value.value.removeprefix("./").split("/")[0]
        return head if head and not head.startswith(("/", "~", "$", ".")) else None
    return None
