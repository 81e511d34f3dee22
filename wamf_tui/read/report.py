"""Text form of an `Analysis`, for `wamf-tui analyze`."""

from __future__ import annotations

from ..model import Analysis


def describe(a: Analysis) -> list[str]:
    lines = [f"{a.script}: {a.kind}, config: {a.config_system}" + ("  (partial: text scan)" if a.partial else "")]
    for anchor in a.anchors:
        lines.append(f"  {anchor.role:<15}{anchor.file}:{anchor.line}")
    for kind in ("trackers", "checkpoints", "evals", "uploads", "output_dirs", "seeds"):
        for f in getattr(a, kind):
            off = f"  never reached: {f.dead}" if f.dead else f"  off: {f.off_switch}" if f.off_switch else ""
            lines.append(f"  {kind[:-1]:<15}{f.name} at {f.file}:{f.line}{off}")
    for s in a.step_controls:
        lines.append(f"  {'step control':<15}{s.name} = {s.default} at {s.file}:{s.line}")
    for note in a.notes:
        lines.append(f"  note: {note}")
    return lines
