"""Every new URL: outsiders get 404 (pages, htmx partials, blob bodies), viewers read, anonymous log in."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import rollout
from tests.trajectories.conftest import ingest

HX = {"HX-Request": "true"}


@pytest.fixture
def urls(loaded, settings):
    from deeprepo_web.runs.models import Rollout, ToolCall, Turn

    settings.DEEPREPO_BLOB_THRESHOLD = 64
    big = "z" * 500
    rec = rollout("ex-a", uid="blob", step=1, turns=0)
    rec["turns"].append({"role": "tool", "content": big})
    rec["turns"].append({"role": "assistant", "content": "x", "tool_calls": [{"name": "dump", "output": big}]})
    rid = ingest(loaded.run, [rec])["blob"]
    call = ToolCall.objects.get(rollout_id=rid, name="dump")
    turn = Turn.objects.get(rollout_id=rid, role="tool")
    assert call.output_blob and turn.content_blob
    run = loaded.run.public_id
    other = loaded.ids["s0-ex-a-1"]
    ex = Rollout.objects.get(pk=rid).example_id
    return [
        (reverse("rollouts", args=["demo", run]), {}),
        (reverse("rollouts", args=["demo", run]), {"step": "1", "_hx": "rollout-table"}),
        (reverse("groups", args=["demo", run]), {}),
        (reverse("groups", args=["demo", run]), {"step": "0", "_hx": "groups-body"}),
        (reverse("trajectory", args=["demo", run, rid]), {}),
        (reverse("trajectory_turns", args=["demo", run, rid]), {"from": "1", "_hx": "x"}),
        (reverse("trajectory_body", args=["demo", run, rid, "call", call.pk]), {"_hx": "x"}),
        (reverse("trajectory_body", args=["demo", run, rid, "turn", turn.pk]), {"_hx": "x"}),
        (reverse("example", args=["demo", ex]), {}),
        (reverse("example", args=["demo", ex]), {"page": "1", "_hx": "example-rollouts"}),
        (reverse("example_compare", args=["demo", ex]), {"a": rid, "b": other}),
    ]


def _get(client, url, params):
    params = dict(params)
    target = params.pop("_hx", None)
    headers = {**HX, "HX-Target": target} if target else {}
    return client.get(url, params, headers=headers)


def test_outsider_gets_404_everywhere(client, team, urls):
    client.force_login(team.outsider)
    for url, params in urls:
        assert _get(client, url, params).status_code == 404, url


def test_viewer_reads_everything(client, team, urls):
    client.force_login(team.viewer)
    for url, params in urls:
        res = _get(client, url, params)
        assert res.status_code == 200, url
        if "/body/" in url:
            assert "z" * 500 in res.content.decode()


def test_anonymous_is_sent_to_login(client, urls):
    for url, params in urls:
        res = _get(client, url, params)
        assert res.status_code == 302 and res["Location"].startswith("/login/"), url


def test_other_projects_objects_are_404_through_this_project(client, team, loaded):
    """A member of both projects still cannot reach project B's objects under project A's URLs."""
    from deeprepo_web.accounts.services import membership_set
    from deeprepo_web.runs.models import Rollout
    from deeprepo_web.runs.services import run_create

    membership_set(project=team.other_project, user=team.viewer, role="viewer")
    theirs, _ = run_create(project=team.other_project, name="theirs")
    ids = ingest(theirs, [rollout("ex-a", uid="t0"), rollout("ex-a", uid="t1", sample_index=1)])
    their_example = Rollout.objects.get(pk=ids["t0"]).example_id
    ours = loaded.ids["s0-ex-a-0"]
    our_example = Rollout.objects.get(pk=ours).example_id
    client.force_login(team.viewer)
    assert client.get(reverse("rollouts", args=["demo", theirs.public_id])).status_code == 404
    assert client.get(reverse("trajectory", args=["demo", theirs.public_id, ids["t0"]])).status_code == 404
    assert client.get(reverse("example", args=["demo", their_example])).status_code == 404
    # Compare refuses a rollout of another example (same key, other project).
    url = reverse("example_compare", args=["demo", our_example])
    assert client.get(url, {"a": ours, "b": ids["t0"]}).status_code == 404


def test_compare_picks_exactly_two(client, team, loaded):
    from deeprepo_web.runs.models import Rollout

    a, b = loaded.ids["s0-ex-a-0"], loaded.ids["s1-ex-a-2"]
    ex = Rollout.objects.get(pk=a).example_id
    client.force_login(team.viewer)
    url = reverse("example_compare", args=["demo", ex])
    res = client.get(url + f"?r={a}&r={b}")
    assert res.status_code == 302 and res["Location"] == f"{url}?a={a}&b={b}"
    res = client.get(url + f"?r={a}")
    assert res.status_code == 400 and "pick exactly two rollouts to compare (1 picked)" in res.content.decode()
    assert client.get(url, {"a": "x", "b": b}).status_code == 404
    html = client.get(url, {"a": a, "b": b}).content.decode()
    assert 'id="a-turn-0"' in html and 'id="b-turn-0"' in html
