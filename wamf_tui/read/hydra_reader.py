"""A Hydra app's config as the reader meets it: the `@hydra.main` function and its YAML, and each read of its
config (`cfg.trainer.max_steps`) as the override key that sets it. A mixin of `source.Reader`: it reads and
fills `self.r`."""

from __future__ import annotations

import ast
from pathlib import Path

from ..model import StepControl
from .lengths import length_role
from .options import dotted_name, literal_text
from .outputs import OUT_NAMES


class HydraReader:
    """The Hydra parts of a module; `source.Reader` sets up what these methods read and fill."""

    hydra_cfg: str | None  # the name of a @hydra.main function's config argument
    hydra_file: Path | None  # its YAML, relative to the script's folder
    hydra_version: str  # its `version_base`, as written
    hydra_line: int
    hydra_passes: set[str]  # shared by the job's modules: the functions its @hydra.main hands the config

    def hydra_main(self, tree: ast.Module) -> None:
        """A `@hydra.main` function, found before the visit: functions above it read its config too; so does a
        function of another module it hands the config to (`return train(config)`, `from src.train import
        train` in the entry), by its own name for it."""
        for node in tree.body:
            for d in node.decorator_list if isinstance(node, ast.FunctionDef) else []:
                if not dotted_name(d.func if isinstance(d, ast.Call) else d).endswith("hydra.main"):
                    continue
                self.r.config_system = "hydra"
                self.hydra_cfg = node.args.args[0].arg if node.args.args else None
                kw = {k.arg: (literal_text(k.value) or "None").strip("'\"")
                      for k in getattr(d, "keywords", []) if k.arg}
                path, conf = kw.get("config_path", "None"), kw.get("config_name", "None").removesuffix(".yaml")
                self.hydra_file = Path("." if path == "None" else path) / f"{conf}.yaml" if conf != "None" else None
                self.hydra_version = kw.get("version_base", "")  # "" when not given: Hydra's 1.1 behaviour
                self.hydra_line = node.lineno
                self.hydra_passes |= {dotted_name(c.func).split(".")[-1] for c in ast.walk(node) if isinstance(
                    c, ast.Call) and c.args and isinstance(c.args[0], ast.Name) and c.args[0].id == self.hydra_cfg}
        if self.hydra_cfg is None and self.r.config_system == "hydra":
            handed = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in self.hydra_passes
                      and n.args.args]
            self.hydra_cfg = handed[0].args.args[0].arg if handed else None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        """`cfg.trainer.max_steps` in a Hydra app: a step control overridden as `trainer.max_steps=N`."""
        if not self.hydra_cfg:
            self._walk_chain(node)
            return
        key = self.hydra_key(node)
        if key and not isinstance(node.ctx, ast.Store):
            last = key.split(".")[-1]
            if (role := length_role(key)) and all(c.name != key for c in self.r.step_controls):
                self.r.step_controls.append(StepControl(name=key, file=self.rel, line=node.lineno, role=role))
            elif OUT_NAMES.search(last) and all(o.name != key for o in self.r.output_dirs):
                self.fact("output_dirs", key, node, f"{key}=...")
            return
        self.generic_visit(node)

    def hydra_key(self, node: ast.AST) -> str | None:
        """The override key of a read of the Hydra config (`cfg.a.b`, `cfg.a.get("b")` -> `a.b`), else None."""
        if not self.hydra_cfg:
            return None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            base = self.hydra_key(node.func.value) if dotted_name(node.func.value) != self.hydra_cfg else ""
            return f"{base}.{node.args[0].value}".lstrip(".") if base is not None else None
        if not isinstance(node, ast.Attribute):
            return None
        dotted = dotted_name(node)
        if dotted.startswith(self.hydra_cfg + ".") and "(" not in dotted:
            return dotted[len(self.hydra_cfg) + 1:]
        return None
