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
    """The Python pattern that finds what the database matched (close enough to highlight)."""
    if not spec.q:
        return None
    if spec.mode == "substring":
        return re.compile(re.escape(spec.q), re.IGNORECASE)
    if spec.mode == "regex":
        try:
            return re.compile(spec.q, re.IGNORECASE)
        except (re.error, RecursionError, OverflowError):
            return None  # Postgres's regex dialect is not Python's: show the start instead
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


def snippet_html(text: str, pattern: re.Pattern[str] | None) -> SafeString:
    text = plain(text[:100_000])
    hit = find(text, pattern)
    if hit is None or hit.end() == hit.start():
        head = text[: BEFORE + AFTER]
        return mark_safe(escape(head) + ("…" if len(text) > len(head) else ""))  # noqa: S308 (escaped)
    start = max(0, hit.start() - BEFORE)
    end = min(len(text), hit.end() + AFTER)
    pieces = ["…" if start else ""]
    pos = start
    assert pattern is not None
    for m in pattern.finditer(text, start, end):
        if m.end() == m.start():
            break
        pieces += [escape(text[pos:m.start()]), "<mark>", escape(m.group()), "</mark>"]
        pos = m.end()
    pieces += [escape(text[pos:end]), "…" if end < len(text) else ""]
    return mark_safe("".join(pieces))  # noqa: S308 (every piece of the text is escaped)
