"""Analysis: read the job script as source and propose its benchmark version. No Textual, no torch."""

from .source import analyze_script

__all__ = ["analyze_script"]
