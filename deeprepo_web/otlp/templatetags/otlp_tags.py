"""The OpenTelemetry section of the project's settings page (the settings view, in accounts, knows no
feature above it: the page's template asks this tag for the quiet period)."""

from __future__ import annotations

from django import template

from deeprepo_web.accounts.models import Project
from deeprepo_web.otlp.quiet import quiet_minutes

register = template.Library()


@register.simple_tag
def otlp_quiet_minutes(project: Project) -> int:
    return quiet_minutes(project)
