"""The run's Artifacts tab: list, download through a fresh short-lived URL, delete for editors only."""

from __future__ import annotations

import os
from typing import Any

import pytest

from deeprepo_web import storage
from deeprepo_web.artifacts.models import Artifact
from tests.artifacts.conftest import get, sha, upload


def _page(client: Any, run_id: str, **params: Any) -> Any:
    return client.get(f"/p/demo/runs/{run_id}/artifacts/", params)


def test_viewer_sees_list_without_delete(client: Any, api: Any, run_id: str, team: Any, fs_store: str) -> None:
    upload(api, run_id, os.urandom(2048), name="ckpt/<b>adapter</b>.bin", kind="checkpoint")
    upload(api, run_id, b"step 1 loss 0.3\n", name="train.log", kind="log")
    client.force_login(team.viewer)
    res = _page(client, run_id)
    html = res.content.decode()
    assert res.status_code == 200
    assert "ckpt/&lt;b&gt;adapter&lt;/b&gt;.bin" in html and "<b>adapter" not in html
    assert "train.log" in html and "2 artifacts" in html.replace("<strong>", "").replace("</strong>", "")
    assert "Download" in html and ">Delete<" not in html
    assert 'class="active" aria-current="page">Artifacts' in html
    only_logs = _page(client, run_id, kind="log").content.decode()
    assert "train.log" in only_logs and "adapter" not in only_logs


def test_download_link_redirects_to_a_working_url(client: Any, api: Any, run_id: str, team: Any, store: str) -> None:
    data = os.urandom(4096)
    art = upload(api, run_id, data)
    client.force_login(team.viewer)
    res = client.get(f"/p/demo/runs/{run_id}/artifacts/{art['id']}/download/")
    assert res.status_code == 302
    status, body = get(client, res["Location"])
    assert status == 200 and body == data


def test_viewer_cannot_delete(client: Any, api: Any, run_id: str, team: Any, fs_store: str) -> None:
    art = upload(api, run_id, b"abc")
    client.force_login(team.viewer)
    assert client.post(f"/p/demo/runs/{run_id}/artifacts/{art['id']}/delete/").status_code == 404
    assert Artifact.objects.filter(pk=art["id"]).exists()


@pytest.mark.parametrize("htmx", [False, True])
def test_editor_deletes_row_and_object(client: Any, api: Any, run_id: str, team: Any, store: str, htmx: bool) -> None:
    art = upload(api, run_id, os.urandom(100), name=f"x-{htmx}.bin")
    key = Artifact.objects.get(pk=art["id"]).storage_key
    client.force_login(team.editor)
    assert ">Delete<" in _page(client, run_id).content.decode()
    headers = {"HX-Request": "true"} if htmx else {}
    res = client.post(f"/p/demo/runs/{run_id}/artifacts/{art['id']}/delete/", headers=headers)
    assert res.status_code == (200 if htmx else 302)
    assert not Artifact.objects.filter(pk=art["id"]).exists()
    assert not storage.backend().exists(key)


def test_delete_needs_csrf(api: Any, run_id: str, team: Any, fs_store: str) -> None:
    from django.test import Client

    art = upload(api, run_id, b"abc")
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(team.editor)
    assert strict.post(f"/p/demo/runs/{run_id}/artifacts/{art['id']}/delete/").status_code == 403
    assert Artifact.objects.filter(pk=art["id"]).exists()


def test_outsider_gets_404(client: Any, run_id: str, team: Any, fs_store: str) -> None:
    client.force_login(team.outsider)
    assert _page(client, run_id).status_code == 404
    assert client.get(f"/p/other/runs/{run_id}/artifacts/").status_code == 404


def test_api_delete(api: Any, run_id: str, fs_store: str) -> None:
    art = upload(api, run_id, b"abc")
    assert api.client.delete(f"/api/v1/runs/{run_id}/artifacts/{art['id']}",
                             headers={"Authorization": f"Bearer {api.key}"}).status_code == 204
    assert not Artifact.objects.exists()
    assert sha(b"abc")
