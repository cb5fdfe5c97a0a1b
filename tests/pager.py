"""Reading the one pager (templates/front/_pager.html) in a page's HTML, as a reader follows it."""

from __future__ import annotations

import html as htmllib
import re


def pager_link(page: str, rel: str) -> str | None:
    """The href of the pager's "next" or "prev" link (unescaped), or None when the page has none."""
    found = re.search(rf'<a class="{rel}" rel="{rel}" href="([^"]+)"', page)
    return htmllib.unescape(found.group(1)) if found else None


def pager_text(page: str) -> str:
    """The pager's visible words, tags dropped ("" when the page shows no pager)."""
    found = re.search(r'<nav class="pager"[^>]*>(.*?)</nav>', page, re.S)
    return " ".join(re.sub(r"<[^>]+>", " ", found.group(1)).split()) if found else ""
