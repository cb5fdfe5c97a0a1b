"""Filters for rollouts, groups and trajectories. Model text only reaches HTML through richtext."""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import urlencode

from django import template
from django.utils.safestring import SafeString

from deeprepo_web.trajectories import images, richtext

register = template.Library()

# Every page says which count it shows: a rollout's `num_turns` counts the model's turns (as the source
# recorded it, else its assistant messages, like vf-eval's num_turns); a trajectory lists all its turns
# (user, assistant and tool messages), numbered "turn 1..N".
MODEL_TURNS_HELP = "turns taken by the model (assistant messages); the trajectory lists all turns, tool and user ones too"


@register.simple_tag
def model_turns_help() -> str:
    return MODEL_TURNS_HELP


@register.filter
def md(text: str | None, slug: str | None = None) -> SafeString:
    """Sanitized Markdown; with the project's slug, its blob images become thumbnails."""
    return images.markdown_images(text or "", slug)


@register.filter
def plain(text: str | None, slug: str | None = None) -> SafeString:
    return images.plain_images(text or "", slug)


@register.filter
def thumbs(value: Any, slug: str | None = None) -> SafeString:
    """Thumbnails of the images (blob URLs) inside a JSON value such as a tool call's arguments."""
    return images.value_thumbnails(value, slug)


@register.filter
def message_text(content: Any) -> str:
    """A prompt message's content (a string, or a list of text and image parts) as Markdown."""
    return images.message_text(content)


@register.filter
def answer(text: str | None) -> SafeString:
    """A final answer / oracle: a patch is shown as a diff, anything else as Markdown."""
    text = text or ""
    if richtext.looks_like_patch(text):
        return SafeString(f'<pre class="diff">{richtext.diff_html(text)}</pre>')
    return richtext.markdown_html(text)


@register.filter
def is_patch(text: str | None) -> bool:
    return richtext.looks_like_patch(text or "")


@register.filter
def is_long(text: str | None) -> bool:
    return richtext.is_long(text or "")


@register.filter
def line_count(text: str | None) -> int:
    return (text or "").count("\n") + 1 if text else 0


@register.filter
def argparts(arguments: Any) -> dict[str, Any]:
    rest, code, language, name = richtext.arguments_parts(arguments)
    rendered: SafeString | str
    if language == "diff" and code:
        rendered = richtext.diff_html(code)
    elif language == "text" and code:
        rendered = richtext.plain_html(code)
    else:
        rendered = richtext.code_html(code, language) if code else ""
    return {"json": rest, "code": rendered, "language": language, "name": name, "long": richtext.is_long(code),
            "lines": code.count("\n") + 1}


@register.filter
def prettyjson(value: Any) -> str:
    return richtext.pretty_json(value)


@register.filter
def num(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return _no_negative_zero(f"{value:.{digits}f}")


@register.filter
def signed(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    text = f"{value:+.2f}"
    return "0.00" if float(text) == 0 else text  # -0.004 is no sign at this precision, nor is +0.001


def _no_negative_zero(text: str) -> str:
    """'-0.000' (a tiny negative rounded away) reads as a sign that is not there."""
    return text[1:] if text.startswith("-") and float(text) == 0 else text


@register.filter
def tokens(value: int | None) -> str:
    if value is None:
        return "—"
    if value >= 10_000_000:
        return f"{value / 1e6:.0f}M"
    if value >= 1_000_000:
        return f"{value / 1e6:.1f}M"
    if value >= 10_000:
        return f"{value / 1e3:.0f}k"
    if value >= 1_000:
        return f"{value / 1e3:.1f}k"
    return str(value)


@register.filter
def usd(value: float | None) -> str:
    if value is None:
        return "—"
    if value == 0:
        return "$0"
    if value < 0.01:
        return f"${value:.5f}"
    return f"${value:.3f}" if value < 10 else f"${value:,.2f}"


@register.filter
def seconds(value: float | None) -> str:
    if value is None:
        return "—"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 120:
        return f"{value:.1f} s"
    return f"{value / 60:.1f} min"


@register.filter
def size(value: int | None) -> str:
    value = value or 0
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024  # type: ignore[assignment]
    return ""


@register.filter
def reward_hue(value: float | None) -> str:
    """Inline style for a reward chip: red (<= 0) to green (>= 1); grey when unknown."""
    if value is None or not math.isfinite(value):
        return "background:#eceef2;color:#666"
    t = max(0.0, min(1.0, value))
    hue = round(t * 130)
    return f"background:hsl({hue} 70% 90%);color:hsl({hue} 70% 25%);border-color:hsl({hue} 55% 70%)"


@register.filter
def bar_width(value: float | None, span: str = "0,1") -> int:
    """Percent width of an inline reward bar within [lo, hi] (clamped)."""
    if value is None or not math.isfinite(value):
        return 0
    lo, hi = (float(x) for x in span.split(","))
    if hi <= lo:
        return 0
    return round(max(0.0, min(1.0, (value - lo) / (hi - lo))) * 100)


@register.simple_tag(takes_context=True)
def query(context: Any, **changes: Any) -> str:
    """The current query string with some parameters changed (None/"" removes them); always starts with '?'."""
    params = context["request"].GET.copy()
    for key, value in changes.items():
        if value is None or value == "":
            params.pop(key, None)
        else:
            params[key] = value
    params.pop("partial", None)
    return "?" + urlencode(sorted((k, v) for k, vs in params.lists() for v in vs))


@register.filter
def next_sort(current: str, key: str) -> str:
    """Clicking a sorted column header: descending first, then ascending."""
    return key if current == f"-{key}" else f"-{key}"


@register.filter
def is_messages(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(m, dict) for m in value)


@register.filter
def clean(text: Any) -> str:
    return richtext.clean_line("" if text is None else str(text))
