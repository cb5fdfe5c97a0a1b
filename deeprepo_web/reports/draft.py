"""The draft "Write a report" makes from a comparison, laid out like the hand-written eval report
(seed 002): title and date, models and runs, the before/after table, each run's raw eval output,
behaviour notes to fill in, rewards per example, the training curve, and the data sources."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from django.utils import timezone

from deeprepo_web.accounts.models import Project
from deeprepo_web.compare.options import runs_select
from deeprepo_web.reports.models import Report
from deeprepo_web.reports.panels.compare import OPTION_KEYS
from deeprepo_web.reports.services import report_create
from deeprepo_web.runs.models import MetricSeries, Run


def _md(text: str) -> str:
    """User text (run names, models) inside our Markdown: no markup of its own."""
    for ch in ("\\", "`", "*", "_", "[", "]", "<", ">", "#", "|"):
        text = text.replace(ch, "\\" + ch)
    return " ".join(text.split())


def _code(text: str) -> str:
    return "`" + " ".join(text.replace("`", "'").split()) + "`"


def _heading(runs: list[Run]) -> str:
    now = timezone.localtime()
    lines = [f"**Date:** {now:%B} {now.day}, {now:%Y}", "", "**Models and runs**", ""]
    for letter, run in zip("ABCDEFGHIJ", runs, strict=False):
        bits = [f"model {_code(run.model)}" if run.model else "", run.kind,
                f"environment {_code(run.environment)}" if run.environment else "",
                f"checkpoint step {run.checkpoint_step}" if run.checkpoint_step is not None else ""]
        lines.append(f"- **{letter} · {_md(run.name)}** — " + ", ".join(b for b in bits if b))
    trains = list(dict.fromkeys(r.parent for r in runs if r.parent is not None))
    for train in trains:
        cfg = ", ".join(f"{_md(str(k))} {_md(str(v))}" for k, v in list((train.config or {}).items())[:6])
        lines.append(f"- Training run: **{_md(train.name)}** — {_md(train.method or 'method not given')}"
                     + (f", {cfg}" if cfg else ""))
    return "\n".join(lines)


def _sources(project: Project, runs: list[Run]) -> str:
    lines = ["## Data sources", ""]
    for run in runs:
        url = reverse("run", args=[project.slug, run.public_id])
        n = run.rollouts.count()
        line = f"- **{_md(run.name)}**: [run page]({url}), source {_md(run.source)}, {n} rollouts"
        job = getattr(run, "job", None)  # the reverse one-to-one raises an AttributeError when absent
        if job is not None and job.command:
            line += f"\n\n  ```\n  {job.command[:2000]}\n  ```"
        lines.append(line)
    return "\n".join(lines)


def _training_curves(runs: list[Run]) -> list[dict[str, Any]]:
    parents = list(dict.fromkeys(r.parent for r in runs if r.parent is not None))[:1]
    if not parents:
        return []
    have = set(MetricSeries.objects.filter(run=parents[0]).values_list("key", flat=True))
    keys = [k for k in ("reward", "num_turns") if k in have] or sorted(have)[:1]
    if not keys:
        return []
    return [{"kind": "text", "text": "## Reward progression during training"},
            {"kind": "curves", "params": {"runs": [parents[0].public_id], "keys": keys}}]


def report_from_comparison(*, project: Project, user: Any, ids: list[str], raw: dict[str, str],
                           title: str = "") -> Report:
    runs = runs_select(project=project, ids=ids)
    options = {k: v for k, v in raw.items() if k in OPTION_KEYS and v}
    blocks: list[dict[str, Any]] = [
        {"kind": "text", "text": _heading(runs)},
        {"kind": "text", "text": "## Before vs after"},
        {"kind": "compare", "params": {"runs": [r.public_id for r in runs], **options}},
    ]
    for run in runs:
        blocks.append({"kind": "raw_summary", "params": {"run": run.public_id}})
    blocks.append({"kind": "text", "text": "### Behavioral notes\n\n- "})
    blocks.append({"kind": "per_example", "params": {"runs": [r.public_id for r in runs]}})
    blocks += _training_curves(runs)
    blocks.append({"kind": "text", "text": _sources(project, runs)})
    title = title or "Eval results: " + " vs ".join(r.name for r in runs)
    return report_create(project=project, user=user, title=title[:300], blocks=blocks)
