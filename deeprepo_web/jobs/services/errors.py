"""What job services raise for their callers (forms, API, tasks)."""

from __future__ import annotations


class JobInputError(ValueError):
    """Bad input from a form or API call; `field` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class JobStateError(ValueError):
    """The job is not in a state that allows the action."""


class DispatchRetry(Exception):
    """A transient cluster error: the task should try again in `countdown` seconds."""

    def __init__(self, message: str, countdown: float) -> None:
        super().__init__(message)
        self.countdown = countdown
