"""wamf-tui: settle a PyTorch job for the who-ate-my-flops optimizer and write contract.md."""

__version__ = "0.1.0"
