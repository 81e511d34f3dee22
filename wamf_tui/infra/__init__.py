"""Small helpers every room uses: bounded file reads, child processes, terminal-safe text, the
clipboard, git run safely, isolation."""
