"""Hugging Face Trackio projects: `<project>.db` (SQLite), alone or in a Trackio folder.

Tables read: `configs` (one row a run: its config; Trackio adds `_Username`, `_Created`, `_Group`),
`metrics` (one row a log call: step, timestamp, a JSON blob of values in which NaN / Infinity are
the strings "NaN" / "Infinity", and tables as {"_type": "trackio.table", "_value": [row dicts]}),
`traces` (OpenAI-style messages, metadata such as the reward, spans with token usage). The
database is opened read-only: the project may still be logging.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from ..records import Event, MetricPoint, Problem, RolloutRecord, RunEvent, RunRecord
from ._batches import batch_points, batch_rollouts
from ._chat import last_assistant_text, messages_to_turns
from ._values import num, short_hash
from .wandb_tables import rows_rollouts

SQLITE = b"SQLite format 3\x00"
_SPECIAL = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
_TRACKIO_KEYS = ("_Username", "_Created", "_Group")


def _tables(db: Path) -> set[str]:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error:
        return set()


def is_project(path: Path) -> bool:
    """A Trackio database, a folder holding one, or a folder holding its Parquet export (detection)."""
    if path.is_dir() and _exports(path):
        return True
    dbs = [path] if path.is_file() else sorted(path.glob("*.db"))
    for db in dbs[:5]:
        try:
            with open(db, "rb") as f:
                if f.read(16) != SQLITE:
                    continue
        except OSError:
            continue
        if {"metrics", "configs"} <= _tables(db):
            return True
    return False


def _json(blob: Any) -> Any:
    if isinstance(blob, bytes):
        blob = blob.decode("utf-8", "replace")
    try:
        return json.loads(blob) if isinstance(blob, str) else blob
    except ValueError:
        return None


def _time(text: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(text)).timestamp()
    except ValueError:
        return None


def _runs(configs: Iterable[tuple[str, str, Any, Any]], names: Iterable[tuple[str, str]],
          project: str) -> dict[str, RunRecord]:
    """Runs from (run_id, run_name, config, created_at) rows and the (run_id, run_name) of metric rows."""
    runs: dict[str, RunRecord] = {}
    for run_id, name, config_blob, created in configs:
        config = _json(config_blob) or {}
        group = config.get("_Group")
        runs[run_id] = {"name": name, "source": "trackio", "external_id": f"{project}/{run_id}"[:200],
                        "config": {k: v for k, v in config.items() if k not in _TRACKIO_KEYS},
                        "tags": [f"group={group}"] if group else [], "status": "finished",
                        "started_at": _time(config.get("_Created") or created),
                        "model": str(config.get("model") or "")[:500]}
    for run_id, name in names:
        runs.setdefault(run_id, {"name": name, "source": "trackio", "external_id": f"{project}/{run_id}"[:200]})
    return runs


def _value(value: Any) -> float | None:
    if isinstance(value, str):
        return _SPECIAL.get(value)
    return float(value) if isinstance(value, int | float) else None


def _metrics(rows: Iterable[tuple[Any, int, Any, Any]], db: Path, run_id: str,
             tables: list[RolloutRecord | Problem]) -> Iterator[MetricPoint | Problem]:
    """Points of (id, step, timestamp, values) rows; tables found among the values go to `tables`."""
    for row_id, step, stamp, blob in rows:
        values = _json(blob)
        if not isinstance(values, dict):
            yield Problem(str(db), None, f"metrics row {row_id}: the metrics column is not a JSON object")
            continue
        point: MetricPoint = {"step": int(step), "values": {}}
        for key, value in values.items():
            if isinstance(value, dict) and value.get("_type") == "trackio.table":
                cells = [r for r in value.get("_value") or [] if isinstance(r, dict)]
                columns = list(dict.fromkeys(k for r in cells for k in r))
                tables.extend(rows_rollouts(columns, [[r.get(c) for c in columns] for r in cells],
                                            f"{db}:metrics/{row_id}", key, int(step), run_id, db.parent))
            elif (v := _value(value)) is not None or value is None:
                point["values"][key] = v
        if point["values"]:
            if (t := _time(stamp)) is not None:
                point["time"] = t
            yield point


def _traces(rows: Iterable[tuple[Any, ...]]) -> Iterator[RolloutRecord]:
    """Rollouts of (id, step, key, messages, metadata, spans) rows."""
    for trace_id, step, key, messages, metadata, spans in rows:
        msgs = _json(messages) or []
        meta = _json(metadata) or {}
        turns = messages_to_turns(msgs)
        users = [t.get("content") or "" for t in turns if t.get("role") == "user"]
        usage = [s.get("usage") or {} for s in _json(spans) or [] if isinstance(s, dict)]
        record: RolloutRecord = {
            "uid": f"trackio-{short_hash(trace_id, n=32)}", "step": int(step),
            "example_key": str(meta.get("example_id") or meta.get("task_id") or "prompt:" + short_hash(*users, n=32)),
            "prompt": [m for m in msgs if isinstance(m, dict) and m.get("role") in ("system", "user")][:4],
            "reward": num(meta.get("reward")), "turns": turns, "final_answer": last_assistant_text(turns),
            "metrics": {"trackio_key": key, **{k: v for k, v in meta.items() if isinstance(v, int | float | str)}},
        }
        tokens_in = sum(u.get("prompt_tokens") or 0 for u in usage)
        tokens_out = sum(u.get("completion_tokens") or 0 for u in usage)
        if tokens_in or tokens_out:
            record["input_tokens"], record["output_tokens"] = tokens_in or None, tokens_out or None
        yield record


_METRICS_SQL = "SELECT id, step, timestamp, metrics FROM metrics WHERE run_id = ? ORDER BY step, id"
_TRACES_SQL = "SELECT id, step, key, messages, metadata, spans FROM traces WHERE run_id = ? ORDER BY step, id"


def _project(db: Path) -> Iterator[Event]:
    project = db.stem
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        yield Problem(str(db), None, f"cannot open the Trackio database: {exc}", fatal=True)
        return
    try:
        has_traces = "traces" in _tables(db)
        runs = _runs(conn.execute("SELECT run_id, run_name, config, created_at FROM configs ORDER BY id"),
                     conn.execute("SELECT DISTINCT run_id, run_name FROM metrics"), project)
        for run_id, record in runs.items():
            yield RunEvent(run_id, record)
            tables: list[RolloutRecord | Problem] = []
            yield from batch_points(run_id, _metrics(conn.execute(_METRICS_SQL, (run_id,)), db, run_id, tables))
            yield from batch_rollouts(run_id, tables)
            if has_traces:
                yield from batch_rollouts(run_id, _traces(conn.execute(_TRACES_SQL, (run_id,))))
    except sqlite3.Error as exc:
        yield Problem(str(db), None, f"the Trackio database could not be read to the end: {exc}")
    finally:
        conn.close()


_ROW_KEYS = {"id", "run_id", "run_name", "timestamp", "step", "log_id", "space_id", "created_at"}


def _parquet_rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def _project_parquet(main: Path) -> Iterator[Event]:
    """The Parquet export (`<project>.parquet`, `_configs`, `_traces`): one column a metric or
    config key, so a key a run never logged is null there and is left out."""
    project = main.stem
    try:
        metrics = _parquet_rows(main)
        configs = _parquet_rows(main.with_name(f"{project}_configs.parquet"))
        traces = _parquet_rows(main.with_name(f"{project}_traces.parquet"))
    except Exception as exc:  # noqa: BLE001 - no pyarrow, or a broken file: said, nothing half-read
        yield Problem(str(main), None, f"cannot read the Trackio Parquet export: {type(exc).__name__}: {exc}",
                      fatal=True)
        return

    def own(row: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in row.items() if k not in _ROW_KEYS and v is not None}

    runs = _runs([(c["run_id"], c["run_name"], own(c), c.get("created_at")) for c in configs],
                 [(m["run_id"], m["run_name"]) for m in metrics], project)
    for run_id, record in runs.items():
        yield RunEvent(run_id, record)
        tables: list[RolloutRecord | Problem] = []
        rows = sorted(((m["id"], m["step"], m["timestamp"], own(m)) for m in metrics if m["run_id"] == run_id),
                      key=lambda r: (r[1], r[0]))
        yield from batch_points(run_id, _metrics(rows, main, run_id, tables))
        yield from batch_rollouts(run_id, tables)
        yield from batch_rollouts(run_id, _traces((t["id"], t["step"], t["key"], t["messages"], t["metadata"],
                                                   t.get("spans")) for t in traces if t["run_id"] == run_id))


def parse(path: Path, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    dbs = [path] if path.is_file() and path.suffix != ".parquet" else \
        [db for db in sorted(path.glob("*.db")) if is_project(db)] if path.is_dir() else []
    exports = [] if dbs else ([path] if path.suffix == ".parquet" else _exports(path))
    if not dbs and not exports:
        yield Problem(str(path), None, "no Trackio database (<project>.db) or Parquet export here", fatal=True)
    for db in dbs:
        yield from _project(db)
    for main in exports:
        yield from _project_parquet(main)


def _exports(path: Path) -> list[Path]:
    if not path.is_dir():
        return []
    return [p for p in sorted(path.glob("*.parquet"))
            if p.with_name(f"{p.stem}_configs.parquet").is_file()]
