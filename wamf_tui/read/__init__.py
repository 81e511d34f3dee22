"""The job model, read from source only (never imported, never run).

This room grows as the older reader in `analyze/` is taken apart into it: each module here judges one
thing from the job's settings as its parser resolves them, not from names alone.
"""
