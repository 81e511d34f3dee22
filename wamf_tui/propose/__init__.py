"""Proposals: the benchmark's changes and run line, the answers' defaults, the run line held against
the code."""
