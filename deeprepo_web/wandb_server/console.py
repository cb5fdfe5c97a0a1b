"""What the run page's Logs tab reads: the console lines a W&B run streamed, and its alerts."""

from __future__ import annotations

from dataclasses import dataclass

from deeprepo_web.runs.models import Run
from deeprepo_web.wandb_server.models import ConsoleLine, RunAlert

MAX_LINES = 5000  # the newest lines shown; the whole output.log is also a run artifact once the run ends


@dataclass
class RunLogs:
    lines: list[ConsoleLine]
    total: int
    writers: int
    alerts: list[RunAlert]


def run_logs(*, run: Run, limit: int = MAX_LINES) -> RunLogs:
    """The newest `limit` lines in order (per writer, by offset), how many there are, the alerts."""
    rows = ConsoleLine.objects.filter(run=run)
    total = rows.count()
    newest = list(rows.order_by("-received_at", "-offset").only("writer", "offset", "stream", "time", "text")[:limit])
    newest.sort(key=lambda c: (c.writer, c.offset))
    writers = len({c.writer for c in newest})
    alerts = list(RunAlert.objects.filter(run=run).order_by("-created_at")[:100])
    return RunLogs(lines=newest, total=total, writers=writers, alerts=alerts)
