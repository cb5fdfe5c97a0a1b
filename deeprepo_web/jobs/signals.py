"""After `migrate`, the built-in job templates are created or refreshed: an upgrade that adds or
changes one brings it to every installation, with no page view needed."""

from __future__ import annotations

from typing import Any

from django.db import connections

from deeprepo_web.jobs.models import JobTemplate
from deeprepo_web.jobs.services.templates import builtin_templates_ensure


def builtin_templates_after_migrate(sender: Any, using: str = "default", **kwargs: Any) -> None:
    # `migrate jobs zero` (or to before the templates table) also ends with post_migrate: nothing to
    # ensure then. Anything else that fails (a built-in that does not validate) stops the migrate.
    if JobTemplate._meta.db_table not in connections[using].introspection.table_names():
        return
    builtin_templates_ensure()
