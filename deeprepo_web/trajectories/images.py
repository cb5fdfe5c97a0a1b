"""Images of a trajectory: `blob:<sha>` markers left by ingest (runs/ingest/images.py) become
thumbnails that open the full image from the project's blob view; message parts become text.

Model text never gets an <img> through the sanitizer: a marker is swapped for a placeholder holding
a per-render nonce before Markdown and nh3 run, and only those placeholders become images after.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any

from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from deeprepo_web.trajectories import richtext

_MARKER = re.compile(r"!\[(?P<alt>[^\]\n]{0,200})\]\(blob:(?P<sha>[0-9a-f]{64})\)")
# A body that was nothing but a data URL (a tool's screenshot) is stored as the bare blob URL.
_BARE = re.compile(r"\s*blob:(?P<sha>[0-9a-f]{64})\s*")


def thumbnail(slug: str, sha: str, alt: str = "image") -> SafeString:
    url = reverse("blob", args=[slug, sha])
    return format_html('<a class="thumb" href="{}" target="_blank" rel="noopener" title="open full size">'
                       '<img src="{}" alt="{}" loading="lazy"></a>', url, url, alt or "image")


def _with_images(text: str, slug: str, render: Any) -> SafeString:
    nonce = secrets.token_hex(8)
    found: list[tuple[str, str]] = []

    def hold(m: re.Match[str]) -> str:
        found.append((m.group("sha"), m.group("alt")))
        return f"drimg{nonce}n{len(found) - 1}z"

    html = str(render(_MARKER.sub(hold, text)))
    swap = re.compile(rf"drimg{nonce}n(\d+)z")
    return mark_safe(swap.sub(lambda m: thumbnail(slug, *found[int(m.group(1))]), html))  # noqa: S308


def markdown_images(text: str, slug: str | None) -> SafeString:
    """Sanitized Markdown of `text`, its blob images as thumbnails (when the project is known)."""
    bare = _BARE.fullmatch(text) if slug and text.startswith(("blob:", " ", "\n")) else None
    if bare and slug:
        return thumbnail(slug, bare.group("sha"))
    if not slug or "](blob:" not in text:
        return richtext.markdown_html(text)
    return _with_images(text, slug, richtext.markdown_html)


def plain_images(text: str, slug: str | None) -> SafeString:
    """Escaped plain text of `text`, its blob images as thumbnails."""
    bare = _BARE.fullmatch(text) if slug and text.startswith(("blob:", " ", "\n")) else None
    if bare and slug:
        return thumbnail(slug, bare.group("sha"))
    if not slug or "](blob:" not in text:
        return richtext.plain_html(text)
    return _with_images(text, slug, richtext.plain_html)


_ANY_BLOB = re.compile(r"blob:([0-9a-f]{64})")
MAX_THUMBS = 12


def value_thumbnails(value: Any, slug: str | None) -> SafeString:
    """Thumbnails of the blob images anywhere in a JSON value (tool arguments), at most MAX_THUMBS."""
    if not slug or value is None:
        return mark_safe("")
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if "blob:" not in text:
        return mark_safe("")
    shas = list(dict.fromkeys(_ANY_BLOB.findall(text)))[:MAX_THUMBS]
    return mark_safe("".join(thumbnail(slug, sha) for sha in shas))  # noqa: S308 - thumbnail escapes


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return json.dumps(part, default=str)
    kind = part.get("type")
    if kind in ("text", "input_text", "output_text") or (kind is None and "text" in part):
        return str(part.get("text") or "")
    if kind in ("image_url", "input_image", "image"):
        img = part.get("image_url", part.get("image", part.get("url")))
        url = img.get("url") if isinstance(img, dict) else img
        if isinstance(url, str) and url.startswith("blob:"):
            return f"![image]({url})"
        return "[image]" if not isinstance(url, str) or url.startswith("data:") else f"[image]({url})"
    return json.dumps(part, default=str, ensure_ascii=False)


def message_text(content: Any) -> str:
    """A message's content as Markdown: a string as is, a list of OpenAI-style parts joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else [content]
    return "\n\n".join(_part_text(p) for p in parts)
