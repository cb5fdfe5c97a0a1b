"""`deeprepo import SOURCE`: read a foreign format on this machine and send it through the API.

SOURCE is anything `deeprepo_client.formats` reads (a W&B offline folder or `wandb/` folder, an
MLflow export folder, a Trackio project, …) or `mlflow://HOST:PORT` with `--experiment NAME`.
Runs are found again by (source, external id), points by (key, step), rollouts by uid: sending
the same source twice stores nothing twice, so an interrupted import is finished by running it again.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .artifacts import ArtifactUploadError, upload_artifact
from .formats.wandb_media import artifact_kind, artifact_name
from .records import Event, MediaEvent, MetricsEvent, Problem, RolloutsEvent, RunEvent
from .transport import Refused, Transport

ROLLOUTS_PER_REQUEST = 200
_RUN_FIELDS = ("name", "kind", "model", "adapter", "environment", "method", "config", "tags", "notes",
               "external_id", "source", "checkpoint_step")


@dataclass
class Sent:
    runs: dict[str, str] = field(default_factory=dict)  # ref -> server run id
    points: int = 0
    rollouts: int = 0
    problems: list[str] = field(default_factory=list)
    fatal: bool = False
    media: int = 0  # media files the server has as artifacts (new or already there)


def _create(transport: Transport, record: dict[str, Any]) -> str:
    body = {k: record[k] for k in _RUN_FIELDS if record.get(k) not in (None, "")}
    body["source"] = str(body.get("source") or "import")[:32]
    for when in ("started_at", "finished_at"):  # the file's own times, not the moment of the import
        if isinstance(record.get(when), int | float):
            body[when] = datetime.fromtimestamp(record[when], tz=UTC).isoformat()
    run = transport.request("POST", "/runs", body)
    if record.get("summary"):
        transport.request("PATCH", f"/runs/{run['id']}", {"summary": record["summary"]})
    return str(run["id"])


def _send_media(ev: MediaEvent, run: str, transport: Transport, sent: Sent) -> None:
    """Each file as a run artifact named by key and step (what a server-side import makes too)."""
    with tempfile.TemporaryDirectory(prefix="deeprepo-media-") as tmp:
        for i, record in enumerate(ev.media):
            # One file each: the upload's resume state is keyed by path, size and mtime.
            spool = Path(tmp) / str(i)
            spool.write_bytes(record["data"])
            try:
                upload_artifact(transport, run, spool, kind=artifact_kind(record), name=artifact_name(record),
                                resume_dir=Path(tmp) / "resume")
            except (ArtifactUploadError, Refused) as exc:
                sent.problems.append(f"{record['kind']} {record['key']!r} at step {record['step']} not sent: {exc}")
                continue
            sent.media += 1


def send_events(events: Iterable[Event], transport: Transport) -> Sent:
    sent = Sent()
    records: dict[str, dict[str, Any]] = {}

    def run_id(ref: str) -> str:
        if ref not in sent.runs:
            sent.runs[ref] = _create(transport, records.get(ref) or {"name": ref})
        return sent.runs[ref]

    for ev in events:
        if isinstance(ev, Problem):
            sent.problems.append(str(ev))
            sent.fatal = sent.fatal or ev.fatal
        elif isinstance(ev, RunEvent):
            records[ev.ref] = dict(ev.run)
        elif isinstance(ev, MetricsEvent):
            answer = transport.request("POST", f"/runs/{run_id(ev.ref)}/metrics", ev.points)
            sent.points += int(answer.get("stored", 0))
        elif isinstance(ev, RolloutsEvent):
            for i in range(0, len(ev.rollouts), ROLLOUTS_PER_REQUEST):
                chunk = ev.rollouts[i:i + ROLLOUTS_PER_REQUEST]
                answer = transport.request("POST", f"/runs/{run_id(ev.ref)}/rollouts", chunk)
                sent.rollouts += int(answer.get("stored", 0))
        elif isinstance(ev, MediaEvent):
            _send_media(ev, run_id(ev.ref), transport, sent)
    for ref, record in records.items():
        status = record.get("status")
        if ref in sent.runs and status in ("finished", "failed", "cancelled", "crashed"):
            transport.request("POST", f"/runs/{sent.runs[ref]}/finish", {"status": status})
    return sent


def source_events(source: str, experiment: str | None) -> Iterable[Event]:
    if source.startswith("mlflow://") or source.startswith(("http://", "https://")):
        if not experiment:
            raise SystemExit("deeprepo import: --experiment NAME is needed to pull from an MLflow server")
        from .formats.mlflow_server import pull

        return pull(source, experiment)
    from .formats import parse

    return parse(Path(source))


def report(sent: Sent, transport: Transport) -> int:
    for ref, rid in sent.runs.items():
        print(f"{ref}: run {rid} ({transport.url})")
    print(f"{len(sent.runs)} run(s), {sent.points} new points, {sent.rollouts} new rollouts"
          + (f", {sent.media} media files" if sent.media else ""))
    for line in sent.problems[:50]:
        print(f"  {line}", file=sys.stderr)
    return 1 if sent.fatal or not sent.runs else 0
