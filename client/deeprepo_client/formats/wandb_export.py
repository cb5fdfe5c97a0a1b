"""A W&B run downloaded from the cloud: its history as Parquet (the `wandb-history` artifact:
`_step`, `_timestamp`, `_runtime` and one column per metric) and its tables as `*.table.json`,
with the run's `config.yaml` / `wandb-summary.json` / `wandb-metadata.json` when they were
downloaded too. Reading Parquet needs pyarrow (`deeprepo-client[parquet]`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..records import Event, MetricPoint, Problem, RolloutRecord, RunEvent, RunRecord
from ._batches import batch_points, batch_rollouts
from ._json import load_json
from ._values import num
from .wandb_tables import table_rollouts


def _history_files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*.parquet") if p.is_file())


def is_export(path: Path, names: set[str]) -> bool:
    """A folder with Parquet history that has W&B's `_step` column (for detection)."""
    if not (any(n.endswith(".parquet") for n in names) or (path / "history").is_dir()):
        return False
    for f in _history_files(path)[:1]:
        try:
            import pyarrow.parquet as pq

            return "_step" in pq.read_schema(f).names
        except Exception:  # noqa: BLE001 - not Parquet, or no pyarrow: not ours to read
            return False
    return False


def _config(path: Path) -> tuple[dict[str, Any], Problem | None]:
    yaml_file = path / "config.yaml"
    if not yaml_file.is_file():
        return {}, None
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        return {}, Problem(str(yaml_file), None, "not read: reading config.yaml needs PyYAML (pip install pyyaml)")
    try:
        raw = yaml.safe_load(yaml_file.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        return {}, Problem(str(yaml_file), None, f"unreadable YAML: {exc}")
    if not isinstance(raw, dict):
        return {}, Problem(str(yaml_file), None, "expected a mapping of config keys")
    # config.yaml wraps every value: {key: {desc, value}}
    return {k: (v.get("value") if isinstance(v, dict) and "value" in v else v) for k, v in raw.items()
            if k != "_wandb"}, None


def _points(files: list[Path]) -> Iterator[MetricPoint | Problem]:
    import pyarrow.parquet as pq

    for f in files:
        try:
            table = pq.read_table(f)
        except Exception as exc:  # noqa: BLE001 - a broken file is reported, the others read
            yield Problem(str(f), None, f"unreadable Parquet: {exc}")
            continue
        for row in table.to_pylist():
            step = num(row.get("_step"))
            if step is None:
                continue
            values: dict[str, float | None] = {k: float(v) for k, v in row.items()
                      if not k.startswith("_") and isinstance(v, int | float) and not isinstance(v, bool)}
            if values:
                point: MetricPoint = {"step": int(step), "values": values}
                if num(row.get("_timestamp")) is not None:
                    point["time"] = float(row["_timestamp"])
                yield point


def _tables(path: Path, run_id: str) -> Iterator[RolloutRecord | Problem]:
    for f in sorted(path.rglob("*.table.json")):
        key = f.name[: -len(".table.json")]
        yield from table_rollouts(f, path, key, 0, run_id)


def parse(path: Path, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        yield Problem(str(path), None, "reading W&B Parquet history needs pyarrow: pip install 'deeprepo-client[parquet]'",
                      fatal=True)
        return
    meta, _ = load_json(path / "wandb-metadata.json")
    summary, _ = load_json(path / "wandb-summary.json")
    run_id = path.name
    config, problem = _config(path)
    record: RunRecord = {"name": path.name, "source": "wandb", "external_id": f"export/{run_id}",
                         "config": config, "status": "finished",
                         "summary": {k: v for k, v in (summary or {}).items() if not k.startswith("_")}
                         if isinstance(summary, dict) else {}}
    if isinstance(meta, dict) and meta.get("program"):
        record["notes"] = f"program: {meta['program']}"
    yield RunEvent(run_id, record)
    if problem is not None:
        yield problem
    yield from batch_points(run_id, _points(_history_files(path)))
    yield from batch_rollouts(run_id, _tables(path, run_id))

