"""SWE-bench harness results: the run summary `<model>.<run_id>.json` and per-instance `report.json` files.

Both attach rewards to rollouts the server already has (RewardsEvent, matched by instance id) and
also carry minimal rollouts so the server can create an eval run when nothing matches.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..records import Event, Problem, RewardsEvent, RolloutRecord, RolloutsEvent, RunEvent, RunRecord
from ._batches import ROLLOUT_BATCH
from ._json import load_json
from ._patches import patch_touches_tests
from ._values import short_hash

# id list -> (reward, status label); the first list an instance appears in wins
_LISTS = (("resolved_ids", 1.0, "resolved"), ("unresolved_ids", 0.0, "unresolved"),
          ("error_ids", 0.0, "error"), ("empty_patch_ids", 0.0, "empty_patch"),
          ("incomplete_ids", None, "incomplete"))


def _emit(ref: str, ident: str, entries: list[tuple[str, dict[str, Any]]]) -> Iterator[Event]:
    for i in range(0, len(entries), ROLLOUT_BATCH):
        chunk = entries[i:i + ROLLOUT_BATCH]
        yield RewardsEvent(ref, {k: v for k, v in chunk})
        rollouts: list[RolloutRecord] = []
        for key, v in chunk:
            r: RolloutRecord = {"uid": short_hash("swebench", ident, key, n=32), "example_key": key, "sample_index": 0,
                                "reward": v.get("reward"), "reward_components": v.get("reward_components", {}),
                                "metrics": v.get("metrics", {})}
            if v.get("final_answer"):
                r["final_answer"] = v["final_answer"]
            rollouts.append(r)
        yield RolloutsEvent(ref, rollouts)


def split_model_run(stem: str) -> tuple[str, str]:
    """`<model>.<run_id>` as the harness names its summary. Model names carry dots in their versions
    (`TinyLlama-1.1B-Chat-v1.0`, `gpt-4.1`): the run id starts after the last dot not followed by a digit."""
    cut = max((i for i, c in enumerate(stem) if c == "." and not stem[i + 1:i + 2].isdigit()), default=-1)
    if cut <= 0:
        model, _, run_id = stem.rpartition(".")
        return (model, run_id) if model else (stem, "")
    return stem[:cut], stem[cut + 1:]


def parse_summary(path: Path, *, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    data, problem = load_json(path)
    if problem or not isinstance(data, dict):
        yield problem or Problem(str(path), None, "not a SWE-bench run summary", fatal=True)
        return
    stem = path.name.removesuffix(".json")
    model, run_id = split_model_run(stem)
    counts = {k: v for k, v in data.items() if not isinstance(v, list)}
    run: RunRecord = {"name": stem, "kind": "eval", "source": "swebench", "status": "finished", "model": model,
                      "external_id": stem, "summary": counts, "config": {"run_id": run_id}}
    if "unremoved_images" in data:
        run["summary"]["unremoved_images"] = len(data["unremoved_images"] or [])
    ref = "eval"
    yield RunEvent(ref, run)
    by_key: dict[str, dict[str, Any]] = {}
    for list_name, reward, label in _LISTS:
        for iid in data.get(list_name) or []:
            if str(iid) in by_key:
                continue
            by_key[str(iid)] = {"reward": reward, "reward_components": {}, "metrics": {"status": label}}
    for iid in data.get("submitted_ids") or data.get("completed_ids") or []:
        by_key.setdefault(str(iid), {"reward": None, "reward_components": {}, "metrics": {"status": "submitted"}})
    yield from _emit(ref, stem, list(by_key.items()))


def _fraction(block: Any) -> float | None:
    if not isinstance(block, dict):
        return None
    ok, bad = len(block.get("success") or []), len(block.get("failure") or [])
    return ok / (ok + bad) if ok + bad else None


def report_entry(rep: dict[str, Any], patch: str | None) -> dict[str, Any]:
    comps: dict[str, float] = {}
    metrics: dict[str, Any] = {k: rep[k] for k in ("patch_is_None", "patch_exists", "patch_successfully_applied")
                               if k in rep}
    ts = rep.get("tests_status")
    if isinstance(ts, dict):
        for name in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            f = _fraction(ts.get(name))
            if f is not None:
                comps[name] = f
        for name in ("FAIL_TO_FAIL", "PASS_TO_FAIL"):
            f = _fraction(ts.get(name))
            if f is not None:
                metrics[name] = f
        metrics["tests_status"] = ts
    if patch is not None:
        metrics["touches_tests"] = patch_touches_tests(patch)
    entry: dict[str, Any] = {"reward": 1.0 if rep.get("resolved") else 0.0, "reward_components": comps, "metrics": metrics}
    if patch:
        entry["final_answer"] = patch
    return entry


def parse_reports(path: Path, *, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    files = sorted(path.rglob("report.json")) if path.is_dir() else [path]
    root = path if path.is_dir() else path.parent
    ref = "eval"
    # logs/run_evaluation/<run_id>/<model>/<instance>/report.json -> name the run <model>.<run_id>
    parts = files[0].relative_to(root).parts if files else ()
    if len(parts) >= 4:
        model, name = parts[-3], f"{parts[-3]}.{parts[-4]}"
    elif files and files[0].parent != root:
        model = files[0].parent.parent.name
        name = f"{model}.{files[0].parent.parent.parent.name}"
    else:
        model, name = split_model_run(root.name)[0], root.name
    yield RunEvent(ref, {"name": name, "kind": "eval", "source": "swebench", "status": "finished",
                         "external_id": name, "model": model})
    entries: list[tuple[str, dict[str, Any]]] = []
    for f in files:
        data, problem = load_json(f)
        if problem or not isinstance(data, dict):
            yield problem or Problem(str(f), None, "not a report object")
            continue
        patch_file = f.parent / "patch.diff"
        patch = patch_file.read_text(errors="replace") if patch_file.exists() else None
        for iid, rep in data.items():
            if isinstance(rep, dict):
                entries.append((str(iid), report_entry(rep, patch)))
        if len(entries) >= ROLLOUT_BATCH:
            yield from _emit(ref, name, entries)
            entries = []
    yield from _emit(ref, name, entries)


def looks_like_summary(keys: set[str]) -> bool:
    return bool(keys & {"resolved_ids", "unresolved_ids"}) and bool(keys & {"schema_version", "error_ids", "submitted_ids",
                                                                           "completed_ids", "total_instances"})
