"""The labels panel of a trajectory page: its marks, and the form to add one (editors)."""

from __future__ import annotations

from typing import Any

from django import template

from deeprepo_web.accounts.access import can_write
from deeprepo_web.labels.models import Label
from deeprepo_web.labels.selectors import marks_for_rollouts

register = template.Library()


@register.inclusion_tag("labels/_rollout_marks.html", takes_context=True)
def rollout_marks(context: Any, rollout: Any, *, shared: bool = False) -> dict[str, Any]:
    project = rollout.run.project
    request = context.get("request")
    user = getattr(request, "user", None)
    writer = not shared and user is not None and can_write(user, project)
    return {
        "project": project, "rollout": rollout, "run": rollout.run, "shared": shared, "can_write": writer,
        "marks": marks_for_rollouts([rollout.pk]).get(rollout.pk, []),
        "labels": list(Label.objects.filter(project=project).order_by("name")) if writer else [],
        "csrf_token": context.get("csrf_token"),
    }


@register.filter
def text_colour(colour: str) -> str:
    """Black or white text, whichever reads on the label's colour."""
    try:
        r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    except (ValueError, IndexError):
        return "#000"
    return "#000" if (0.299 * r + 0.587 * g + 0.114 * b) > 150 else "#fff"


@register.filter
def marks_at(turn_marks: dict[int, list[Any]] | None, index: int) -> list[Any]:
    """The marks on turn `index`, from a view's {turn index: marks} (absent on pages without it)."""
    return (turn_marks or {}).get(index, [])
