"""Detection: plain functions, one module per subject, each returning a record; `run` runs them all.

Nothing here imports Textual or torch. The app runs them in a child process (`isolated`), so this package
imports nothing itself: the app's first paint needs only the names of the subjects.
"""

SUBJECTS = ("repo", "env", "hardware", "scripts", "tests", "recorder")  # the fields of `Detected`
