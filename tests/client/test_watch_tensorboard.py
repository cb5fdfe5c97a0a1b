"""`deeprepo watch` on a TensorBoard logdir while the writer is still writing: points stream pass by
pass, a record cut short at the end waits for the next pass (no problem printed), nothing doubles."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from tensorboardX import SummaryWriter

from deeprepo_client.cli import main as cli_main
from deeprepo_web.runs.models import Metric, Run
from tests.importers.writers.tensorboard_write import STEPS, kl, loss, reward, write_step

pytestmark = pytest.mark.django_db(transaction=True)


def _watch(url: str, key: str, folder: Path) -> int:
    return cli_main(["--url", url, "--api-key", key, "watch", str(folder), "--project", "demo", "--once"])


def _series(key: str) -> dict[int, float]:
    return dict(Metric.objects.filter(series__key=key).values_list("step", "value"))


def _watch_until(url: str, key: str, folder: Path, writer: SummaryWriter, points: int) -> None:
    """Watch passes until `points` are stored: tensorboardX queues events for a thread, and its
    flush() writes only what that thread has taken, so a pass may see part of them."""
    deadline = time.monotonic() + 30
    while Metric.objects.count() < points:
        assert time.monotonic() < deadline, f"{Metric.objects.count()} of {points} points after 30 s"
        writer.flush()
        assert _watch(url, key, folder) == 0


def test_a_live_writer_streams_pass_by_pass(live_server, team, tmp_path, capsys):
    logdir = tmp_path / "runs" / "Nov25_grpo"
    writer = SummaryWriter(str(logdir))
    for step in range(2):
        write_step(writer, step)
    _watch_until(live_server.url, team.key, logdir, writer, 6)
    run = Run.objects.get(project=team.project)
    assert (run.name, run.status, run.source) == ("Nov25_grpo", "running", "tensorboard")
    assert _series("train/loss") == {0: loss(0), 1: loss(1)}

    for step in range(2, 4):
        write_step(writer, step)
    _watch_until(live_server.url, team.key, logdir, writer, 12)
    assert _series("train/reward") == {s: reward(s) for s in range(4)}
    writer.close()
    assert _watch(live_server.url, team.key, logdir) == 0
    assert Metric.objects.count() == 12 and Run.objects.count() == 1


def test_a_record_cut_short_waits_for_the_next_pass(live_server, team, tmp_path, capsys):
    # The writer's real bytes, handed to the watched folder as a live file grows: up to the middle
    # of a record, then the rest.
    staged = tmp_path / "staged"
    writer = SummaryWriter(str(staged))
    for step in range(STEPS):
        write_step(writer, step)
    writer.close()
    [source] = staged.glob("events.out.tfevents.*")
    data = source.read_bytes()
    live = tmp_path / "live"
    live.mkdir()
    target = live / source.name
    cut = len(data) * 2 // 3
    target.write_bytes(data[:cut])
    assert _watch(live_server.url, team.key, live) == 0
    first = Metric.objects.count()
    assert 0 < first < 3 * STEPS
    assert "cut short" not in capsys.readouterr().err  # a record being written is no problem

    with open(target, "ab") as f:
        f.write(data[cut:])
    assert _watch(live_server.url, team.key, live) == 0
    assert _series("train/loss") == {s: loss(s) for s in range(STEPS)}
    assert _series("train/kl") == {s: kl(s) for s in range(STEPS)}
    assert Metric.objects.count() == 3 * STEPS and Run.objects.count() == 1
    assert _watch(live_server.url, team.key, live) == 0
    assert "+0 rollouts, +0 points" in capsys.readouterr().out
