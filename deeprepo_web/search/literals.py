"""How long a run of letters and digits every match of a search must contain.

The trigram index (pg_trgm) narrows a substring or regex search only through such runs: pg_trgm
keeps letters and digits and splits on everything else. A pattern with no run of 3 (".*", "a.b",
"[0-9]+") gives it nothing, and Postgres reads every text of the project instead. spec_parse refuses
those unless a run or a step window bounds the work.

This reads a Postgres regular expression (ARE) the cheap, conservative way: anything it does not
understand ends a run, so it may call a pattern unindexable that pg_trgm could use, never the reverse.
It only reads the pattern; no text is ever matched here.
"""

from __future__ import annotations

import re

NEEDED = 3
_OPTIONS = re.compile(r"\(\?([bceimnpqstwx]+)\)")
_BOUND = re.compile(r"\{(\d+)(,\d*)?\}\??")


def substring_literal(text: str) -> int:
    """The longest run of letters or digits in a plain substring."""
    best = run = 0
    for ch in text:
        run = run + 1 if ch.isalnum() else 0
        best = max(best, run)
    return best


def regex_literal(pattern: str) -> int:
    """The longest run of letters or digits that every match of `pattern` holds (0 when none is sure)."""
    if pattern.startswith("***="):
        return substring_literal(pattern[4:])
    if pattern.startswith("***:"):
        pattern = pattern[4:]
    options = _OPTIONS.match(pattern)
    if options:
        if "q" in options.group(1):  # the rest is a literal string
            return substring_literal(pattern[options.end():])
        if "x" in options.group(1):  # expanded syntax: spaces and comments are not text; not read here
            return 0
        pattern = pattern[options.end():]
    return _Reader(pattern).alternatives()


class _Reader:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0

    def alternatives(self) -> int:
        """Branches up to a closing parenthesis: each must hold a run, so the weakest one counts."""
        weakest = self.sequence()
        while self.i < len(self.p) and self.p[self.i] == "|":
            self.i += 1
            weakest = min(weakest, self.sequence())
        return weakest

    def _quantifier(self) -> int | None:
        """The minimum count of a quantifier at the cursor (consumed), or None when there is none."""
        p, i = self.p, self.i
        if i >= len(p):
            return None
        if p[i] in "*?+":
            self.i += 2 if p[i + 1:i + 2] == "?" else 1
            return 1 if p[i] == "+" else 0
        bound = _BOUND.match(p, i)
        if bound:
            self.i = bound.end()
            return int(bound.group(1))
        return None

    def sequence(self) -> int:
        p = self.p
        best = run = 0
        while self.i < len(p) and p[self.i] not in "|)":
            ch = p[self.i]
            if ch == "(":
                self.i += 1
                look = p.startswith(("?=", "?!"), self.i) or p.startswith(("?<=", "?<!"), self.i)
                if p.startswith("?:", self.i):
                    self.i += 2
                elif look:
                    self.i += 3 if p[self.i + 1] == "<" else 2
                inner = self.alternatives()
                self.i += 1  # the ")"
                least = self._quantifier()
                best = max(best, run, 0 if look or least == 0 else inner)
                run = 0
                continue
            self.i += 1
            if ch == "[":
                self._skip_bracket()
            elif ch == "\\":
                self.i += 1  # an escape is a class, a constraint or punctuation: never a letter run here
            elif ch.isalnum():
                least = self._quantifier()
                if least is None:
                    run += 1
                    continue
                best = max(best, run + (1 if least >= 1 else 0))
                run = 0
                continue
            self._quantifier()  # on anything else: it ends the run, repeated or not
            best = max(best, run)
            run = 0
        return max(best, run)

    def _skip_bracket(self) -> None:
        p = self.p
        if p.startswith("^", self.i):
            self.i += 1
        if p.startswith("]", self.i):
            self.i += 1
        while self.i < len(p) and p[self.i] != "]":
            if p[self.i] == "[" and p[self.i + 1:self.i + 2] in (":", ".", "="):
                close = p.find(p[self.i + 1] + "]", self.i + 2)
                self.i = len(p) if close < 0 else close + 2
            elif p[self.i] == "\\":
                self.i += 2
            else:
                self.i += 1
        self.i += 1
