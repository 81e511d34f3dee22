"""The app's thread work, each a function that runs off the event loop and posts one typed message
back (`messages`): it touches no widget and no app attribute. The app decides when each runs."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

from textual.message import Message

from ..contract import finish
from ..detect import SUBJECTS
from ..detect.isolated import ChildDetection, DetectionFailed
from ..model import InitState
from .messages import ContractWritten, DetectionStarted, FactsArrived


class Target(Protocol):
    def post_message(self, message: Message) -> bool: ...


Work = Callable[[], None]


class DaemonThreads(ThreadPoolExecutor):
    """The loop's executor for thread workers. asyncio waits for its default executor's threads
    when the app ends, so a call that hangs (the GPU refresh's NVML on a broken node) would hold
    the exit; these threads are daemons and nobody waits for them."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()

        def run() -> None:
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as e:
                    future.set_exception(e)

        threading.Thread(target=run, name="wamf-worker", daemon=True).start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        pass


def posting(target: Target, job: Callable[[], object], message: Callable[[Any], Message]) -> Work:
    """Run `job` and post its result (or the exception) as `message`."""
    def work() -> None:
        try:
            result = job()
        except Exception as e:  # a detector bug must not take the app down
            result = e
        target.post_message(message(result))

    return work


def detection(target: Target, root: str, run: int) -> Work:
    """Start the detection child (a fork, a temp file for its stderr: off the event loop) and post each
    subject's facts as they come, tagged with the `run` they answer."""
    def work() -> None:
        try:
            child = ChildDetection(root)
        except OSError as e:
            for subject in SUBJECTS:
                target.post_message(FactsArrived(subject, DetectionFailed(f"could not start: {e.strerror or e}"), run))
            return
        target.post_message(DetectionStarted(child, run))
        for subject, facts in child:
            target.post_message(FactsArrived(subject, facts, run))

    return work


def writing(target: Target, state: InitState, text: str, overwrite: bool) -> Work:
    """Write the contract (and the wrapper) so a slow or network home directory never holds a frame."""
    def work() -> None:
        result, error = finish.write(state, text, overwrite)
        target.post_message(ContractWritten(result, text, error))

    return work
