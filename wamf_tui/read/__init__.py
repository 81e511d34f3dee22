"""The job read from source only (never imported, never run): the crawl of the modules its entry reaches
(`source`), its settings per config system (`systems/`) and their resolved values, its training step, what
the capped steps reach, its launcher and precision. Each module judges one thing from the settings as the
job's parser resolves them, not from names alone.
"""
