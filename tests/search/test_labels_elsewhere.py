"""Labels beyond the search page: compare's label-rate rows with CIs, and shared rollout pages."""

from __future__ import annotations

from deeprepo_web.labels.services import label_create, mark_create


def test_compare_shows_a_label_rate_row_with_its_ci(client, team, corpus):
    from deeprepo_web.compare.comparison import comparison_build
    from deeprepo_web.compare.options import Options

    label = label_create(project=team.project, name="gives-up")
    # Compare takes each train run's last step: step 3 here (html, prompt) and step 5 there.
    for uid in ("html", "second-giveup"):
        mark_create(label=label, rollout=corpus.run.rollouts.model.objects.get(pk=corpus.ids[uid]), user=team.editor)
    c = comparison_build(runs=[corpus.run, corpus.other_run], options=Options())
    row = next(r for r in c.rows if r.key == "label:gives-up")
    assert [cell.text for cell in row.cells] == ["50% (1/2)", "100% (1/1)"]
    assert row.deltas[0] is None and row.deltas[1] is not None
    client.force_login(team.viewer)
    html = client.get(f"/p/demo/compare/?runs={corpus.run.public_id},{corpus.other_run.public_id}").content.decode()
    assert "Label rate: gives-up" in html


def test_shared_rollout_shows_its_labels_read_only(client, team, corpus):
    from deeprepo_web.sharing.services import share_create

    label = label_create(project=team.project, name="gives-up")
    rollout = corpus.run.rollouts.get(pk=corpus.ids["giveup"])
    mark_create(label=label, rollout=rollout, user=team.editor, turn_index=2, note="stops")
    _, token = share_create(project=team.project, user=team.owner, kind="rollout", target=str(rollout.pk))
    client.logout()
    html = client.get(f"/s/{token}").content.decode()
    assert 'data-label="gives-up"' in html and "turn #2" in html
    assert "Add label" not in html and "editor" not in html  # no form, no member's name


def test_rollouts_table_filters_by_label(client, team, corpus):
    import re

    from django.urls import reverse

    label = label_create(project=team.project, name="gives-up")
    mark_create(label=label, rollout=corpus.run.rollouts.get(pk=corpus.ids["giveup"]), user=team.editor)
    rejected = mark_create(label=label, rollout=corpus.run.rollouts.get(pk=corpus.ids["hack"]), user=None,
                           status="rejected", source="judge:x")
    assert rejected.status == "rejected"
    client.force_login(team.viewer)
    url = reverse("rollouts", args=["demo", corpus.run.public_id])
    html = client.get(url, {"label": "gives-up"}).content.decode()
    assert set(map(int, re.findall(r'/rollouts/(\d+)/"', html))) == {corpus.ids["giveup"]}
    assert '<option value="gives-up" selected>' in html
