"""Run names come from what the files say when the folder says nothing (`out`, `trl`, an upload's
hash); SWE-agent example keys are instance ids. Real sample files where they exist."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from deeprepo_client.formats import parse
from deeprepo_client.records import RunEvent


def _runs(path: Path) -> list[dict[str, Any]]:
    return [dict(ev.run) for ev in parse(path) if isinstance(ev, RunEvent)]


def _rollouts(path: Path) -> list[dict[str, Any]]:
    return [r for ev in parse(path) for r in getattr(ev, "rollouts", [])]


def test_a_verifiers_upload_is_named_from_its_metadata(samples: Path, tmp_path: Path) -> None:
    upload = tmp_path / "3f9a2b7c1d4e5f60718293a4b5c6d7e8"  # an upload folder: the files' content hash
    shutil.copytree(samples / "verifiers_eval" / "math-python--gpt-4.1-mini__578769a7", upload)
    [run] = _runs(upload)
    assert run["name"] == "math-python · gpt-4.1-mini · 2025-09-30 00:47"
    assert run["external_id"] == "math-python--gpt-4.1-mini--3f9a2b7c1d4e5f60718293a4b5c6d7e8"  # unchanged
    [kept] = _runs(samples / "verifiers_eval" / "math-python--gpt-4.1-mini__578769a7")
    assert kept["name"] == "math-python--gpt-4.1-mini__578769a7"  # a telling folder name stays


def test_trl_out_folder_is_named_from_the_state(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    state = {"global_step": 500, "best_model_checkpoint": "/runs/qwen2-grpo-gsm8k/checkpoint-500",
             "log_history": [{"step": 1, "loss": 0.5}]}
    (out / "trainer_state.json").write_text(json.dumps(state))
    [run] = _runs(out)
    assert run["name"] == "qwen2-grpo-gsm8k" and run["external_id"] == "out"
    hashed = tmp_path / "uploads" / "9b1c2d3e4f5a6b7c"
    hashed.mkdir(parents=True)
    (hashed / "trainer_state.json").write_text(json.dumps({"global_step": 12, "log_history": []}))
    assert _runs(hashed)[0]["name"] == "trl-grpo · step 12"


def test_swe_agent_names_and_instance_keys(samples: Path, tmp_path: Path) -> None:
    [run] = _runs(samples / "swe_agent" / "pydicom__pydicom-1458.traj")
    assert run["name"] == "swe-agent · pydicom__pydicom-1458"  # the folder was "swe_agent"
    # SWE-agent's tool-calling config names trajectories <instance>.function_calling.traj
    folder = tmp_path / "default__gpt-4o__t-0.00"
    folder.mkdir()
    shutil.copy(samples / "swe_agent" / "pydicom__pydicom-1458.traj",
                folder / "pydicom__pydicom-1458.function_calling.traj")
    [rollout] = _rollouts(folder)
    assert rollout["example_key"] == "pydicom__pydicom-1458"
    assert _runs(folder)[0]["name"] == "default__gpt-4o__t-0.00"


def test_demo_rollout_duration_is_the_time_its_turns_take() -> None:
    import numpy as np

    from workers.demo_grpo import TrainConfig, train

    records: list[dict[str, Any]] = []

    class Sink:
        def log(self, values: dict[str, Any], step: int | None = None) -> None:
            pass

        def log_rollouts(self, rollouts: list[Any]) -> None:
            records.extend(rollouts)

    train(TrainConfig(steps=1, examples_per_step=2, rollouts_per_example=2, evals=False), Sink(), out=lambda _: None)
    assert records
    for r in records:
        spent = sum(t.get("latency") or 0 for t in r["turns"]) + sum(
            c.get("duration") or 0 for t in r["turns"] for c in t.get("tool_calls") or [])
        assert r["duration"] >= spent > 0.3 * len(r["turns"]), (r["duration"], spent)
    assert np.isfinite([r["duration"] for r in records]).all()
