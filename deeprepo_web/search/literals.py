"""How much of a search's text every match must contain, as the trigram index can use it.

pg_trgm keeps letters and digits, splits on everything else, and pads a word whose edge it knows:
"abc" inside a literal gives it a trigram, so does "py" in "db.py:" (" py", "py "), but ".*", "a.b"
or "[0-9]+" give it nothing and Postgres reads every text of the project instead. spec_parse
refuses those unless a run or a step window bounds the work. A score of NEEDED (3) or more: usable.

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
    """The score of a literal text: its longest run of letters or digits, or NEEDED for a run of two
    with another character of the literal beside it (pg_trgm then knows that word edge)."""
    best = i = 0
    while i < len(text):
        if not text[i].isalnum():
            i += 1
            continue
        start = i
        while i < len(text) and text[i].isalnum():
            i += 1
        length = i - start
        edge = start > 0 or i < len(text)
        best = max(best, NEEDED if length == 2 and edge else length)
    return best


def regex_literal(pattern: str) -> int:
    """The score (substring_literal) of the best literal every match of `pattern` holds (0: none sure)."""
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
        best = 0
        run: list[str] = []  # the literal characters read since the last thing that was not one

        def cut() -> None:
            nonlocal best
            best = max(best, substring_literal("".join(run)))
            run.clear()

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
                cut()
                best = max(best, 0 if look or least == 0 else inner)
                continue
            self.i += 1
            literal = ch
            if ch == "[":
                self._skip_bracket()
                literal = ""
            elif ch == "\\":
                nxt = p[self.i:self.i + 1]
                self.i += 1
                literal = nxt if nxt and not nxt.isalnum() else ""  # \. is a dot; \d, \y, \m... are not text
            elif ch in ".^$*+?{":
                literal = ""
            if not literal:
                self._quantifier()
                cut()
                continue
            least = self._quantifier()
            if least is None:
                run.append(literal)
            else:  # "ab?c": the b may be missing, "ab+c": it is there once at least, the c maybe after more
                if least >= 1:
                    run.append(literal)
                cut()
        cut()
        return best

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
