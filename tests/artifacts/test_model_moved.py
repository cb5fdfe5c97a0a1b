"""The Artifact model moved from the runs app to the artifacts app (runs 0011, artifacts 0001): a
database filled before the move keeps its artifacts, their run and their uniqueness after `migrate`."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.recorder import MigrationRecorder

from deeprepo_web.artifacts.models import Artifact, ArtifactStatus
from deeprepo_web.runs.deletion import run_contents
from deeprepo_web.runs.services import run_create

BEFORE = [("artifacts", None)]  # unapplies artifacts 0001 and what needs it (runs 0011): the model is in runs
RUNS_BEFORE = ("runs", "0010_metric_axis")


def _migrate(targets: list[tuple[str, str | None]] | None = None) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.migrate(targets or executor.loader.graph.leaf_nodes())
    return executor


@pytest.mark.django_db(transaction=True)
def test_artifacts_stored_before_the_move_are_there_after_it(team):
    run, _ = run_create(project=team.project, name="before-the-move")
    executor = _migrate(BEFORE)
    try:
        old_apps = executor.loader.project_state(RUNS_BEFORE).apps
        applied = MigrationRecorder(connection).applied_migrations()
        assert RUNS_BEFORE in applied and ("runs", "0011_artifact_moved_to_artifacts") not in applied
        with pytest.raises(LookupError):
            old_apps.get_model("artifacts", "Artifact")
        OldArtifact = old_apps.get_model("runs", "Artifact")
        OldArtifact.objects.create(run_id=run.pk, name="ckpt/step-10.pt", kind="checkpoint", size=3, sha256="a" * 64,
                                   storage_key="k/ckpt", status="ready")
        OldArtifact.objects.create(run_id=run.pk, name="half.bin", size=9, sha256="b" * 64, storage_key="k/half",
                                   upload_id="mp-1")
    finally:
        _migrate()  # forward to today's schema: the test database is left as every other test expects

    rows = {a.name: a for a in Artifact.objects.filter(run=run)}
    assert set(rows) == {"ckpt/step-10.pt", "half.bin"}
    ckpt = rows["ckpt/step-10.pt"]
    assert (ckpt.kind, ckpt.size, ckpt.status, ckpt.run_id) == ("checkpoint", 3, ArtifactStatus.READY, run.pk)
    assert rows["half.bin"].upload_id == "mp-1" and rows["half.bin"].status == ArtifactStatus.PENDING
    assert [a.name for a in run.artifacts.order_by("name")] == ["ckpt/step-10.pt", "half.bin"]
    assert run_contents(run=run).artifacts == 2  # counted through runs.signals by the artifacts app
    with pytest.raises(IntegrityError), transaction.atomic():  # the (run, name) constraint came along
        Artifact.objects.create(run=run, name="half.bin", size=1, sha256="c" * 64, storage_key="k/again")
