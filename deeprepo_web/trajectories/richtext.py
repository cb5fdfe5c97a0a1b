"""Turning hostile model text into safe HTML: Markdown (sanitized), code, diffs, ANSI, invisible characters.

Everything here returns `SafeString` only after the text went through `html.escape` or nh3 with
a strict allowlist. Raw HTML inside model output is shown as text (the researcher wants to see
that the model wrote `<script>`), and nh3 runs afterwards anyway as a second wall.
"""

from __future__ import annotations

import html
import json
import re
import threading
from functools import lru_cache
from typing import Any

import markdown
import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown.extensions import Extension
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.token import STANDARD_TYPES
from pygments.util import ClassNotFound

# Markdown is for prose; past this size a body is shown as plain text (fast, and nobody reads 1 MB of prose).
MARKDOWN_MAX_CHARS = 100_000
# Outputs past either bound start collapsed behind "show all".
COLLAPSE_CHARS = 2_000
COLLAPSE_LINES = 40

_HL_CLASSES = {c for c in STANDARD_TYPES.values() if c}
_ALLOWED_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "b", "i", "del", "code", "pre",
    "blockquote", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "a", "span", "div", "sup", "sub",
}
_ALLOWED_ATTRS = {"a": {"href", "title"}, "th": {"align"}, "td": {"align"}, "ol": {"start"}}
_ALLOWED_CLASSES = {"span": _HL_CLASSES | {"ctl"}, "div": {"hl"}, "code": {"hl"}, "pre": {"hl"}}

# Bidi overrides/isolates reorder what follows them (Trojan Source); zero-width characters hide text.
# Both are replaced by a visible marker so a reader sees exactly what the model produced.
_INVISIBLE = re.compile("[\u202a-\u202e\u2066-\u2069\u200b\u200c\u2060\ufeff\u061c]")
# Control characters other than tab / newline (ANSI sequences are handled before this).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ANSI_SGR = re.compile(r"\x1b\[([0-9;]{0,40})m")
# CSI (other than SGR), OSC (title, hyperlinks) and two-character escapes: dropped.
_ANSI_OTHER = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-ln-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")


def _marker(match: re.Match[str]) -> str:
    return f"\u27e6U+{ord(match.group(0)):04X}\u27e7"


def reveal(text: str) -> str:
    """Plain text with invisible/bidi characters shown as ⟦U+XXXX⟧ and control characters removed."""
    text = _INVISIBLE.sub(_marker, text)
    return _CONTROL.sub("", text)


def _escape_plain(text: str) -> str:
    escaped = html.escape(text, quote=False)
    return _INVISIBLE.sub(lambda m: f'<span class="ctl">{_marker(m)}</span>', escaped)


def _sgr_classes(params: str, state: set[str]) -> set[str]:
    codes = [int(p) for p in params.split(";") if p.isdigit()] or [0]
    for code in codes:
        if code == 0:
            state = set()
        elif code == 1:
            state = state | {"ansi-b"}
        elif code == 22:
            state = state - {"ansi-b"}
        elif 30 <= code <= 37 or 90 <= code <= 97:
            state = {c for c in state if not c.startswith("ansi-f")} | {f"ansi-f{code % 10 + (8 if code >= 90 else 0)}"}
        elif code == 39:
            state = {c for c in state if not c.startswith("ansi-f")}
    return state


def plain_html(text: str) -> SafeString:
    """Escaped text for a <pre>: ANSI colours become classed spans, other escapes are dropped."""
    text = _ANSI_OTHER.sub("", text.replace("\r\n", "\n"))
    if "\x1b[" not in text:
        return mark_safe(_escape_plain(_CONTROL.sub("", text)))  # noqa: S308 - escaped just above
    out: list[str] = []
    state: set[str] = set()
    pos = 0
    for m in _ANSI_SGR.finditer(text):
        chunk = _CONTROL.sub("", text[pos : m.start()])
        if chunk:
            out.append(_wrap(chunk, state))
        state = _sgr_classes(m.group(1), state)
        pos = m.end()
    tail = _CONTROL.sub("", text[pos:].replace("\x1b", ""))
    if tail:
        out.append(_wrap(tail, state))
    return mark_safe("".join(out))  # noqa: S308 - every chunk went through _escape_plain


def _wrap(chunk: str, state: set[str]) -> str:
    body = _escape_plain(chunk)
    return f'<span class="{" ".join(sorted(state))}">{body}</span>' if state else body


class _NoRawHtml(Extension):
    """Raw HTML in model output is text, not markup."""

    def extendMarkdown(self, md: markdown.Markdown) -> None:  # noqa: N802 - the library's name
        md.preprocessors.deregister("html_block")
        md.inlinePatterns.deregister("html")
        md.inlinePatterns.deregister("entity")


def _md() -> markdown.Markdown:
    return markdown.Markdown(
        extensions=[
            "fenced_code", "tables", "sane_lists", "codehilite", _NoRawHtml(),
        ],
        extension_configs={"codehilite": {"css_class": "hl", "guess_lang": False, "use_pygments": True}},
        output_format="html",
    )


