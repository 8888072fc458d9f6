"""How a run of a chapter ends when it does not finish: the exceptions and their exit statuses."""
from __future__ import annotations

from pathlib import Path

__all__ = ["RunError", "UsageError", "OutdirLocked", "ExecutionFailed"]


class RunError(Exception):
    """A run that cannot start or did not finish; ``status`` is the command's exit status."""

    status = 1


class UsageError(RunError):
    """Refused before any kernel started: nothing was executed or written."""

    status = 2


class OutdirLocked(UsageError):
    """Another live run holds the output folder's lock."""


class ExecutionFailed(RunError):
    """A cell failed, the kernel died or the book did not render."""

    def __init__(self, message: str, *, status: int = 1, partial: Path | None = None,
                 traceback: str = ""):
        super().__init__(message)
        self.status = status
        self.partial = partial
        self.traceback = traceback
