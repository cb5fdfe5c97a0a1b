"""W&B offline runs written by the real `wandb` package, imported through the server importer:
every logged value, the custom x-axis, config, summary, tags, the table as rollouts; a truncated
and a corrupted `.wandb` report where and import the rest; the shared samples (0.31 and 0.17.9)."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from deeprepo_web.runs.models import Metric, MetricSeries, Rollout, Run
from tests.importers.writers.wandb_offline import STEPS, kl, reward

# Writing runs with wandb (setup) counts toward the test's timeout.
pytestmark = pytest.mark.timeout(600)

WRITER = Path(__file__).parent / "writers" / "wandb_offline.py"


def _series(run: Run, key: str) -> dict[int, float]:
    return dict(Metric.objects.filter(series__run=run, series__key=key).values_list("step", "value"))


@pytest.fixture(scope="module")
def wandb_dir(tmp_path_factory: Any) -> Path:
    root = tmp_path_factory.mktemp("wandb-runs")
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_DIR": str(root), "WANDB_SILENT": "true",
           "WANDB_DISABLE_GIT": "true"}
    for name in ("policy-a", "policy-b"):
        done = subprocess.run([sys.executable, str(WRITER), name], env=env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr[-3000:]
    return root / "wandb"


def _check_run(run: Run, name: str) -> None:
    assert (run.name, run.source, run.status, run.model) == (name, "wandb", "finished", "tiny-policy")
    assert run.started_at and run.finished_at and run.finished_at >= run.started_at
    assert sorted(run.tags) == ["grpo", "import"] and run.notes == "written offline"
    assert {k: run.config[k] for k in ("lr", "model", "rollout")} == {"lr": 0.001, "model": "tiny-policy",
                                                                       "rollout": {"n": 2}}
    assert run.config["_wandb"]["x_axes"] == {"eval/*": "eval/step"}
    rewards = _series(run, "train/reward")
    assert rewards == {s: reward(s) for s in range(1, STEPS + 1)}
    kls = _series(run, "train/kl")
    assert sorted(kls) == list(range(1, STEPS + 1)) and math.isnan(kls[7])
    assert all(kls[s] == kl(s) for s in kls if s != 7)
    # eval/acc is on its own x-axis: eval/step 1..4, not the training steps 5..20
    assert _series(run, "eval/acc") == {i: 5 * i / 100 for i in range(1, STEPS // 5 + 1)}
    assert _series(run, "eval/step") == {5 * i: i for i in range(1, STEPS // 5 + 1)}
    assert run.summary["train/reward"] == {"max": reward(STEPS)} and run.summary["best_eval"] == 0.2
    rollouts = list(Rollout.objects.filter(run=run).select_related("example").order_by("id"))
    assert [(r.step, r.example.key, r.sample_index, r.reward, r.final_answer) for r in rollouts] == [
        (10, "What is 2+2?", 0, 1.0, "4"), (10, "What is 2+2?", 1, 0.0, "<b>5</b>"),
        (10, "Capital of France?", 0, 1.0, "Paris")]
    assert [t.role for t in rollouts[1].turns.order_by("index")] == ["user", "assistant"]


def test_whole_wandb_folder_imports_every_value(wandb_dir: Path, do_import: Any) -> None:
    report = do_import(wandb_dir)
    assert not report.problems, report.problems
    assert len(report.runs) == 2
    for name in ("policy-a", "policy-b"):
        _check_run(Run.objects.get(name=name), name)
    # a re-import doubles nothing
    do_import(wandb_dir)
    assert Run.objects.count() == 2 and Rollout.objects.count() == 6
    assert Metric.objects.filter(series__key="train/reward").count() == 2 * STEPS


def test_one_run_folder(wandb_dir: Path, do_import: Any) -> None:
    folder = next(wandb_dir.glob("offline-run-*"))
    report = do_import(folder)
    assert not report.problems and len(report.runs) == 1
    run = Run.objects.get()
    _check_run(run, run.name)


def _log_copy(wandb_dir: Path, tmp_path: Path) -> Path:
    src = next(wandb_dir.glob("offline-run-*"))
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    return next(dst.glob("run-*.wandb"))


def test_truncated_log_reports_where_and_keeps_the_rest(wandb_dir: Path, do_import: Any, tmp_path: Path) -> None:
    log = _log_copy(wandb_dir, tmp_path)
    data = log.read_bytes()
    log.write_bytes(data[: len(data) * 2 // 3])
    report = do_import(log.parent)
    assert any("cut short" in p for p in map(str, report.problems)), report.problems
    run = Run.objects.get()
    assert run.status == "crashed"  # the exit record was in the lost part
    got = _series(run, "train/reward")
    assert 50 < len(got) < STEPS and all(got[s] == reward(s) for s in got)


def test_corrupt_block_reports_its_offset_and_the_rest_imports(wandb_dir: Path, do_import: Any, tmp_path: Path) -> None:
    log = _log_copy(wandb_dir, tmp_path)
    data = bytearray(log.read_bytes())
    assert len(data) > 40_000, "the run should span two 32 KiB blocks"
    data[20_000] ^= 0xFF  # inside the first block, after the run record
    log.write_bytes(bytes(data))
    report = do_import(log.parent)
    problems = [str(p) for p in report.problems]
    assert any("checksum mismatch; skipped to the next block" in p and "byte " in p for p in problems), problems
    run = Run.objects.get()
    assert run.status == "finished" and run.config["lr"] == 0.001
    got = _series(run, "train/reward")
    assert got and len(got) < STEPS and all(got[s] == reward(s) for s in got)
    assert STEPS in got  # history after the damaged block is there


@pytest.mark.parametrize("folder", ["offline-run-20261123_115534-mr11x276", "legacy-0.17.9"])
def test_shared_samples_031_and_0179(samples: Path, do_import: Any, folder: str) -> None:
    report = do_import(samples / "wandb" / folder)
    assert not report.problems, report.problems
    run = Run.objects.get()
    assert (run.name, run.status, sorted(run.tags)) == ("qwen0.5b-grpo-seed0", "finished", ["dev", "grpo"])
    assert MetricSeries.objects.get(run=run, key="train/reward").count == 60
    assert sorted(_series(run, "eval/accuracy")) == [1, 2, 3, 4, 5, 6]
    assert Rollout.objects.filter(run=run).count() == 12
    assert sorted(set(Rollout.objects.filter(run=run).values_list("step", flat=True))) == [1, 30, 60]
    assert run.summary["best_eval_accuracy"] == run.summary["eval/accuracy"]


def test_cloud_export_parquet_history_and_tables(do_import: Any, tmp_path: Path) -> None:
    # W&B's cloud cannot be reached from here: the downloaded export is laid out by the test as the
    # `wandb-history` artifact and the run files are (Parquet with _step, _timestamp, one column a key).
    import pyarrow as pa
    import pyarrow.parquet as pq

    run = tmp_path / "grpo-cloud-run"
    (run / "history").mkdir(parents=True)
    steps = list(range(1, 101))
    pq.write_table(pa.table({"_step": steps, "_timestamp": [1.8e9 + s for s in steps], "_runtime": steps,
                             "train/reward": [reward(s) for s in steps],
                             "eval/acc": [s / 100 if s % 10 == 0 else None for s in steps]}),
                   run / "history" / "0000.parquet")
    (run / "config.yaml").write_text("_wandb:\n  value: {}\nlr:\n  desc: null\n  value: 0.002\n")
    (run / "wandb-summary.json").write_text('{"train/reward": 5.0, "_step": 100}')
    (run / "media").mkdir()
    (run / "media" / "samples.table.json").write_text(
        '{"columns": ["global_step", "text", "reward"], "data": [[100, "a completion", 0.5]]}')
    report = do_import(run)
    assert report.format == "wandb_export" and not report.problems, report.problems
    stored = Run.objects.get()
    assert (stored.name, stored.config, stored.summary) == ("grpo-cloud-run", {"lr": 0.002}, {"train/reward": 5.0})
    assert _series(stored, "train/reward") == {s: reward(s) for s in steps}
    assert _series(stored, "eval/acc") == {s: s / 100 for s in steps if s % 10 == 0}
    [(step, reward_value, answer)] = Rollout.objects.values_list("step", "reward", "final_answer")
    assert (step, reward_value, answer) == (100, 0.5, "a completion")


@pytest.mark.django_db(transaction=True)
def test_deeprepo_import_cli_sends_a_wandb_folder(wandb_dir: Path, team: Any, live_server: Any, capsys: Any) -> None:
    from deeprepo_client.cli import main

    assert main(["--url", live_server.url, "--api-key", team.key, "import", str(wandb_dir)]) == 0, \
        capsys.readouterr().err
    assert "2 run(s)" in capsys.readouterr().out
    for name in ("policy-a", "policy-b"):
        run = Run.objects.get(project=team.project, name=name)
        assert run.status == "finished" and run.summary["best_eval"] == 0.2
        assert _series(run, "train/reward") == {s: reward(s) for s in range(1, STEPS + 1)}
        assert _series(run, "eval/acc") == {i: 5 * i / 100 for i in range(1, STEPS // 5 + 1)}
        assert Rollout.objects.filter(run=run).count() == 3


def test_a_cut_log_never_downgrades_the_complete_run(samples: Path, do_import: Any, tmp_path: Path) -> None:
    """Issue 25 item 3: a cut `.wandb` re-imported over a finished run leaves it finished, and says so."""
    src = samples / "wandb" / "offline-run-20261123_115534-mr11x276"
    assert not do_import(src).problems
    before = Run.objects.get()
    assert before.status == "finished" and before.finished_at
    cut = tmp_path / src.name
    shutil.copytree(src, cut)
    log = next(cut.glob("run-*.wandb"))
    data = log.read_bytes()
    log.write_bytes(data[: len(data) // 2])
    report = do_import(cut)
    after = Run.objects.get()
    assert (after.status, after.finished_at, after.started_at) == ("finished", before.finished_at, before.started_at)
    assert after.summary == before.summary  # the cut file's older summary does not replace the final one
    messages = [p["message"] for p in report.problems]
    assert any("cut short" in m for m in messages), messages
    assert any("kept its status 'finished'" in m for m in messages), messages
    assert MetricSeries.objects.get(run=after, key="train/reward").count == 60


@pytest.mark.parametrize("folder", ["legacy-0.17.9", "offline-run-20261123_115534-mr11x276"])
def test_deeprepo_import_keeps_the_runs_own_times(samples: Path, team: Any, live_server: Any, capsys: Any,
                                                  folder: str) -> None:
    """Issue 25 item 5: a run sent by `deeprepo import` starts and ends when its file says, not at the import."""
    from datetime import UTC, datetime

    from deeprepo_client.cli import main
    from deeprepo_client.formats import parse
    from deeprepo_client.records import RunEvent

    [record] = [e.run for e in parse(samples / "wandb" / folder) if isinstance(e, RunEvent)]
    assert main(["--url", live_server.url, "--api-key", team.key, "import", str(samples / "wandb" / folder)]) == 0, \
        capsys.readouterr().err
    run = Run.objects.get(project=team.project)
    assert run.status == "finished"
    assert run.started_at == datetime.fromtimestamp(record["started_at"], tz=UTC)
    assert run.finished_at == datetime.fromtimestamp(record["finished_at"], tz=UTC)
    assert run.started_at.year == 2026 and run.started_at.month == 11 and run.started_at.day == 23
