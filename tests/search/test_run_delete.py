"""Deleting a run takes its labels' marks, judge verdicts and search documents with it."""

from __future__ import annotations

from django.db import connection

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


def test_a_runs_documents_are_found_through_an_index(corpus):
    """The deletion's delete and the confirmation's count read the run's documents by search_doc_run,
    not by a scan of every run's (a table this small is scanned anyway unless the planner is told not to)."""
    with connection.cursor() as cur:
        cur.execute("SET LOCAL enable_seqscan = off")
        plan = Doc.objects.filter(run_id=corpus.run.pk).explain()
        cur.execute("EXPLAIN DELETE FROM search_doc WHERE run_id = %s", [corpus.run.pk])
        delete_plan = "\n".join(row[0] for row in cur.fetchall())
    assert "search_doc_run" in plan and "search_doc_run" in delete_plan, (plan, delete_plan)
