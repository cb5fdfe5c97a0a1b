"""Deleting a run takes its labels' marks, judge verdicts and its searchable text with it."""

from __future__ import annotations

from deeprepo_web.judge.models import JudgeJob, Verdict
from deeprepo_web.labels.models import Mark
from deeprepo_web.labels.services import label_create, mark_create
from deeprepo_web.runs.services import run_delete
from deeprepo_web.search.selectors import search_page, search_scope
from deeprepo_web.search.spec import spec_parse


def _runs_found(team, q: str) -> set[int]:
    spec = spec_parse({"q": q})
    results, _ = search_page(scope=search_scope(project=team.project, spec=spec), spec=spec)
    return {r.rollout.run_id for r in results}


def test_run_delete_takes_marks_verdicts_and_its_text(team, corpus):
    label = label_create(project=team.project, name="gives-up")
    rollout = corpus.run.rollouts.get(pk=corpus.ids["giveup"])
    mark_create(label=label, rollout=rollout, user=team.editor, turn_index=2)
    job = JudgeJob.objects.create(project=team.project, rubric="r", label=label)
    Verdict.objects.create(job=job, rollout=rollout, run=corpus.run, answer=True)
    other = corpus.other_run.rollouts.get()
    mark_create(label=label, rollout=other, user=team.editor)
    assert _runs_found(team, "give up") == {corpus.run.pk, corpus.other_run.pk}

    run_delete(run=corpus.run)

    assert list(Mark.objects.values_list("rollout_id", flat=True)) == [other.pk]
    assert not Verdict.objects.exists()
    assert _runs_found(team, "give up") == {corpus.other_run.pk}
