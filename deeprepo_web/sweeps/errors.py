"""What sweep services raise for their callers (forms, tasks)."""

from __future__ import annotations


class SweepInputError(ValueError):
    """Bad input from the sweep form; `field` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
