"""Built-in job templates come with `migrate`: created on a fresh database, brought up to date by an
upgrade (a new or changed built-in), never written by a page view."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command

from deeprepo_web.jobs.builtin import BUILTIN_TEMPLATES
from deeprepo_web.jobs.models import JobTemplate

pytestmark = pytest.mark.django_db

SLUGS = sorted(spec["slug"] for spec in BUILTIN_TEMPLATES)


def _builtins() -> dict[str, JobTemplate]:
    return {t.slug: t for t in JobTemplate.objects.filter(project__isnull=True, builtin=True)}


def test_the_migrated_database_has_every_builtin() -> None:
    # The test database was made by `migrate`; nothing else ran.
    assert sorted(_builtins()) == SLUGS


def test_migrate_after_an_upgrade_adds_the_new_builtin_and_refreshes_a_changed_one() -> None:
    # The database as an older release left it: one built-in missing, one with an old command.
    first, second = SLUGS[0], SLUGS[1]
    JobTemplate.objects.filter(project__isnull=True, slug=first).delete()
    JobTemplate.objects.filter(project__isnull=True, slug=second).update(command_template="echo old {steps}")

    call_command("migrate", verbosity=0)

    builtins = _builtins()
    assert sorted(builtins) == SLUGS
    spec = next(s for s in BUILTIN_TEMPLATES if s["slug"] == second)
    assert builtins[second].command_template == spec["command_template"]


def test_the_jobs_page_writes_no_templates(client: Any, team: Any) -> None:
    JobTemplate.objects.filter(project__isnull=True, builtin=True).delete()
    client.force_login(team.editor)

    page = client.get("/p/demo/jobs/")

    assert page.status_code == 200
    assert not JobTemplate.objects.filter(builtin=True).exists()
