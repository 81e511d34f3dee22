"""The reference for first paint and input latency: a hello-world Textual app with one Input."""

from textual.app import App
from textual.widgets import Input, Static


class Hello(App):
    def compose(self):
        yield Static("How well do you know ML systems?")
        yield Input(id="answer")


if __name__ == "__main__":
    Hello().run()
