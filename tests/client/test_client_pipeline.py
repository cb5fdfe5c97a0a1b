"""The client's spool and sender: refused batches are reported, idle clients read nothing."""

from __future__ import annotations

import time

import pytest

import deeprepo_client
from deeprepo_client.spool import Cursor, Spool
from deeprepo_client.transport import Transport, drain
from deeprepo_web.runs.models import Rollout, Run
from tests.factories import rollout

pytestmark = pytest.mark.django_db(transaction=True)


def _rchar() -> int:
    """Bytes this process has read through read(2) so far (page cache included)."""
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar"))


def test_a_refused_batch_is_reported_by_finish_and_shown_on_the_run_page(live_server, team, tmp_path, capsys,
                                                                         client):
    run = deeprepo_client.init(name="refused", url=live_server.url, api_key=team.key, spool_dir=tmp_path,
                               flush_interval=0.05)
    run.log_rollouts([rollout("ex-1", uid="good-1")])
    run.log_rollouts([{"step": 1, "turns": []}])  # no example_key: the server refuses this batch
    run.log_rollouts([rollout("ex-2", uid="good-2")])
    summary = run.finish()
    assert not summary and not summary.ok
    assert summary.spooled == 0 and len(summary.refused) == 1 and "example_key" in summary.refused[0]
    assert summary["rollouts"] == 2  # the good batches around it were stored
    err = capsys.readouterr().err
    assert "refused 1 batch" in err and f"deeprepo sync --refused {run.spool.path}" in err
    stored = Run.objects.get(public_id=run.id)
    assert set(Rollout.objects.filter(run=stored).values_list("uid", flat=True)) == {"good-1", "good-2"}
    assert (run.spool.path / "rejected.jsonl").exists()  # kept on disk, not dropped

    client.force_login(team.viewer)
    page = client.get(f"/p/{team.project.slug}/runs/{stored.public_id}/").content.decode()
    assert "The server refused data sent to this run" in page
    assert "1 batch of rollouts" in page and "example_key" in page


def test_sync_refused_sends_refused_batches_again_once_fixed(live_server, team, tmp_path, monkeypatch):
    from deeprepo_client.cli import main as cli_main

    monkeypatch.setenv("DEEPREPO_MODE", "offline")
    run = deeprepo_client.init(name="fix-later", spool_dir=tmp_path)
    run.log({"a": 1.0}, step=0)
    run.spool.append("metrics", [{"step": 1, "values": {"": 2.0}}])  # an empty key is refused
    run.finish()
    args = ["--url", live_server.url, "--api-key", team.key, "sync", str(tmp_path)]
    assert cli_main(args) == 1  # refused: said so, and the exit code says so
    assert len(run.spool.rejected()) == 1
    assert cli_main([*args[:-1], "--refused", str(tmp_path)]) == 1  # still refused: still kept
    assert len(run.spool.rejected()) == 1


def test_an_idle_client_with_a_large_acknowledged_spool_reads_nothing(live_server, team, tmp_path):
    run = deeprepo_client.init(name="idle", url=live_server.url, api_key=team.key, spool_dir=tmp_path,
                               flush_interval=0.05, batch_points=5000)
    for step in range(40_000):  # ~ 40 batches, a few MB of spool, all acknowledged
        run.log({"reward": step / 40_000, "loss": 1.0, "kl": 0.01}, step=step)
    run._flush_points()
    deadline = time.monotonic() + 60
    while run.spool.pending() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert run.spool.pending() == 0
    spool_bytes = sum(p.stat().st_size for p in run.spool.path.glob("ops*.jsonl"))
    assert spool_bytes > 2_000_000
    before = _rchar()
    time.sleep(1.5)  # ~30 wake-ups of the sender
    read = _rchar() - before
    assert read < 64 * 1024, f"an idle client read {read} bytes of a {spool_bytes}-byte spool"
    assert run.finish().ok


