"""The benchmark and the trial: the wrapper written beside the contract, the one run of the job the
user asks for, its probes and supervisor, and the claims checked against what it saw."""