# A Markdown converter keeps the state of the text it is converting, so threads must not share one:
# with one converter per process, two pages rendered at once by threads of a web worker got each
# other's paragraphs (another user's trajectory text in your page). One per thread, made on first use.
_THREAD = threading.local()


def _converter() -> markdown.Markdown:
    md: markdown.Markdown | None = getattr(_THREAD, "md", None)
    if md is None:
        md = _THREAD.md = _md()
    return md


def _clean(fragment: str) -> str:
    return nh3.clean(
        fragment,
        tags=_ALLOWED_TAGS,
        attributes=_ALLOWED_ATTRS,
        allowed_classes=_ALLOWED_CLASSES,
        url_schemes={"http", "https"},
        link_rel="noopener nofollow noreferrer",
        strip_comments=True,
    )


def markdown_html(text: str) -> SafeString:
    """Markdown -> HTML through the nh3 allowlist; long bodies fall back to escaped plain text."""
    if not text:
        return mark_safe("")
    if len(text) > MARKDOWN_MAX_CHARS:
        return mark_safe(f'<pre class="plain">{plain_html(text)}</pre>')  # noqa: S308 - plain_html escapes
    text = reveal(_ANSI_OTHER.sub("", _ANSI_SGR.sub("", text)))
    md = _converter()
    md.reset()
    rendered = md.convert(text)
    return mark_safe(_clean(rendered))  # noqa: S308 - sanitized by nh3 with a strict allowlist


@lru_cache(maxsize=64)
def _lexer(language: str) -> Any:
    try:
        return get_lexer_by_name(language)
    except ClassNotFound:
        return None


_FORMATTER = HtmlFormatter(nowrap=True)


def code_html(code: str, language: str = "python") -> SafeString:
    """Highlighted code (Pygments spans, escaped by Pygments), or escaped text for unknown languages."""
    lexer = _lexer(language)
    if lexer is None or len(code) > MARKDOWN_MAX_CHARS:
        return plain_html(code)
    return mark_safe(_clean(f'<span>{highlight(reveal(code), lexer, _FORMATTER)}</span>'))  # noqa: S308


def looks_like_patch(text: str) -> bool:
    head = text[:5000]
    return head.startswith("diff --git") or (
        bool(re.search(r"^--- ", head, re.M)) and bool(re.search(r"^\+\+\+ ", head, re.M))
        and bool(re.search(r"^@@ ", head, re.M))
    )


def diff_html(text: str) -> SafeString:
    """A unified diff with one classed span per line (+ added, - removed, @@ hunk, file headers)."""
    lines = []
    # CRLF patches (files with Windows line endings): the CR would be a second line break in a <pre>.
    body = text.replace("\r\n", "\n")
    for line in (body[:-1] if body.endswith("\n") else body).split("\n"):  # a final newline ends, not adds, a line
        if line.startswith(("+++", "---", "diff --git", "index ")):
            cls = "d-file"
        elif line.startswith("@@"):
            cls = "d-hunk"
        elif line.startswith("+"):
            cls = "d-add"
        elif line.startswith("-"):
            cls = "d-del"
        else:
            cls = "d-ctx"
        lines.append(f'<span class="{cls}">{plain_html(line)}</span>')
    # The spans are blocks: a newline between them would be one more (empty) line in the <pre>.
    return mark_safe("".join(lines))  # noqa: S308 - each line escaped by plain_html


def pretty_json(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def is_long(text: str) -> bool:
    return len(text) > COLLAPSE_CHARS or text.count("\n") >= COLLAPSE_LINES


# Argument names whose string value is a program or prose: shown as such rather than as a JSON string.
_CODE_ARGS = {"code": "python", "source": "python", "python": "python", "command": "bash", "cmd": "bash",
              "script": "bash", "bash": "bash", "sql": "sql", "query": "sql", "patch": "diff",
              "prompt": "text", "text": "text", "message": "text", "question": "text", "content": "text"}


def arguments_parts(arguments: Any) -> tuple[str, str, str, str]:
    """(json of the other arguments, the pulled-out code or prose, its language, its argument name)."""
    if isinstance(arguments, dict):
        for name, language in _CODE_ARGS.items():
            value = arguments.get(name)
            if isinstance(value, str) and ("\n" in value or language not in ("sql",)):
                rest = {k: v for k, v in arguments.items() if k != name}
                return (pretty_json(rest) if rest else "", value, language, name)
    if arguments is None or arguments == {}:
        return "", "", "", ""
    return pretty_json(arguments), "", "", ""


def clean_line(text: str) -> str:
    """Short model text for labels and titles (keys, names, stop conditions): no escapes, visible
    invisibles. Still plain text: the template escapes it."""
    return reveal(_ANSI_OTHER.sub("", _ANSI_SGR.sub("", text)).replace("\x1b", ""))
