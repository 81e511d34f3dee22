"""The Textual app: screens and widgets that draw the core's state; started only by the command line."""
