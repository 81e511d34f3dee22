"""A session between runs: where it is saved, the lock that keeps one live instance per repo, resume,
and the answers file."""
