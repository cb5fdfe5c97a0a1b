"""`GET /runs/{id}/artifacts` pages by cursor (newest first, ties by id) and still answers `offset=`."""

from __future__ import annotations

from typing import Any

from django.utils import timezone


def test_artifact_list_by_cursor_and_by_offset(api: Any, team: Any) -> None:
    from deeprepo_web.artifacts.models import Artifact
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="arts")
    same = timezone.now()
    Artifact.objects.bulk_create([Artifact(run=run, name=f"a{i}", kind="file", size=1, sha256=f"{i:064x}",
                                           created_at=same) for i in range(7)])
    seen, cursor = [], ""
    while True:
        body = api.get(f"/runs/{run.public_id}/artifacts", limit=3, **({"cursor": cursor} if cursor else {})).json()
        seen += [a["id"] for a in body["artifacts"]]
        assert body["has_next"] is (body["next_cursor"] is not None)
        if not body["next_cursor"]:
            break
        cursor = body["next_cursor"]
    assert seen == sorted(Artifact.objects.filter(run=run).values_list("pk", flat=True), reverse=True)
    old = [a["id"] for offset in (0, 3, 6)
           for a in api.get(f"/runs/{run.public_id}/artifacts", limit=3, offset=offset).json()["artifacts"]]
    assert old == seen
    assert api.get(f"/runs/{run.public_id}/artifacts", cursor="%%%").status_code == 400
