"""Deleting a run takes its labels' marks, judge verdicts and search documents (its partition) with it."""

from __future__ import annotations

from deeprepo_web.judge.models import JudgeJob, Verdict
from deeprepo_web.labels.models import Mark
from deeprepo_web.labels.services import label_create, mark_create
from deeprepo_web.runs.services import run_delete
from deeprepo_web.search.models import Doc


def test_run_delete_takes_marks_verdicts_and_docs(team, corpus):
    label = label_create(project=team.project, name="gives-up")
    rollout = corpus.run.rollouts.get(pk=corpus.ids["giveup"])
    mark_create(label=label, rollout=rollout, user=team.editor, turn_index=2)
    job = JudgeJob.objects.create(project=team.project, rubric="r", label=label)
    Verdict.objects.create(job=job, rollout=rollout, run=corpus.run, answer=True)
    other = corpus.other_run.rollouts.get()
    mark_create(label=label, rollout=other, user=team.editor)
    assert Doc.objects.filter(run_id=corpus.run.pk).exists()

    run_pk = corpus.run.pk
    run_delete(run=corpus.run)

    assert list(Mark.objects.values_list("rollout_id", flat=True)) == [other.pk]
    assert not Verdict.objects.exists()
    assert not Doc.objects.filter(run_id=run_pk).exists()
    assert Doc.objects.filter(run_id=corpus.other_run.pk).exists()
    # The run's documents went as its partition, not row by row.
    partitions = _partitions()
    assert f"search_doc_{run_pk}" not in partitions and f"search_doc_{corpus.other_run.pk}" in partitions


def _partitions() -> set[str]:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                    "WHERE i.inhparent = 'search_doc'::regclass")
        return {row[0] for row in cur.fetchall()}


def test_a_run_made_after_the_pass_began_gets_its_partition(team, corpus):
    """Rows of a run whose partition is missing when a window is copied: the window makes it and goes on."""
    from django.db import connection

    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create
    from deeprepo_web.search import indexer
    from deeprepo_web.search.partitions import partition_drop

    from .conftest import _turn, rec

    run, _ = run_create(project=team.project, name="late-run")
    rollouts_ingest(run=run, rollouts=[rec("ex-late", uid="l1", turns=[_turn("a persimmon")])])
    with connection.cursor() as cur:
        partition_drop(cur, run.pk)  # as if the run was made after this pass's partitions_ensure
        cur.execute("SELECT max(id) FROM runs_turn")
        assert indexer._window(cur, "turn", 0, cur.fetchone()[0]) == 1
    assert f"search_doc_{run.pk}" in _partitions()
    assert list(Doc.objects.filter(run_id=run.pk).values_list("body", flat=True)) == ["a persimmon "]
