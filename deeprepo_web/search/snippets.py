"""A short, escaped piece of text around the first match, with the match in <mark>.

Everything from the text is escaped; only our own <mark> tags are markup. Control characters,
ANSI/OSC escapes and bidi overrides are dropped so a snippet can neither restyle the page nor
reorder what a reader sees.
"""

from __future__ import annotations

import re

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from deeprepo_web.search.spec import SearchSpec

BEFORE, AFTER = 80, 200
_ESCAPES = re.compile(r"\x1b\][^\x07\x1b]*(\x07|\x1b\\)?|\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b.")
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_WORD = re.compile(r"[^\W_]+")


def plain(text: str) -> str:
    return _INVISIBLE.sub("", _ESCAPES.sub("", text))


def pattern_for(spec: SearchSpec) -> re.Pattern[str] | None:
    """The Python pattern that finds what the database matched (close enough to highlight).

    None for a regular expression: a user's pattern never runs in Python's backtracking engine (one
    like (a+)+$ would hang the worker); Postgres locates it instead (selectors._regex_spans)."""
    if not spec.q or spec.mode == "regex":
        return None
    if spec.mode == "substring":
        return re.compile(re.escape(spec.q), re.IGNORECASE)
    # Words: every word of the query that is not negated or an operator, as a whole word.
    terms = [t for part in re.findall(r'-?"[^"]*"|-?\S+', spec.q) if not part.startswith("-")
             for t in _WORD.findall(part) if t.lower() != "or"]
    if not terms:
        return None
    alternatives = "|".join(re.escape(t) for t in sorted(set(terms), key=len, reverse=True))
    return re.compile(rf"(?<![^\W_])(?:{alternatives})(?![^\W_])", re.IGNORECASE)


def find(text: str, pattern: re.Pattern[str] | None) -> re.Match[str] | None:
    if pattern is None:
        return None
    try:
        return pattern.search(text, 0, 100_000)
    except (RecursionError, OverflowError):
        return None


def snippet_text(text: str) -> str:
    """What a snippet is cut from (spans are positions in this)."""
    return plain(text[:100_000])


def snippet_html(text: str, pattern: re.Pattern[str] | None, span: tuple[int, int] | None = None) -> SafeString:
    """`text` from snippet_text; the match is `span` when given, else the pattern's matches."""
    if span is None:
        hit = find(text, pattern)
        span = (hit.start(), hit.end()) if hit is not None else None
    if span is None or span[1] <= span[0]:
        head = text[: BEFORE + AFTER]
        return mark_safe(escape(head) + ("…" if len(text) > len(head) else ""))  # noqa: S308 (escaped)
    start = max(0, span[0] - BEFORE)
    end = min(len(text), span[1] + AFTER)
    marks = [span] if pattern is None else [(m.start(), m.end()) for m in pattern.finditer(text, start, end)
                                             if m.end() > m.start()]
    pieces = ["…" if start else ""]
    pos = start
    for a, b in marks:
        pieces += [escape(text[pos:a]), "<mark>", escape(text[a:b]), "</mark>"]
        pos = b
    pieces += [escape(text[pos:end]), "…" if end < len(text) else ""]
    return mark_safe("".join(pieces))  # noqa: S308 (every piece of the text is escaped)
