"""TensorBoard event files written by the real tensorboardX writer: `manage.py import`, `deeprepo
import`, damaged records (reported with file and byte, the rest kept) and files cut short."""

from __future__ import annotations

import io
import random
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from deeprepo_client.formats import detect
from deeprepo_client.formats.tfrecord import _crc32c_py, crc32c
from deeprepo_web.runs.models import Metric, Run
from tests.importers.writers.tensorboard_write import STEPS, kl, loss, reward, write_logdir


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    write_logdir(tmp_path / "tb")
    return tmp_path / "tb"


def _series(run: Run, key: str) -> dict[int, float]:
    return dict(Metric.objects.filter(series__run=run, series__key=key).values_list("step", "value"))


def _event_file(folder: Path) -> Path:
    [path] = folder.glob("events.out.tfevents.*")
    return path


def _check_policy(run: Run) -> None:
    assert (run.source, run.status) == ("tensorboard", "finished")
    assert _series(run, "train/loss") == {s: loss(s) for s in range(STEPS)}
    assert _series(run, "train/reward") == {s: reward(s) for s in range(STEPS)}
    assert _series(run, "train/kl") == {s: kl(s) for s in range(STEPS)}
    assert Metric.objects.filter(series__run=run).count() == 3 * STEPS
    assert run.config["args"] == {"learning_rate": 0.001, "per_device_train_batch_size": 4}
    assert run.summary["sample"] == "3+3 = 6"
    assert run.summary["text"] == {"sample": {"3": "<b>2+2</b> = 4", "5": "3+3 = 6"}}
    assert run.started_at is not None and run.finished_at is not None


def test_manage_py_import_of_a_logdir(logdir: Path, team: Any) -> None:
    assert detect(logdir).format == "tensorboard"
    out, err = io.StringIO(), io.StringIO()
    call_command("import", str(logdir), "--project", team.project.slug, stdout=out, stderr=err)
    assert {r.name for r in Run.objects.all()} == {"runs/policy", "runs/baseline"}
    _check_policy(Run.objects.get(name="runs/policy"))
    assert _series(Run.objects.get(name="runs/baseline"), "train/loss") == {7: 2.5}
    assert "histogram (weights)" in out.getvalue() + err.getvalue()  # said, not dropped silently
    call_command("import", str(logdir), "--project", team.project.slug, stdout=io.StringIO(), stderr=io.StringIO())
    assert Run.objects.count() == 2 and Metric.objects.count() == 3 * STEPS + 1  # nothing doubled


def test_one_run_folder_and_one_file(logdir: Path, do_import: Any) -> None:
    folder = logdir / "runs" / "policy"
    report = do_import(folder)
    assert report.format == "tensorboard"
    _check_policy(Run.objects.get(name="policy"))
    report = do_import(_event_file(folder))  # the file alone is the same run
    assert report.format == "tensorboard" and Run.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_deeprepo_import_cli(logdir: Path, team: Any, live_server: Any, capsys: Any) -> None:
    from deeprepo_client.cli import main

    assert main(["--url", live_server.url, "--api-key", team.key, "import", str(logdir)]) == 0, \
        capsys.readouterr().err
    assert "2 run(s)" in capsys.readouterr().out
    _check_policy(Run.objects.get(project=team.project, name="runs/policy"))


def _records(data: bytes) -> list[int]:
    """Offsets of the records of an event file (framing read by hand: length at each offset)."""
    offsets, pos = [], 0
    while pos < len(data):
        offsets.append(pos)
        pos += 12 + int.from_bytes(data[pos:pos + 8], "little") + 4
    return offsets


@pytest.mark.parametrize("where", ["data", "length"])
def test_a_damaged_record_is_reported_with_file_and_byte_and_the_rest_kept(logdir: Path, do_import: Any,
                                                                             where: str) -> None:
    path = _event_file(logdir / "runs" / "policy")
    data = bytearray(path.read_bytes())
    offsets = _records(bytes(data))
    # records: file_version, args text, then two a step (simple_value, then the tensor pair)
    target = offsets[4]  # step 1's simple_value
    data[target + (20 if where == "data" else 3)] ^= 0xFF
    path.write_bytes(bytes(data))
    report = do_import(logdir / "runs" / "policy")
    [problem] = [p for p in report.problems if "checksum" in p["message"]]
    assert problem["file"].endswith(path.name) and f"byte {target}:" in problem["message"]
    run = Run.objects.get()
    assert _series(run, "train/loss") == {s: loss(s) for s in range(STEPS) if s != 1}
    assert _series(run, "train/reward") == {s: reward(s) for s in range(STEPS)}  # the rest kept
    assert run.summary["sample"] == "3+3 = 6"


def test_a_file_cut_short_keeps_every_whole_record(logdir: Path, do_import: Any) -> None:
    path = _event_file(logdir / "runs" / "policy")
    data = path.read_bytes()
    offsets = _records(data)
    path.write_bytes(data[:offsets[5] + 17])  # inside step 1's tensor record
    report = do_import(logdir / "runs" / "policy")
    assert any(f"byte {offsets[5]}:" in p["message"] and "cut short" in p["message"] for p in report.problems)
    run = Run.objects.get()
    assert _series(run, "train/loss") == {0: loss(0), 1: loss(1)}
    assert _series(run, "train/reward") == {0: reward(0)}


def test_pure_python_crc32c_matches_the_c_one() -> None:
    rng = random.Random(7)
    for size in (0, 1, 8, 100, 4097):
        data = bytes(rng.getrandbits(8) for _ in range(size))
        assert _crc32c_py(data) == crc32c(data)
    assert _crc32c_py(b"123456789") == 0xE3069283  # the CRC-32C check value
