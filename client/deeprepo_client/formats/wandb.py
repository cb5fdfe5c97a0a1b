"""Weights & Biases offline runs: `wandb/offline-run-*/run-<id>.wandb` (and a whole `wandb/` folder).

Everything lives in the binary record log (wandb 0.31 writes no config.yaml and no real summary
file): the run record (names, tags, notes, start), config updates, `define_metric` records, one
history record per `log` call, summaries, the exit code. The log is read twice: first all but the
history (so the run and its custom x-axes are known before any point), then the history.

Custom x-axes: a metric defined with `step_metric` (directly or by a glob such as `eval/*`) is
stored against the value of that metric in the same row, as W&B draws it, not against `_step`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..records import Event, MetricPoint, Problem, RolloutRecord, RunEvent, RunRecord
from ._batches import batch_points, batch_rollouts
from ._protowire import WireError
from ._values import num
from .wandb_log import Damage, is_wandb_log, records  # noqa: F401 (is_wandb_log: for detection)
from .wandb_media import batch_media, media_records, media_refs
from .wandb_records import ALL, record
from .wandb_tables import table_rollouts

_INTERNAL = ("_step", "_runtime", "_timestamp", "_wandb")
_HISTORY = frozenset({"history"})
_NOT_HISTORY = ALL - _HISTORY


def run_logs(path: Path) -> list[Path]:
    """The `.wandb` logs of a run folder, a `wandb/` folder of runs, or the log itself."""
    if path.is_file():
        return [path]
    own = sorted(path.glob("run-*.wandb"))
    if own:
        return own[-1:]  # a resumed run keeps one log per folder
    # `latest-run` is a symlink to one of the others
    runs = [run for run in sorted(path.glob("*run-*")) if run.is_dir() and not run.is_symlink()]
    return [log for run in runs for log in sorted(run.glob("run-*.wandb"))[-1:]]


def is_run_or_runs(path: Path, names: set[str]) -> bool:
    """A run folder (holds run-<id>.wandb) or a wandb/ folder of them (for detection)."""
    if any(n.startswith("run-") and n.endswith(".wandb") for n in names):
        return True
    return any(n.startswith(("offline-run-", "run-")) and (path / n).is_dir() and any((path / n).glob("run-*.wandb"))
               for n in names)


def _nest(items: list[tuple[list[str], Any]]) -> dict[str, Any]:
    """History / summary items into one row; ['rollouts', 'path'] goes under row['rollouts']."""
    row: dict[str, Any] = {}
    for path, value in items:
        target = row
        for part in path[:-1]:
            nxt = target.get(part)
            if not isinstance(nxt, dict):
                nxt = target[part] = {}
            target = nxt
        target[path[-1]] = value
    return row


class _Meta:
    """What the first pass finds: the run record, config, metric definitions, summary, exit."""

    def __init__(self) -> None:
        self.run: dict[str, Any] = {}
        self.config: dict[str, Any] = {}
        self.summary: dict[str, Any] = {}
        self.axis_exact: dict[str, str] = {}
        self.axis_globs: list[tuple[str, str]] = []
        self.exit_code: int | None = None

    def apply(self, kind: str, content: Any) -> None:
        if kind == "run":
            self.run = content
            self.config.update(_nest(content.get("config") or []))
            self.summary.update(_nest(content.get("summary") or []))
        elif kind in ("config", "summary"):
            target = self.config if kind == "config" else self.summary
            updates, removes = content
            target.update(_nest(updates))
            for path in removes:
                target.pop(path[0], None)
        elif kind == "metric" and content.get("step_metric"):
            if content.get("name"):
                self.axis_exact[content["name"]] = content["step_metric"]
            elif content.get("glob_name"):
                self.axis_globs.append((content["glob_name"], content["step_metric"]))
        elif kind == "exit":
            self.exit_code = content

    def axis(self, key: str, cache: dict[str, str | None]) -> str | None:
        if key not in cache:
            found = self.axis_exact.get(key) or next((a for g, a in self.axis_globs if fnmatch.fnmatchcase(key, g)), None)
            cache[key] = found if found != key else None
        return cache[key]


def _scan(log: Path, meta: _Meta | None, problems: list[Problem]) -> Iterator[tuple[int, Any]]:
    """Records of the log: with `meta`, every record but history goes into it; history is yielded."""
    for entry in records(log):
        if isinstance(entry, Damage):
            if meta is not None:
                problems.append(Problem(str(log), None, f"byte {entry.offset}: {entry.message}; skipped to the next block"))
            continue
        offset, buf = entry
        try:
            rec = record(buf, _NOT_HISTORY if meta is not None else _HISTORY)
        except (WireError, UnicodeDecodeError, ValueError) as exc:
            if meta is not None:
                problems.append(Problem(str(log), None, f"byte {offset}: record is not a W&B Record ({exc}); skipped"))
            continue
        if rec is None:
            continue
        if rec[0] == "history":
            if meta is None:
                yield offset, rec[1]
        elif meta is not None:
            meta.apply(*rec)


def _run_record(log: Path, meta: _Meta) -> RunRecord:
    info = meta.run
    config = {k: v for k, v in meta.config.items() if k != "_wandb"}
    wandb_info = {k: info[k] for k in ("run_id", "entity", "project", "group", "job_type", "host", "sweep_id")
                  if info.get(k)}
    axes = {**meta.axis_exact, **dict(meta.axis_globs)}
    if axes:
        wandb_info["x_axes"] = axes
    status = "crashed" if meta.exit_code is None else ("finished" if meta.exit_code == 0 else "failed")
    start, runtime = info.get("start_time"), num(meta.summary.get("_runtime"))
    end = start + runtime if start and runtime is not None and meta.exit_code is not None else None
    return {
        "name": info.get("display_name") or info.get("run_id") or log.parent.name,
        "status": status, "partial": meta.exit_code is None, "config": {**config, "_wandb": wandb_info}, "tags": list(info.get("tags") or []),
        "notes": info.get("notes") or "", "source": "wandb",
        "external_id": f"{info.get('project', '')}/{info.get('run_id') or log.parent.name}"[:200],
        "started_at": start, "finished_at": end, "model": str(config.get("model") or "")[:500],
        "summary": {k: v for k, v in meta.summary.items() if not k.startswith("_")},
    }


def _flat(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and "_type" not in value:
        for k, v in value.items():
            _flat(f"{prefix}.{k}", v, out)
    else:
        out[prefix] = value


class _History:
    """History rows into metric points (one point a row and x-axis) and table files into rollouts."""

    def __init__(self, log: Path, meta: _Meta) -> None:
        self.log = log
        self.meta = meta
        self.run_dir = log.parent
        self.run_id = meta.run.get("run_id") or log.parent.name
        self.cache: dict[str, str | None] = {}
        self.tables: list[tuple[str, int, str]] = []
        self.seen_tables: set[str] = set()
        self.media: list[tuple[str, int, str, str, str]] = []  # key, step, kind, path, caption
        self.seen_media: set[str] = set()
        self.last_step = 0

    def points(self) -> Iterator[MetricPoint | Problem]:
        problems: list[Problem] = []
        for _, (step, items) in _scan(self.log, None, problems):
            row: dict[str, Any] = {}
            for key, value in _nest(items).items():
                _flat(key, value, row)
            if step is None:
                step = int(row["_step"]) if num(row.get("_step")) is not None else self.last_step + 1
            self.last_step = step
            yield from self._row(step, row)

    def _row(self, step: int, row: dict[str, Any]) -> Iterator[MetricPoint]:
        time = num(row.get("_timestamp"))
        by_axis: dict[int, dict[str, float | None]] = {}
        for key, value in row.items():
            if key.startswith(_INTERNAL):
                continue
            if isinstance(value, dict):
                self._media(key, value, step)
                continue
            if not isinstance(value, int | float) or value is None:
                continue
            axis = self.meta.axis(key, self.cache)
            at = step
            if axis is not None and num(row.get(axis)) is not None:
                at = int(row[axis])
            by_axis.setdefault(at, {})[key] = float(value)
        for at, values in by_axis.items():
            point: MetricPoint = {"step": at, "values": values}
            if time is not None:
                point["time"] = time
            yield point

    def _media(self, key: str, value: dict[str, Any], step: int) -> None:
        path = value.get("path")
        if value.get("_type") in ("table-file", "partitioned-table", "joined-table") and isinstance(path, str):
            if path not in self.seen_tables:
                self.seen_tables.add(path)
                self.tables.append((key, step, path))
            return
        for kind, rel, caption in media_refs(value):
            if rel not in self.seen_media:  # a summary repeats the last file; once is enough
                self.seen_media.add(rel)
                self.media.append((key, step, kind, rel, caption))

    def rollouts(self) -> Iterator[RolloutRecord | Problem]:
        for key, step, rel in self.tables:
            table = (self.run_dir / "files" / rel).resolve()
            if self.run_dir.resolve() not in table.parents or not table.is_file():
                yield Problem(str(self.log), None, f"history step {step}: table {key!r} points at {rel}, "
                                                   "which is not in the run folder")
                continue
            yield from table_rollouts(table, self.run_dir, key, step, self.run_id)


def _parse_log(log: Path, ref: str) -> Iterator[Event]:
    meta = _Meta()
    problems: list[Problem] = []
    for _ in _scan(log, meta, problems):
        pass
    yield RunEvent(ref, _run_record(log, meta))
    if meta.exit_code is None:
        problems.append(Problem(str(log), None, "no exit record: the run was still running, crashed, or the file "
                                                "is cut short; imported as crashed"))
    yield from problems
    history = _History(log, meta)
    yield from batch_points(ref, history.points())
    yield from batch_rollouts(ref, history.rollouts())
    yield from batch_media(ref, media_records(log, history.media))


def parse(path: Path, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    logs = run_logs(path)
    if not logs:
        yield Problem(str(path), None, "no run-*.wandb record log in this folder", fatal=True)
        return
    for log in logs:
        yield from _parse_log(log, log.parent.name if len(logs) > 1 else "wandb")
