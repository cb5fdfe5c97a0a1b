"""Marks, verdicts and share links refer to their rollout through statement-level triggers, not a foreign
key (runs/references.py): a rollout deleted by SQL takes them with it, a row naming a missing rollout is
refused, and a rollout deleted while a row naming it is written does not leave that row behind."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest
from django.apps import apps
from django.db import IntegrityError, connection, transaction

from deeprepo_web.judge.models import JudgeJob, Verdict
from deeprepo_web.labels.models import Label, Mark
from deeprepo_web.runs.models import Rollout, Run
from deeprepo_web.sharing.models import ShareLink
from tests.factories import rollout
from tests.sessions import session


def _rollouts(api: Any, n: int) -> tuple[Run, list[Rollout]]:
    run_id = api.post("/runs", {"name": "referred"}).json()["id"]
    records = [rollout(f"ex-{i}") for i in range(n)]
    assert api.post(f"/runs/{run_id}/rollouts", {"rollouts": records}).status_code == 200
    run = Run.objects.get(public_id=run_id)
    return run, list(run.rollouts.order_by("pk"))


def _refer(team: Any, run: Run, target: Rollout) -> tuple[Label, JudgeJob]:
    label = Label.objects.create(project=team.project, name="gives-up")
    Mark.objects.create(label=label, rollout=target, run=run)
    job = JudgeJob.objects.create(project=team.project, rubric="r", label=label)
    Verdict.objects.create(job=job, rollout=target, run=run, answer=True)
    ShareLink.objects.create(project=team.project, kind="rollout", run=run, rollout=target,
                             token_hash="a" * 64, token_prefix="a")
    return label, job


def test_rollouts_deleted_by_sql_take_the_rows_that_name_them(api, team):
    run, (doomed, kept) = _rollouts(api, 2)
    label, job = _refer(team, run, doomed)
    Mark.objects.create(label=label, rollout=kept, run=run)
    Verdict.objects.create(job=job, rollout=kept, run=run, answer=False)

    with connection.cursor() as cur:
        cur.execute("DELETE FROM runs_rollout WHERE id = %s", [doomed.pk])

    assert list(Mark.objects.values_list("rollout_id", flat=True)) == [kept.pk]
    assert list(Verdict.objects.values_list("rollout_id", flat=True)) == [kept.pk]
    assert not ShareLink.objects.exists()


@pytest.mark.parametrize("model", ["mark", "verdict", "link"])
def test_a_row_naming_a_missing_rollout_is_refused(api, team, model):
    run, (target,) = _rollouts(api, 1)
    label, job = _refer(team, run, target)
    missing = target.pk + 1000
    rows = {"mark": lambda: Mark.objects.create(label=label, rollout_id=missing, run=run),
            "verdict": lambda: Verdict.objects.create(job=job, rollout_id=missing, run=run),
            "link": lambda: ShareLink.objects.create(project=team.project, kind="rollout", rollout_id=missing,
                                                     token_hash="b" * 64, token_prefix="b")}
    table = {"mark": "labels_mark", "verdict": "judge_verdict", "link": "sharing_sharelink"}[model]
    with pytest.raises(IntegrityError, match=f'"{table}" names a rollout that does not exist') as refused:
        with transaction.atomic():
            rows[model]()
    assert f"Key (rollout_id)=({missing})" in str(refused.value.__cause__.diag.message_detail)

    # Moving a stored row onto a missing rollout is refused the same way; what was stored stays.
    stored = {"mark": Mark, "verdict": Verdict, "link": ShareLink}[model].objects
    with pytest.raises(IntegrityError, match="names a rollout that does not exist"):
        with transaction.atomic():
            stored.update(rollout_id=missing)
    assert list(stored.values_list("rollout_id", flat=True)) == [target.pk]


def _until_blocked(waiting: int, by: int) -> None:
    """Until backend `waiting` waits for a lock that backend `by` holds (polled: nothing else tells)."""
    with session() as probe:
        for _ in range(1000):
            if by in probe.execute("SELECT pg_blocking_pids(%s)", [waiting]).fetchone()[0]:
                return
            time.sleep(0.01)
    raise AssertionError("the second transaction never waited for the first")


@pytest.mark.django_db(transaction=True)
def test_a_rollout_deleted_while_a_mark_is_written_takes_it_or_refuses_it(api, team):
    run, (first, second) = _rollouts(api, 2)
    label = Label.objects.create(project=team.project, name="racy")
    insert = ("INSERT INTO labels_mark (label_id, rollout_id, run_id, note, status, source, created_at) "
              "VALUES (%s, %s, %s, '', 'confirmed', 'person', now())")

    # The mark first: its check locks the rollout, the delete waits for its commit, then takes the mark.
    with session() as marking, session() as deleting:
        marking.execute(insert, [label.pk, first.pk, run.pk])
        done = threading.Thread(target=lambda: deleting.execute("DELETE FROM runs_rollout WHERE id = %s",
                                                                [first.pk]))
        pids = deleting.info.backend_pid, marking.info.backend_pid  # read before the thread uses its connection
        done.start()
        _until_blocked(pids[0], by=pids[1])
        marking.commit()
        done.join()
        deleting.commit()
    assert not Mark.objects.filter(rollout_id=first.pk).exists()

    # The delete first: the mark's check waits for it, then finds the rollout gone.
    errors: list[Exception] = []

    def mark() -> None:
        try:
            marking.execute(insert, [label.pk, second.pk, run.pk])
        except psycopg.errors.ForeignKeyViolation as error:
            errors.append(error)

    with session() as marking, session() as deleting:
        deleting.execute("DELETE FROM runs_rollout WHERE id = %s", [second.pk])
        done = threading.Thread(target=mark)
        pids = marking.info.backend_pid, deleting.info.backend_pid
        done.start()
        _until_blocked(pids[0], by=pids[1])
        deleting.commit()
        done.join()
    assert len(errors) == 1 and "names a rollout that does not exist" in str(errors[0])
    assert not Mark.objects.exists()


@pytest.mark.django_db
def test_every_table_naming_a_rollout_without_a_foreign_key_has_the_triggers():
    """A new model with `ForeignKey(Rollout, db_constraint=False)` must call `rollout_reference` in its
    migration, or its rows would outlive their rollout (runs' own turns documents and their views are
    deleted by run_delete itself)."""
    own = {"runs_rolloutturns", "runs_turn", "runs_toolcall"}
    unkept = [field.model._meta.db_table for model in apps.get_models() for field in model._meta.concrete_fields
              if field.is_relation and field.related_model is Rollout and not field.db_constraint]
    with connection.cursor() as cur:
        cur.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
        triggers = {name for (name,) in cur.fetchall()}
    missing = [table for table in unkept if table not in own
               and not {f"{table}_rollout_gone", f"{table}_rollout_added", f"{table}_rollout_changed"} <= triggers]
    assert sorted(set(unkept) - own) == ["judge_verdict", "labels_mark", "sharing_sharelink"]
    assert missing == []
