"""Example page: prompt, oracle as a diff, reward per run and step, its rollouts across runs."""

from __future__ import annotations

import re

from django.urls import reverse


def test_example_page_shows_prompt_oracle_and_rewards_per_run(client, team, loaded):
    from deeprepo_web.runs.models import Rollout

    ex = Rollout.objects.get(pk=loaded.ids["s0-ex-a-0"]).example
    client.force_login(team.viewer)
    html = client.get(reverse("example", args=["demo", ex.pk])).content.decode()
    assert "Audit ex-a" in html  # the prompt message
    assert '<span class="d-add">+good</span>' in html and '<span class="d-del">-bad</span>' in html
    # Two runs hold this example: the train run (steps 0 and 1) and the eval run (no step).
    assert "grpo-test" in html and "eval-test" in html
    assert 'title="step 0: mean 0.188 over 4"' in html  # (0 + 0.25 + 0.5 + 0) / 4
    assert 'title="step 1: mean 0 over 4"' in html
    assert 'title="eval: mean 0.500 over 2"' in html
    rows = re.findall(r'name="r" value="(\d+)"', html)
    assert len(rows) == 10  # 8 train + 2 eval rollouts of ex-a


def test_example_rollouts_are_paged(client, team):
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.models import Rollout
    from deeprepo_web.runs.services import run_create
    from tests.factories import rollout
    from tests.pager import pager_link, pager_text

    run, _ = run_create(project=team.project, name="many")
    rollouts_ingest(run=run, rollouts=[rollout("same", step=i // 8, sample_index=i % 8, uid=f"u{i}", turns=0)
                                       for i in range(70)])
    ex = Rollout.objects.filter(run=run).first().example_id
    client.force_login(team.viewer)
    url = reverse("example", args=["demo", ex])
    first = client.get(url).content.decode()
    assert len(re.findall(r'name="r" value="\d+"', first)) == 50 and pager_text(first).endswith("Next →")
    second = client.get(pager_link(first, "next"), headers={"HX-Request": "true", "HX-Target": "example-rollouts"})
    chunk = second.content.decode()
    assert chunk.lstrip().startswith('<div id="example-rollouts"')
    assert len(re.findall(r'name="r" value="\d+"', chunk)) == 20
