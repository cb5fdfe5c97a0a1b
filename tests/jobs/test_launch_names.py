"""A launched job's run never takes the name of a run the project has: two evals launched from the
same template in the same minute (the default name) or under a typed name get (2), (3) …"""

from __future__ import annotations

from deeprepo_web.jobs.services.launch import job_launch
from deeprepo_web.runs.models import Run
from deeprepo_web.runs.services import run_create


def test_eval_launches_get_names_no_run_has(team, local_cluster, probe_template):
    names = [job_launch(project=team.project, template=probe_template, cluster=local_cluster,
                        params={"out": "x", "first": "a", "second": "b"}, user=team.editor).run.name
             for _ in range(3)]
    assert len(set(names)) == 3 and names[1] == f"{names[0]} (2)" and names[2] == f"{names[0]} (3)"
    run_create(project=team.project, name="gsm8k eval", kind="eval")
    typed = job_launch(project=team.project, template=probe_template, cluster=local_cluster,
                       params={"out": "x", "first": "a", "second": "b"}, name="gsm8k eval").run
    assert typed.name == "gsm8k eval (2)"
    assert Run.objects.filter(project=team.project, name="gsm8k eval").count() == 1