def test_segments_roll_and_acknowledged_ones_are_deleted(live_server, team, tmp_path):
    spool = Spool.create(tmp_path, "seg", {"name": "segments"}, server_id=None)
    spool.segment_bytes = 5_000
    for step in range(300):
        spool.append("metrics", [{"step": step, "values": {"x": float(step), "pad": 1.0 * step}}] * 1)
    assert len(spool.segments()) > 3
    transport = Transport(live_server.url, team.key)
    result = drain(spool, transport, in_flight=3, request_bytes=3000)
    assert result.sent == 300 and result.points == 600 and 5 <= result.requests < 30  # joined into requests
    assert spool.pending() == 0 and len(spool.segments()) == 1  # only the one being written is left
    assert spool.acked_cursor() > Cursor(spool.segments()[0], 0)
    assert drain(spool, transport).sent == 0  # nothing twice
    stored = Run.objects.get(name="segments")
    assert stored.series.get(key="x").count == 300


def test_a_torn_last_line_is_cut_before_the_next_append(tmp_path):
    spool = Spool.create(tmp_path, "torn", {"name": "torn"}, server_id=None)
    spool.append("metrics", [{"step": 0, "values": {"x": 1.0}}])
    segment = spool.path / "ops-000001.jsonl"
    with open(segment, "ab") as fh:
        fh.write(b'{"seq":2,"kind":"metrics","body":[{"st')  # a crash mid-write
    again = Spool(spool.path)  # the next process
    again.append("metrics", [{"step": 1, "values": {"x": 2.0}}])
    ops = list(again.iter_ops(after=0))
    assert [op["seq"] for op in ops] == [1, 2] and ops[1]["body"][0]["step"] == 1


def test_finish_progress_line_shows_what_is_left(tmp_path, capsys):
    from deeprepo_client.finish import PROGRESS_AFTER, Progress

    spool = Spool.create(tmp_path, "slow", {"name": "slow"}, server_id=None)
    for step in range(100):
        spool.append("metrics", [{"step": step, "values": {"x": 1.0}}])
    progress = Progress(spool)
    progress.show(PROGRESS_AFTER / 2)
    assert capsys.readouterr().err == ""  # quick finishes print nothing
    for op in spool.read(Cursor(1, 0)):
        if op.seq == 50:
            spool.ack(op.seq, op.end)
    progress.total = spool.pending_bytes() * 2  # as if measured when finish() began
    progress.show(PROGRESS_AFTER + 1)
    line = capsys.readouterr().err
    assert line.startswith("deeprepo: sending |##########----------|") and "50 batch(es) left" in line


def test_an_older_clients_spool_is_sent_from_its_acked_seq(live_server, team, tmp_path):
    import json

    path = tmp_path / "old"
    path.mkdir()
    (path / "run.json").write_text(json.dumps({"local_id": "old", "create": {"name": "old-spool"},
                                               "server_id": None}))
    with open(path / "ops.jsonl", "w") as fh:  # the old layout: one file, json.dumps spacing, seq in acked
        for seq in (1, 2, 3):
            fh.write(json.dumps({"seq": seq, "kind": "metrics", "body": [{"step": seq, "values": {"x": 1.0}}]}) + "\n")
    (path / "acked").write_text("1")
    spool = Spool(path)
    transport = Transport(live_server.url, team.key)
    assert drain(spool, transport).sent == 2  # op 1 was acknowledged by the old client
    assert spool.pending() == 0 and spool.acked_cursor() == Cursor(0, (path / "ops.jsonl").stat().st_size)
    assert drain(spool, transport).sent == 0
    stored = Run.objects.get(name="old-spool")
    assert sorted(stored.series.get(key="x").metric_set.values_list("step", flat=True)) == [2, 3]


def test_one_bad_key_is_kept_aside_and_the_rest_is_stored(live_server, team, tmp_path):
    """Issue 25 item 7: a key over the limit is refused alone; the batch's other keys are stored, the
    refused values are kept in rejected.jsonl and finish() says which key."""
    long_key = "eval/" + "x" * 600
    run = deeprepo_client.init(name="long-key", url=live_server.url, api_key=team.key, spool_dir=tmp_path,
                               flush_interval=0.05)
    for step in range(5):
        run.log({"reward": step / 10, **({long_key: 1.0} if step == 3 else {})}, step=step)
    result = run.finish()
    stored = Run.objects.get(name="long-key")
    assert stored.series.get(key="reward").count == 5
    assert not stored.series.filter(key=long_key).exists()
    [entry] = run.spool.rejected()
    assert [(p["step"], p["values"]) for p in entry["op"]["body"]] == [(3, {long_key: 1.0})]
    assert "605 characters" in entry["error"] and "other keys were stored" in entry["error"]
    assert not result.ok and "605 characters" in str(result)
