"""The retention section of the project's settings page (the settings view, in accounts, knows no
feature above it: the page's template asks this tag for the policy)."""

from __future__ import annotations

from django import template

from deeprepo_web.accounts.models import Project
from deeprepo_web.retention.models import RetentionPolicy

register = template.Library()


@register.simple_tag
def retention_policy(project: Project) -> RetentionPolicy | None:
    return RetentionPolicy.objects.filter(project=project).first()
