"""A short, escaped piece of text around the first match, with the match in <mark>.

Everything from the text is escaped; only our own <mark> tags are markup. Control characters,
ANSI/OSC escapes and bidi overrides are dropped so a snippet can neither restyle the page nor
reorder what a reader sees.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import re2
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from deeprepo_web.search.spec import SearchSpec

BEFORE, AFTER = 80, 200
_ESCAPES = re.compile(r"\x1b\][^\x07\x1b]*(\x07|\x1b\\)?|\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b.")
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
# Our own fixed patterns over the query's words (no user pattern ever runs in `re`).
_WORD = re.compile(r"[^\W_]+")
_PARTS = re.compile(r'-?"[^"]*"|-?\S+')


def plain(text: str) -> str:
    return _INVISIBLE.sub("", _ESCAPES.sub("", text))


class Pattern:
    """Where the database's match is in a text, found by RE2 (linear time, no backtracking): what a
    user typed never runs in Python's `re`. `words`: a hit must not touch a letter or digit on
    either side (the whole-word match of a text search)."""

    def __init__(self, expression: str, *, words: bool = False) -> None:
        options = re2.Options()
        options.case_sensitive = False
        self._re = re2.compile(expression, options)
        self._words = words

    def spans(self, text: str, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int]]:
        end = len(text) if end is None else end
        window = text[start:end]  # RE2's wrapper re-encodes the text it is given on every search
        pos = misses = 0
        while pos <= len(window) and misses < 200:  # a highlight, not a search: give up on a text of near-misses
            m = self._re.search(window, pos)
            if m is None:
                return
            a, b = m.span(1) if self._words else m.span()
            if b <= a or (self._words and not self._whole(text, start + a, start + b)):
                pos, misses = a + 1, misses + 1  # empty, or "need" in "needle": not a whole word
                continue
            yield start + a, start + b
            pos = b

    @staticmethod
    def _whole(text: str, a: int, b: int) -> bool:
        return not (a > 0 and text[a - 1].isalnum()) and not (b < len(text) and text[b].isalnum())

    def first(self, text: str) -> tuple[int, int] | None:
        return next(self.spans(text, 0, min(len(text), 100_000)), None)


def pattern_for(spec: SearchSpec) -> Pattern | None:
    """The pattern that finds what the database matched (close enough to highlight).

    None for a regular expression: Postgres, whose match it was, locates it (selectors._regex_spans)."""
    if not spec.q or spec.mode == "regex":
        return None
    if spec.mode == "substring":
        return Pattern(re2.escape(spec.q))
    # Words: every word of the query that is not negated or an operator, as a whole word.
    terms = [t for part in _PARTS.findall(spec.q) if not part.startswith("-")
             for t in _WORD.findall(part) if t.lower() != "or"]
    if not terms:
        return None
    alternatives = "|".join(re2.escape(t) for t in sorted(set(terms), key=len, reverse=True))
    return Pattern(rf"(?:^|[^\pL\pN])({alternatives})", words=True)


def find(text: str, pattern: Pattern | None) -> tuple[int, int] | None:
    return None if pattern is None else pattern.first(text)


def snippet_text(text: str) -> str:
    """What a snippet is cut from (spans are positions in this)."""
    return plain(text[:100_000])


def snippet_html(text: str, pattern: Pattern | None, span: tuple[int, int] | None = None) -> SafeString:
    """`text` from snippet_text; the match is `span` when given, else the pattern's matches."""
    if span is None:
        span = find(text, pattern)
    if span is None or span[1] <= span[0]:
        head = text[: BEFORE + AFTER]
        return mark_safe(escape(head) + ("…" if len(text) > len(head) else ""))  # noqa: S308 (escaped)
    start = max(0, span[0] - BEFORE)
    end = min(len(text), span[1] + AFTER)
    marks = [span] if pattern is None else list(pattern.spans(text, start, end))
    pieces = ["…" if start else ""]
    pos = start
    for a, b in marks:
        pieces += [escape(text[pos:a]), "<mark>", escape(text[a:b]), "</mark>"]
        pos = b
    pieces += [escape(text[pos:end]), "…" if end < len(text) else ""]
    return mark_safe("".join(pieces))  # noqa: S308 (every piece of the text is escaped)
