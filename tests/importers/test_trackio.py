"""Trackio: a project written by the real `trackio` package, imported with every value (NaN kept),
its table as rollouts and its trace as a rollout with a tool call; and the shared sample."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from deeprepo_web.runs.models import Metric, Rollout, Run, ToolCall
from tests.importers.writers.trackio_write import STEPS, reward

pytestmark = pytest.mark.timeout(600)  # trackio writes the project during setup

WRITER = Path(__file__).parent / "writers" / "trackio_write.py"


@pytest.fixture(scope="module")
def trackio_dir(tmp_path_factory: Any) -> Path:
    root = tmp_path_factory.mktemp("trackio")
    done = subprocess.run([sys.executable, str(WRITER), "grpo-trackio"], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "TRACKIO_DIR": str(root)}, cwd=root)
    assert done.returncode == 0, done.stderr[-3000:]
    return root


def _series(run: Run, key: str) -> dict[int, float]:
    return dict(Metric.objects.filter(series__run=run, series__key=key).values_list("step", "value"))


@pytest.mark.parametrize("which", ["folder", "database"])
def test_project_written_by_trackio(trackio_dir: Path, do_import: Any, which: str) -> None:
    report = do_import(trackio_dir if which == "folder" else trackio_dir / "grpo-trackio.db")
    assert not report.problems, report.problems
    run = Run.objects.get()
    assert (run.name, run.source, run.model) == ("trackio-run", "trackio", "tiny-policy")
    assert run.config == {"lr": 0.0005, "model": "tiny-policy"}
    assert _series(run, "train/reward") == {s: reward(s) for s in range(1, STEPS + 1)}
    loss = _series(run, "train/loss")
    assert sorted(loss) == list(range(1, STEPS + 1)) and math.isnan(loss[4])
    assert all(loss[s] == 1.0 / s for s in loss if s != 4)
    table = list(Rollout.objects.filter(run=run, metrics__table="samples").order_by("sample_index")
                 .values_list("step", "example__key", "sample_index", "reward", "final_answer"))
    assert table == [(5, "2+2?", 0, 1.0, "4"), (5, "2+2?", 1, 0.0, "5")]
    trace = Rollout.objects.get(run=run, step=10)
    assert trace.reward == 1.0 and trace.final_answer == "42"
    call = ToolCall.objects.get(rollout=trace)
    assert (call.name, call.arguments, call.output) == ("calc", {"e": "6*7"}, "42")
    do_import(trackio_dir)  # again: nothing doubles
    assert Rollout.objects.count() == 3 and Metric.objects.filter(series__key="train/reward").count() == STEPS


def test_shared_sample(samples: Path, do_import: Any) -> None:
    report = do_import(samples / "trackio" / "trackio_dir")
    assert not report.problems, report.problems
    run = Run.objects.get()
    assert run.name == "qwen0.5b-seed0" and run.config["rollout_n"] == 8
    assert len(_series(run, "train/reward")) == 50
    assert Rollout.objects.filter(run=run).count() == 10
    assert sorted(Rollout.objects.filter(run=run, uid__startswith="trackio-").values_list("step", flat=True)) == [10, 40]
    assert ToolCall.objects.filter(rollout__run=run, name="calculator").count() == 2


def test_parquet_export_alone(samples: Path, do_import: Any, tmp_path: Path) -> None:
    # A project synced to a dataset keeps only its Parquet export: the same run, values and rollouts.
    import shutil

    for f in (samples / "trackio" / "trackio_dir").glob("*.parquet"):
        shutil.copy(f, tmp_path / f.name)
    report = do_import(tmp_path)
    assert report.format == "trackio" and not report.problems, report.problems
    run = Run.objects.get()
    assert run.name == "qwen0.5b-seed0" and run.config == {"algorithm": "grpo", "seed": 0, "lr": 1e-6, "rollout_n": 8,
                                                           "model": "Qwen/Qwen2.5-0.5B-Instruct"}
    assert len(_series(run, "train/reward")) == 50
    assert Rollout.objects.filter(run=run).count() == 10
    assert ToolCall.objects.filter(rollout__run=run, name="calculator").count() == 2
    do_import(samples / "trackio" / "trackio_dir")  # the database of the same project: nothing doubles
    assert Run.objects.count() == 1 and Rollout.objects.count() == 10
