from __future__ import annotations

from django.urls import reverse


def test_every_page_renders_for_a_viewer(client, team, loaded):
    from deeprepo_web.runs.models import Rollout

    client.force_login(team.viewer)
    run = loaded.run
    rid = loaded.ids["s1-ex-c-1"]
    ex = Rollout.objects.get(pk=rid).example_id
    other = loaded.ids["s0-ex-c-3"]
    for url in [
        reverse("rollouts", args=["demo", run.public_id]),
        reverse("groups", args=["demo", run.public_id]),
        reverse("trajectory", args=["demo", run.public_id, rid]),
        reverse("trajectory_turns", args=["demo", run.public_id, rid]),
        reverse("example", args=["demo", ex]),
        reverse("example_compare", args=["demo", ex]) + f"?a={rid}&b={other}",
    ]:
        res = client.get(url)
        assert res.status_code == 200, (url, res.content[:2000])
