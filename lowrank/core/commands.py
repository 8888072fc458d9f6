"""The one dialect every command of the package speaks when it does not finish.

- An input error is one line on stderr, ``PROG: error: ...`` naming the input, its value and what
  is allowed, and exit status 2; argparse's own errors are held to it (:class:`OneLineParser`: no
  usage block, the usage is one ``--help`` away).
- Ctrl-C ends with one line and status 130; SIGTERM with one line and status 143 (SIGHUP 129):
  128 plus the signal's number, as a shell reports a process the signal ended.
  :func:`signals_interrupt` turns those signals into :class:`Interrupted`, a ``KeyboardInterrupt``, so
  the ``finally`` blocks and checkpoint logic that handle Ctrl-C handle them too.
- A failure no check foresaw is one line with its cause in words, status 1 (``--debug`` shows the
  traceback).
"""
from __future__ import annotations

import argparse
import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["OneLineParser", "Interrupted", "signals_interrupt", "interrupt_status", "interrupt_words", "one_line"]


class OneLineParser(argparse.ArgumentParser):
    """argparse, with a usage error in one line and status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


class Interrupted(KeyboardInterrupt):
    """A signal asked the command to stop; ``signum`` says which."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise(signum, frame):
    raise Interrupted(signum)


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP raise :class:`Interrupted` inside the block (only the main thread may set
    handlers; elsewhere the block runs with the handlers it had)."""
    wanted = [s for s in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None]
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {s: signal.signal(s, _raise) for s in wanted}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def interrupt_status(exc: BaseException) -> int:
    """130 for Ctrl-C, 128 + the signal's number for one :func:`signals_interrupt` caught."""
    return 128 + exc.signum if isinstance(exc, Interrupted) else 130


def interrupt_words(exc: BaseException) -> str:
    """``interrupted (Ctrl-C)`` or ``terminated by SIGTERM``: what ended the command, in words."""
    if isinstance(exc, Interrupted):
        try:
            name = signal.Signals(exc.signum).name
        except ValueError:
            name = f"signal {exc.signum}"
        return f"terminated by {name}"
    return "interrupted (Ctrl-C)"


def one_line(text: object, limit: int = 400) -> str:
    """``text`` on one line of at most ``limit`` characters: a message never spans lines or embeds
    an unbounded piece of user input."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."
