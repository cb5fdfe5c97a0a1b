"""A compare query (?runs=a,b&baseline=b&zero=tool:x&pass=1&effects=A>B:label) -> the comparison."""

from __future__ import annotations

import math
from typing import Any

from deeprepo_web.accounts.models import Project
from deeprepo_web.compare import options as opts
from deeprepo_web.compare.comparison import Comparison, comparison_build
from deeprepo_web.compare.options import CompareError


def number_param(value: str | None, name: str, default: float) -> float:
    """A number typed into a form or query string (empty: `default`); CompareError for anything else."""
    if value is None or value.strip() == "":
        return default
    try:
        out = float(value)
    except ValueError:
        raise CompareError(f"{name}: {value[:40]!r} is not a number") from None
    if not math.isfinite(out):
        raise CompareError(f"{name}: must be a finite number")
    return out


def compare_params(query: Any) -> tuple[list[str], dict[str, str]]:
    """Run ids and the raw options of a compare query (?runs=a,b&baseline=b&zero=tool:x ...)."""
    ids: list[str] = []
    for part in query.getlist("runs"):
        ids += [i for i in part.split(",") if i.strip()]
    raw = {k: query.get(k, "") for k in ("baseline", "zero", "pass", "effects")}
    return ids, raw


def comparison_for(project: Project, ids: list[str], raw: dict[str, str]) -> Comparison:
    runs = opts.runs_select(project=project, ids=ids)
    baseline = opts.runs_in_time_order(runs)[0]
    if raw.get("baseline"):
        matches = [i for i, r in enumerate(runs) if raw["baseline"] in (r.public_id, r.name)]
        if not matches:
            raise CompareError(f"baseline: {raw['baseline'][:60]!r} is not one of the compared runs")
        baseline = matches[0]
    options = opts.options_for(runs, baseline=baseline, zero=raw.get("zero", ""),
                               pass_threshold=number_param(raw.get("pass"), "pass", 1.0), effects=raw.get("effects", ""))
    return comparison_build(runs=runs, options=options)
