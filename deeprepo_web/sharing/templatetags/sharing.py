from __future__ import annotations

from typing import Any

from django import template

from deeprepo_web.accounts import access

register = template.Library()


@register.simple_tag(takes_context=True)
def share_allowed(context: Any, project: Any) -> bool:
    """Editors (and admins) may create share links; the share button shows only for them."""
    request = context.get("request")
    if request is None or project is None:
        return False
    return access.can_write(request.user, project)


@register.filter
def to_json(value: Any) -> str:
    """JSON text for a hidden form field (autoescaping still applies to the attribute)."""
    import json

    return json.dumps(value if value is not None else {}, separators=(",", ":"))
