"""MLflow folders: `mlflow-export-import` exports of a run (`run.json` + `artifacts/`) or of an
experiment (`experiment.json` + one folder a run), and folders of traces saved as JSON
(`Trace.to_json()`: {"info", "data": {"spans"}}; the export tool itself exports no traces).

Tables logged with `mlflow.log_table` (listed in the `mlflow.loggedArtifacts` tag) become rollouts
when their columns look like prompt / completion / reward, as W&B tables do.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..records import Event, Problem, RolloutRecord, RunEvent
from ._batches import batch_points, batch_rollouts
from ._json import load_json
from .mlflow_common import logged_tables, metric_points, run_record, trace_rollout, trace_run_id
from .wandb_tables import table_rollouts


def _is_trace(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return head.lstrip().startswith(b"{") and b'"trace_id"' in head and b'"info"' in head


def is_export(path: Path, names: set[str]) -> bool:
    """A run or experiment export, or a folder of trace JSON files (for detection)."""
    if "experiment.json" in names or ("run.json" in names and (path / "artifacts").is_dir()):
        return True
    traces = [n for n in names if n.endswith(".json")]
    return bool(traces) and len(traces) == len(names) and _is_trace(path / sorted(traces)[0])


def _tables(run_dir: Path, tags: dict[str, Any], run_id: str) -> Iterator[RolloutRecord | Problem]:
    for rel in logged_tables(tags):
        table = (run_dir / "artifacts" / rel).resolve()
        if run_dir.resolve() in table.parents and table.is_file():
            yield from table_rollouts(table, run_dir, rel, 0, run_id)


def _run(run_dir: Path, experiment: str) -> Iterator[Event]:
    doc, problem = load_json(run_dir / "run.json")
    if problem is not None:
        yield problem
        return
    body = (doc or {}).get("mlflow") if isinstance(doc, dict) else None
    if not isinstance(body, dict) or not isinstance(body.get("info"), dict):
        yield Problem(str(run_dir / "run.json"), None, "expected {\"mlflow\": {\"info\", \"params\", \"metrics\", \"tags\"}} "
                                                        "(an mlflow-export-import run.json)")
        return
    info = body["info"]
    ref = info.get("run_id") or run_dir.name
    yield RunEvent(ref, run_record(info, body.get("params"), body.get("tags"), experiment))
    metrics = body.get("metrics") or {}
    histories = [(k, v) for k, v in metrics.items() if isinstance(v, list)] if isinstance(metrics, dict) else []
    yield from batch_points(ref, metric_points(histories))
    yield from batch_rollouts(ref, _tables(run_dir, body.get("tags") or {}, ref))


def _traces(folder: Path) -> Iterator[Event]:
    by_run: dict[str, list[RolloutRecord]] = {}
    for path in sorted(folder.glob("*.json")):
        doc, problem = load_json(path)
        if problem is not None:
            yield problem
            continue
        info = doc.get("info") if isinstance(doc, dict) else None
        spans = ((doc or {}).get("data") or {}).get("spans") if isinstance(doc, dict) else None
        if not isinstance(info, dict) or not isinstance(spans, list):
            yield Problem(str(path), None, "expected a trace {\"info\", \"data\": {\"spans\": [...]}}")
            continue
        record = trace_rollout(info, spans)
        if record is not None:
            by_run.setdefault(trace_run_id(info) or "traces", []).append(record)
    for run_id, rollouts in by_run.items():
        # the run's own id: imported into the run an export (or a pull) of that run made
        yield RunEvent(run_id, {"name": run_id, "source": "mlflow", "external_id": run_id if run_id != "traces" else ""})
        yield from batch_rollouts(run_id, rollouts)


def parse(path: Path, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    if (path / "experiment.json").is_file():
        doc, problem = load_json(path / "experiment.json")
        if problem is not None:
            yield problem
        exp = ((doc or {}).get("mlflow") or {}) if isinstance(doc, dict) else {}
        name = str((exp.get("experiment") or {}).get("name") or path.name)
        listed = [str(r) for r in exp.get("runs") or []]
        # a run folder the experiment's list leaves out is still a run of it: read, not skipped
        found = [p.name for p in sorted(path.iterdir()) if (p / "run.json").is_file() and p.name not in listed]
        for run_id in [*listed, *found]:
            run_dir = path / str(run_id)
            if (run_dir / "run.json").is_file():
                yield from _run(run_dir, name)
            else:
                yield Problem(str(path / "experiment.json"), None, f"run {run_id}: no folder {run_id}/run.json")
    elif (path / "run.json").is_file():
        yield from _run(path, "")
    else:
        yield from _traces(path)
