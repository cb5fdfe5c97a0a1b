"""What a logged-out reader of a shared report may follow.

A report's text links to the project's own pages (the draft's "Data sources" links each run page);
a reader of a share link cannot open those (they are 404 without a login), so on the shared page
such a link becomes plain text, with the id it named. A link to another share (`/s/<token>`) and
links to other sites stay. Existing shares cannot be linked instead: only a token's hash is kept.
"""

from __future__ import annotations

import html
import re
from urllib.parse import unquote, urlsplit

from django.urls import Resolver404, resolve
from django.utils.safestring import SafeString, mark_safe

# nh3 wrote the fragment: every attribute is double-quoted and escaped, and links never nest.
_LINK = re.compile(r'<a\b([^>]*)>(.*?)</a>', re.S)
_HREF = re.compile(r'\shref="([^"]*)"')
_TAGS = re.compile(r"<[^>]+>")
# The URL arguments that name something a reader can tell apart (the project slug is not one),
# in the order the paths nest them.
_ID_KWARGS = ("run_id", "rollout_id", "example_id", "rid", "job_id", "judge_id", "artifact_id")


def _own_path(href: str, host: str) -> str | None:
    """The path of a link to this site, or None for another site's link and for anchors."""
    parts = urlsplit(html.unescape(href))
    if parts.scheme or parts.netloc:
        return parts.path or "/" if parts.netloc.lower() == host.lower() and host else None
    return parts.path if parts.path.startswith("/") else None


def _named_id(path: str) -> str:
    try:
        match = resolve(unquote(path))
    except Resolver404:
        return ""
    named = [str(v) for k, v in match.kwargs.items() if k in _ID_KWARGS and v]
    return named[-1] if named else ""  # the most specific: a rollout's id, not its run's


def _unlinked(m: re.Match[str], host: str) -> str:
    href = _HREF.search(m.group(1))
    path = _own_path(href.group(1), host) if href else None
    if path is None or path.startswith("/s/"):
        return m.group(0)
    inner = m.group(2)
    ident = _named_id(path)
    if ident and ident not in html.unescape(_TAGS.sub("", inner)):
        inner += f" ({html.escape(ident)})"
    return f'<span class="unlinked" title="a page of the project, not part of this share">{inner}</span>'


def reader_html(fragment: SafeString, *, host: str) -> SafeString:
    """Sanitized report HTML with the links into the project turned into text (their id kept)."""
    return mark_safe(_LINK.sub(lambda m: _unlinked(m, host), str(fragment)))  # noqa: S308 - parts of nh3's output
