"""GET /api/v1/projects/{slug}/search and `deeprepo search` against a live server."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def test_api_returns_results_with_turn_urls(api, team, corpus):
    from deeprepo_web.labels.services import label_create, mark_create
    from deeprepo_web.runs.models import Rollout

    label = label_create(project=team.project, name="gives-up")
    mark_create(label=label, rollout=Rollout.objects.get(pk=corpus.ids["giveup"]), user=team.editor)
    res = api.get("/projects/demo/search", q="give up")
    assert res.status_code == 200
    body = res.json()
    ids = {r["rollout_id"]: r for r in body["results"]}
    assert set(ids) == {corpus.ids["giveup"], corpus.ids["second-giveup"]}
    first = ids[corpus.ids["giveup"]]
    assert first["turn_index"] == 2 and first["url"].endswith("?upto=2#turn-2")
    assert first["snippets"][0]["text"] == "I give up on this task."
    assert first["labels"] == ["gives-up"]
    assert ids[corpus.ids["second-giveup"]]["labels"] == []


def test_api_other_key_gets_404_and_bad_regex_422(api, other_api, corpus):
    assert other_api.get("/projects/demo/search", q="give").status_code == 404
    res = api.get("/projects/demo/search", q="abc(", mode="regex")
    assert res.status_code == 422 and "regular expression" in res.json()["error"]
    assert api.get("/projects/demo/search").status_code == 400


def test_cli_prints_one_line_per_rollout(live_server, team, corpus, capsys):
    from deeprepo_client.cli import main

    code = main(["--url", live_server.url, "--api-key", team.key, "search", "give up", "--project", "demo",
                 "--run", corpus.other_run.public_id])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert len(out) == 1 and out[0].startswith(f"{corpus.ids['second-giveup']}\t{corpus.other_run.public_id}\tstep 5")
    assert "I give up, the sandbox is broken." in out[0]
