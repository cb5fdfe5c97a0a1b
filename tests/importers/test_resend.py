"""Beat's resend_imports sends run_import again only for imports still queued after the stale window;
the suite's real worker then imports what was re-sent."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from deeprepo_web.importers.jobs import import_job_create
from deeprepo_web.importers.models import ImportJob
from deeprepo_web.runs.models import Rollout
from tests.jobs.conftest import wait_for
from workers.tasks import imports as tasks

from .conftest import vf_row, write_vf

pytestmark = pytest.mark.django_db(transaction=True)


def test_beat_schedules_the_resend() -> None:
    entry = django_settings.CELERY_BEAT_SCHEDULE["resend-imports"]
    assert entry["task"] == "deeprepo.imports.resend" == tasks.resend_imports.name


def test_only_stale_queued_imports_are_sent_again(team, settings, tmp_path, celery_worker):
    settings.DEEPREPO_IMPORT_STALE_SECONDS = 60
    folder = write_vf(tmp_path / "lost", [vf_row(i, i) for i in range(5)])
    with open(folder / "metadata.json", "rb") as meta, open(folder / "results.jsonl", "rb") as results:
        lost = import_job_create(project=team.project, user=team.editor, files=[("metadata.json", meta),
                                                                                ("results.jsonl", results)])
    long_ago = timezone.now() - timedelta(minutes=10)
    ImportJob.objects.filter(pk=lost.pk).update(sent_at=long_ago)
    # Never sent for real: a re-send would make the worker fail them on their missing path.
    fresh = ImportJob.objects.create(project=team.project, source_name="fresh", path="/nowhere")
    running = ImportJob.objects.create(project=team.project, source_name="running", path="/nowhere",
                                       status="running", sent_at=long_ago)

    assert tasks.resend_imports.apply().get() == 1

    wait_for(lambda: ImportJob.objects.get(pk=lost.pk).is_final, timeout=60, what="the re-sent import")
    lost.refresh_from_db()
    assert (lost.status, lost.report["runs"][0]["rollouts"]) == ("done", 5)
    assert lost.sent_at > long_ago
    assert Rollout.objects.filter(run__project=team.project).count() == 5
    assert ImportJob.objects.get(pk=fresh.pk).status == "queued"
    assert ImportJob.objects.get(pk=running.pk).status == "running"
    assert tasks.resend_imports.apply().get() == 0  # nothing left to send


def test_a_command_line_import_whose_process_died_is_failed_not_taken_over(team, settings):
    # Its path is on the machine of a process that is gone: no worker can read it again.
    settings.DEEPREPO_IMPORT_STALE_SECONDS = 60
    long_ago = timezone.now() - timedelta(minutes=10)
    dead = ImportJob.objects.create(project=team.project, source_name="/data/eval", path="/data/eval", origin="cli",
                                    status="running", sent_at=long_ago, heartbeat_at=long_ago)
    alive = ImportJob.objects.create(project=team.project, source_name="/data/b", path="/data/b", origin="cli",
                                     status="running", sent_at=long_ago, heartbeat_at=timezone.now())
    assert tasks.resend_imports.apply().get() == 0
    dead.refresh_from_db()
    assert dead.status == "failed" and "stopped before it finished" in dead.error
    assert ImportJob.objects.get(pk=alive.pk).status == "running"
