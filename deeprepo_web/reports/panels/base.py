"""What every panel kind shares: its declaration, errors, and finding the runs it names.

A panel's `compute(project, params)` returns JSON-able data: the draft renders it at once, a
publish stores it (the frozen data a reader sees). Templates and the Markdown export read only
that data, so a published report never touches the runs again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from deeprepo_web.accounts.models import Project
from deeprepo_web.replica.router import read_cursor
from deeprepo_web.runs.models import Run

MAX_PANEL_RUNS = 10


class PanelError(ValueError):
    """Bad parameters for a panel (refused when saved); the message names the field."""


class PanelGone(LookupError):
    """What a saved panel shows no longer exists (a deleted run or rollout)."""


@dataclass(frozen=True)
class Field:
    name: str
    label: str
    kind: str = "text"  # text | runs | run | number | choice
    help: str = ""
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class PanelKind:
    kind: str
    label: str
    fields: tuple[Field, ...]
    clean: Callable[[Project, dict[str, Any]], dict[str, Any]]
    compute: Callable[[Project, dict[str, Any]], dict[str, Any]]
    markdown: Callable[[dict[str, Any], dict[str, Any]], str]
    hint: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def id_list(value: Any) -> list[str]:
    """Run ids from a form ("a, b") or a stored list."""
    if isinstance(value, list | tuple):
        parts = [str(v) for v in value]
    else:
        parts = str(value or "").replace("\n", ",").split(",")
    return [p.strip()[:100] for p in parts if p.strip()]


def runs_named(project: Project, ids: Sequence[str], *, at_least: int = 1) -> list[Run]:
    """Runs of `project` by public id or exact name, in order; PanelError names one that is not."""
    ids = list(dict.fromkeys(ids))
    if len(ids) < at_least:
        raise PanelError(f"runs: name at least {at_least} run{'s' if at_least > 1 else ''}")
    if len(ids) > MAX_PANEL_RUNS:
        raise PanelError(f"runs: at most {MAX_PANEL_RUNS} runs in one panel")
    found = {r.public_id: r for r in Run.objects.filter(project=project, public_id__in=ids)}
    for r in Run.objects.filter(project=project, name__in=[i for i in ids if i not in found]).order_by("created_at"):
        found[r.name] = r
    missing = [i for i in ids if i not in found]
    if missing:
        raise PanelError(f"runs: no run {missing[0][:60]!r} in this project")
    return [found[i] for i in ids]


def runs_live(project: Project, ids: Sequence[str]) -> list[Run]:
    """The saved runs of a panel, scoped to its project; PanelGone when one was deleted since."""
    found = {r.public_id: r for r in Run.objects.filter(project=project, public_id__in=list(ids))}
    gone = [i for i in ids if i not in found]
    if gone:
        raise PanelGone(f"run {gone[0]} was deleted; this panel has nothing to show")
    return [found[i] for i in ids]


# What changes when a run gets new data or is edited: its row (a rename, a status, every ingest
# through the API and every rewrite of rollouts in place (runs_rewritten) touch updated_at), its
# newest rollout, its metric points and its marks. Read through indexes, for every run of a page at once.
_STAMP_SQL = """
SELECT r.public_id, r.updated_at,
       (SELECT max(o.id) FROM runs_rollout o WHERE o.run_id = r.id),
       (SELECT coalesce(sum(s.count), 0) FROM runs_metricseries s WHERE s.run_id = r.id),
       (SELECT count(*) || ':' || coalesce(max(m.id), 0) FROM labels_mark m WHERE m.run_id = r.id)
FROM runs_run r WHERE r.project_id = %s AND r.public_id = ANY(%s)
"""


def run_stamps(project: Project, ids: Sequence[str]) -> dict[str, list[Any]]:
    """{run public id: its stamp} for the runs of `project` among `ids`, in one query."""
    if not ids:
        return {}
    with read_cursor() as cur:
        cur.execute(_STAMP_SQL, [project.pk, sorted(set(ids))])
        return {row[0]: [str(row[1]), *row[2:]] for row in cur.fetchall()}


def project_stamp() -> list[Any]:
    """For a panel that names no run (a project-wide search): the newest rollout and how far the search
    indexer has read (the search table keeps no id)."""
    with read_cursor() as cur:
        cur.execute("SELECT (SELECT max(id) FROM runs_rollout), (SELECT sum(last_id) FROM search_watermark)")
        return list(cur.fetchone() or [])


def num(v: Any) -> float | None:
    """A finite float for JSON, or None."""
    if v is None:
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def fmt(v: float | None, digits: int = 3) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def number(value: Any, name: str, default: float, lo: float, hi: float) -> float:
    if value is None or str(value).strip() == "":
        return default
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise PanelError(f"{name}: {str(value)[:40]!r} is not a number") from None
    if not math.isfinite(out) or not lo <= out <= hi:
        raise PanelError(f"{name}: between {lo:g} and {hi:g}")
    return out


def md_cell(text: Any) -> str:
    from deeprepo_web.compare.exports import md_cell as cell

    return cell(str(text))


def md_table(header: list[str], rows: list[list[str]]) -> str:
    from deeprepo_web.compare.exports import md_table as table

    return "\n".join(table(header, rows))
