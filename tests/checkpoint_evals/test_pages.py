"""The rules page of a training run: an editor adds a rule, a bad one is refused on the form, a viewer reads."""

from __future__ import annotations

import re
from typing import Any

import pytest

from deeprepo_web.checkpoint_evals.models import CheckpointRule
from deeprepo_web.jobs.services.launch import job_launch
from tests.jobs.conftest import builtin

pytestmark = pytest.mark.django_db


def _form(cluster: Any, **over: str) -> dict[str, str]:
    data = {"template": str(builtin("demo-grpo-eval").pk), "cluster": str(cluster.pk), "trigger": "artifact",
            "path_param": "checkpoint", "step_param": "step", "path_template": "{output_dir}/{artifact}",
            "max_at_once": "10"}
    data.update(over)
    return data


def test_editor_adds_a_rule_and_a_bad_one_is_refused(client: Any, team: Any, local_cluster: Any) -> None:
    job = job_launch(project=team.project, template=builtin("demo-grpo"), cluster=local_cluster, params={})
    url = f"/p/{team.project.slug}/runs/{job.run.public_id}/checkpoint-evals/"
    client.force_login(team.editor)
    assert f'href="{url}"' in client.get(f"/p/{team.project.slug}/jobs/{job.public_id}/").content.decode()
    res = client.post(url, _form(local_cluster, trigger="steps", path_template="{output_dir}/{artifact}",
                                 every_steps="10"))
    assert res.status_code == 422 and "a steps rule has none" in res.content.decode()
    # The service's refusal sits beside the field it names; the form's own one (no cluster) too.
    assert re.search(r'data-field="path_template">\{artifact\} names a logged artifact; a steps rule has none',
                     res.content.decode())
    res = client.post(url, {**_form(local_cluster), "cluster": ""})
    assert res.status_code == 422 and 'data-field="cluster">This field is required.' in res.content.decode()
    assert not CheckpointRule.objects.exists()
    res = client.post(url, _form(local_cluster))
    assert res.status_code == 302 and res["Location"] == url
    rule = CheckpointRule.objects.get()
    assert rule.run_id == job.run.pk and rule.path_param == "checkpoint"

    client.force_login(team.viewer)
    page = client.get(url).content.decode()
    assert "Demo GRPO checkpoint eval on here" in page and "Add a rule" not in page
    assert client.post(url, _form(local_cluster)).status_code in (403, 404)
    client.force_login(team.outsider)
    assert client.get(url).status_code == 404
