"""What checkpoint-rule services raise for their callers (the rule form)."""

from __future__ import annotations


class RuleInputError(ValueError):
    """Bad input for a rule; `field` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
