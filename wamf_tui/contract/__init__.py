"""The contract: rendered from the session, checked against the downstream rules, written safely."""
