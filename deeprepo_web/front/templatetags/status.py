"""`{% status_badge state %}` and `{% run_badge run %}`: the one status badge (front/badges.py)."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import SafeString

from deeprepo_web.front import badges

register = template.Library()


@register.simple_tag
def status_badge(state: Any, text: Any = "", element_id: str = "", title: Any = "") -> SafeString:
    return badges.status_badge(str(state), str(text), element_id=element_id, title=str(title))


@register.simple_tag
def run_badge(run: Any, element_id: str = "") -> SafeString:
    return badges.run_badge(run, element_id=element_id)
