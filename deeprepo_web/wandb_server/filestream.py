"""The W&B file stream: what one POST carries, stored once.

Each file comes as {"offset": N, "content": [line, …]}: line N+i of that file. History and events
lines only ever grow, so a writer's next offset per file (StreamOffset, its row locked while a chunk
is stored) tells a line already stored from a new one: a chunk sent again after a lost answer adds
nothing. output.log lines are rewritten in place (a progress bar sends its line again at the same
offset), so they are upserted by offset. The summary is a whole snapshot each time; it is merged
into the run's summary (in shared mode each writer sends its own part).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from deeprepo_web.runs import services as run_services
from deeprepo_web.runs.ingest.metrics import metrics_ingest
from deeprepo_web.runs.models import Run, RunStatus
from deeprepo_web.wandb_server.buckets import EVENTS, HISTORY, OUTPUT
from deeprepo_web.wandb_server.models import ConsoleLine, StreamOffset

SUMMARY = "wandb-summary.json"
MAX_KEYS = 2000  # metric keys taken from one history line (a dict logged by mistake can hold millions)
# "ERROR 2024-05-01T10:00:00.123456Z text" or "2024-05-01T10:00:00.123456 text" (older SDKs)
_CONSOLE = re.compile(r"^(?P<err>ERROR )?(?P<ts>\d{4}-\d\d-\d\dT[\d:.]+Z?) ?(?P<text>.*)$", re.S)


@dataclass
class ChunkResult:
    points: int = 0
    lines: int = 0
    problems: list[str] = field(default_factory=list)


def _flatten(prefix: str, value: Any, out: dict[str, float | None], depth: int = 0) -> None:
    """Numbers (and booleans) of a history line; nested dicts become `a.b` keys, as W&B shows them.
    Media and table references ({"_type": …}) are not numbers: their files come as uploads."""
    if len(out) >= MAX_KEYS:
        return
    if isinstance(value, bool):
        out[prefix] = float(value)
    elif isinstance(value, int | float):
        out[prefix] = float(value)
    elif value is None and prefix:
        out[prefix] = None
    elif isinstance(value, dict) and "_type" not in value and depth < 8:
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out, depth + 1)


def history_points(lines: list[str], where: str, result: ChunkResult) -> list[dict[str, Any]]:
    """Every key of every line at its `_step`. Keys W&B keeps for itself (_step, _runtime,
    _timestamp, _wandb) are not series; a define_metric x-axis (a key like `eval_step`) is one."""
    points = []
    for i, line in enumerate(lines):
        try:
            row = json.loads(line)  # NaN, Infinity and -Infinity come as bare tokens: json reads them
        except ValueError as exc:
            result.problems.append(f"{where} line {i}: not JSON ({exc}); skipped")
            continue
        step = row.get("_step") if isinstance(row, dict) else None
        if not isinstance(step, int | float) or isinstance(step, bool) or not math.isfinite(step):
            result.problems.append(f"{where} line {i}: no numeric _step; skipped")
            continue
        values: dict[str, float | None] = {}
        for k, v in row.items():
            if not k.startswith("_"):
                _flatten(str(k), v, values)
        stamp = row.get("_timestamp")
        if values:
            points.append({"step": int(step), "values": values,
                           "time": float(stamp) if isinstance(stamp, int | float) else None})
    return points


def _offset_row(run: Run, writer: str, name: str) -> StreamOffset:
    StreamOffset.objects.get_or_create(run=run, writer=writer, file=name)
    return StreamOffset.objects.select_for_update().get(run=run, writer=writer, file=name)


def _appendable(run: Run, writer: str, name: str, chunk: dict[str, Any]) -> list[str]:
    """The lines of an append-only file not stored yet (the row stays locked until commit)."""
    row = _offset_row(run, writer, name)
    offset, content = int(chunk.get("offset") or 0), [str(c) for c in chunk.get("content") or []]
    skip = max(0, row.next_offset - offset)
    fresh = content[skip:]
    if fresh:
        row.next_offset = offset + len(content)
        row.tail = fresh[-1] if name == HISTORY else ""
        row.save(update_fields=["next_offset", "tail"])
    return fresh


def _console(run: Run, writer: str, chunk: dict[str, Any]) -> int:
    offset, content = int(chunk.get("offset") or 0), [str(c) for c in chunk.get("content") or []]
    rows = []
    for i, raw in enumerate(content):
        found = _CONSOLE.match(raw)
        text, ts, err = (found["text"], found["ts"], found["err"]) if found else (raw, "", None)
        text = text.rstrip("\r\n")  # the legacy Python sender keeps the newline
        rows.append(ConsoleLine(run=run, writer=writer, offset=offset + i, stream="stderr" if err else "stdout",
                                time=ts[:40], text=text))
    ConsoleLine.objects.bulk_create(rows, update_conflicts=True, unique_fields=["run", "writer", "offset"],
                                    update_fields=["text", "time", "stream", "received_at"])
    if rows:
        row = _offset_row(run, writer, OUTPUT)
        if offset + len(rows) > row.next_offset:
            row.next_offset = offset + len(rows)
            row.save(update_fields=["next_offset"])
    return len(rows)


def _json_safe(value: Any) -> Any:
    """A summary value Postgres' JSON can hold: NaN and ±Infinity are kept as their names."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _summary(run: Run, chunk: dict[str, Any], result: ChunkResult) -> None:
    content = chunk.get("content") or []
    if not content:
        return
    try:
        snapshot = json.loads(str(content[-1]))
    except ValueError as exc:
        result.problems.append(f"{SUMMARY}: not JSON ({exc}); kept the previous summary")
        return
    if isinstance(snapshot, dict):
        # W&B's own keys (_step, _runtime, _timestamp, _wandb) are bookkeeping, not results.
        kept = {k: _json_safe(v) for k, v in snapshot.items() if not k.startswith("_") and not isinstance(v, dict)}
        Run.objects.filter(pk=run.pk).update(summary={**(run.summary or {}), **kept})
        run.refresh_from_db(fields=["summary"])


def chunk_store(*, run: Run, writer: str, body: dict[str, Any]) -> ChunkResult:
    """Store one POST's files; finish the run when it says `complete`."""
    result = ChunkResult()
    raw = body.get("files")
    files: dict[str, Any] = raw if isinstance(raw, dict) else {}
    with transaction.atomic():
        for name, chunk in files.items():
            if not isinstance(chunk, dict):
                result.problems.append(f"{name}: not an object; skipped")
            elif name == HISTORY:
                points = history_points(_appendable(run, writer, name, chunk), name, result)
                result.points += metrics_ingest(run=run, points=points) if points else 0
            elif name == EVENTS:
                _appendable(run, writer, name, chunk)
            elif name == OUTPUT:
                result.lines += _console(run, writer, chunk)
            elif name == SUMMARY:
                _summary(run, chunk, result)
    if result.points or result.lines:
        run_services.run_touch(run=run)
    if body.get("complete"):
        code = body.get("exitcode")
        run.refresh_from_db()
        status = RunStatus.FINISHED if code in (0, None) else RunStatus.FAILED
        summary = {**(run.summary or {}), "exit_code": code}
        run_services.run_update(run=run, status=status, summary=summary)
    return result
