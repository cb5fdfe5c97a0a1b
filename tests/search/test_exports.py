"""Datasets out: JSONL of chat messages, Parquet, and a folder `datasets.load_dataset` reads back."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
from django.urls import reverse


def _export(client, fmt, **params) -> bytes:
    res = client.get(reverse("search_export", args=["demo", fmt]), params)
    assert res.status_code == 200, res.content[:300]
    return b"".join(res.streaming_content) if res.streaming else res.content


def test_jsonl_rows_are_chat_messages_with_tools(client, team, corpus):
    client.force_login(team.viewer)
    lines = _export(client, "jsonl", q="read_file", **{"in": "tool_name"}).decode().splitlines()
    assert len(lines) == 1
    row = json.loads(lines[0])
    assert row["rollout_id"] == corpus.ids["toolerr"] and row["run"] == corpus.run.public_id
    roles = [m["role"] for m in row["messages"]]
    assert roles == ["user", "assistant", "tool"]
    call = row["messages"][1]["tool_calls"][0]
    assert call == {"id": "c1", "type": "function",
                    "function": {"name": "read_file", "arguments": json.dumps({"path": "tests/test_auth.py"})}}
    assert row["messages"][2]["tool_call_id"] == "c1"
    assert row["messages"][2]["content"].startswith("FileNotFoundError")
    assert row["tools"][0]["function"]["name"] == "read_file"


def test_reasoning_and_prompt_travel(client, team, corpus):
    client.force_login(team.viewer)
    rows = [json.loads(x) for x in _export(client, "jsonl", q="...", mode="regex", step_min="0",
                                                             step_max="100").decode().splitlines()]
    by_id = {r["rollout_id"]: r for r in rows}
    assert len(rows) == 7
    hack = by_id[corpus.ids["hack"]]
    assert "edit the test file" in hack["messages"][1]["reasoning_content"]
    # A trajectory without its own user turn starts with the example's prompt.
    assert by_id[corpus.ids["prompt"]]["messages"][0] == {"role": "user", "content": "Repair the flaky scheduler"}


def test_parquet_holds_the_same_rows(client, team, corpus):
    client.force_login(team.viewer)
    table = pq.read_table(io.BytesIO(_export(client, "parquet", q="give up")))
    assert sorted(table.column("rollout_id").to_pylist()) == sorted([corpus.ids["giveup"], corpus.ids["second-giveup"]])
    messages = table.column("messages").to_pylist()[0]
    assert messages[-1]["role"] == "assistant"


def test_hf_folder_loads_with_datasets(client, team, corpus, tmp_path: Path):
    import datasets

    from deeprepo_web.labels.services import label_create, mark_create

    label = label_create(project=team.project, name="gives-up")
    for uid in ("giveup", "second-giveup"):
        mark_create(label=label, rollout=corpus.run.rollouts.model.objects.get(pk=corpus.ids[uid]), user=team.editor)
    client.force_login(team.viewer)
    with zipfile.ZipFile(io.BytesIO(_export(client, "hf", label="gives-up"))) as z:
        z.extractall(tmp_path)
    ds = datasets.load_dataset(str(tmp_path / "dataset"), split="train", cache_dir=str(tmp_path / "cache"))
    assert len(ds) == 2
    assert set(ds["labels"][0]) == {"gives-up"}
    assert ds[0]["messages"][0]["role"] in ("user", "assistant")


def test_export_without_a_search_is_refused(client, team, corpus):
    client.force_login(team.viewer)
    res = client.get(reverse("search_export", args=["demo", "jsonl"]))
    assert res.status_code == 400 and b"search or filter first" in res.content
    assert client.get(reverse("search_export", args=["demo", "csv"]), {"q": "x"}).status_code == 404
