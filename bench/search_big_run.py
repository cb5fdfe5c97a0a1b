"""A common word in a big run: the search page and its "where it occurs" chart, timed through the
selectors (no HTTP), on a filled database; optionally beside another revision's selectors, alternating in
one process, the cache cleared before each (docs/scale.md, "A common word in a big run").

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_big uv run --no-sync python manage.py migrate
    DATABASE_URL=… uv run --no-sync python manage.py seed_scale --rollouts 600000 --runs 2 --long-points 1000
    DATABASE_URL=… uv run --no-sync python -c "import sys; sys.path.insert(0, 'bench'); \
        from search import build_index; build_index('$DATABASE_URL')"
    psql … -c 'VACUUM ANALYZE'
    DATABASE_URL=… uv run --no-sync python bench/search_big_run.py [--against <rev>] [--rounds 2]

The run is the project's biggest, or `--run newest` (e.g. the run of 3,000 rollouts of 8 kB that
`bench/indexer.py --rollouts 3000` logs last into a bench/search.py database: docs/scale.md, "A rare text in
one run"), or a run's public id. A failed search (its timeout) is timed and counted as "failed".
Prints one JSON object on its last line.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")

import django  # noqa: E402

django.setup()

from django.core.cache import cache  # noqa: E402
from django.db.models import Count, Max  # noqa: E402

from deeprepo_web.accounts.models import Project  # noqa: E402
from deeprepo_web.runs.models import Rollout, Run  # noqa: E402
from deeprepo_web.search import selectors  # noqa: E402
from deeprepo_web.search.spec import spec_parse  # noqa: E402

# (what, query): seed_scale's texts — a word in about half the documents, one in all, one in none — alone
# and with a tool filter that keeps none of the first one's rollouts; "RUN" is the biggest run.
QUERIES = [
    ("chart", "q=FileNotFoundError&run=RUN"),
    ("chart", "q=injection&run=RUN"),
    ("chart", "q=FileNotFoundError&tool=run_code&run=RUN"),
    ("chart", "q=zebra&run=RUN"),
    ("page", "q=FileNotFoundError&tool=run_code&run=RUN"),
    ("page", "q=FileNotFoundError&tool=run_code"),
    ("page", "q=FileNotFoundError"),
    ("page", "q=injection&run=RUN"),
    ("page", "q=zebra"),
    # Rare and absent texts in one run, and a common substring's chart.
    ("page", "q=quota+exceeded&run=RUN"),
    ("chart", "q=quota+exceeded&run=RUN"),
    ("page", "q=zebra&run=RUN"),
    ("page", "q=quota+exceed&mode=substring&run=RUN"),
    ("chart", "q=quota+exceed&mode=substring&run=RUN"),
    ("page", "q=quota+%5Ba-z%5D%2B+after&mode=regex&run=RUN"),
    ("chart", "q=db.py%3A42&mode=substring&run=RUN"),
    # A common word in the run's last 1 % of steps ("LATE": their first): the filter keeps few rollouts.
    ("chart", "q=FileNotFoundError&step_min=LATE&run=RUN"),
    ("chart", "q=injection&step_min=LATE&run=RUN"),
]


def _load(name: str, source: str) -> ModuleType:
    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def selectors_at(rev: str) -> ModuleType:
    """search/selectors.py of `rev`, reading search/sql.py of `rev`."""
    def show(path: str) -> str:
        return subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, check=True, capture_output=True,
                              text=True).stdout
    _load("rev_sql", show("deeprepo_web/search/sql.py"))
    return _load("rev_selectors", show("deeprepo_web/search/selectors.py").replace(
        "from deeprepo_web.search import sql as S", "import rev_sql as S"))


def timed(module: Any, project: Project, kind: str, params: dict[str, str]) -> tuple[float, Any]:
    spec = spec_parse(params)
    scope = module.search_scope(project=project, spec=spec)
    cache.clear()
    t0 = time.monotonic()
    try:
        if kind == "chart":  # as the chart's view asks (a revision before search_chart counts every hit)
            counts, sample = (module.search_chart(scope=scope, spec=spec) if hasattr(module, "search_chart")
                              else (module.search_counts(scope=scope, spec=spec), None))
            found: Any = (f"~{sample.estimated} ({sample.hits} of {sample.tested})" if sample else
                          sum(hits for steps in counts.values() for hits, _ in steps.values()))
        else:
            results, _ = module.search_page(scope=scope, spec=spec)
            found = len(results)
    except module.SearchFailed:
        found = "failed"
    return round((time.monotonic() - t0) * 1000, 1), found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", default="scale")
    parser.add_argument("--against", help="a git revision whose selectors run beside this checkout's")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--run", default="biggest", help="biggest, newest, or a run's public id")
    args = parser.parse_args()
    project = Project.objects.get(slug=args.project)
    runs = Run.objects.filter(project=project).annotate(n=Count("rollouts"))
    run = {"biggest": runs.order_by("-n"), "newest": runs.order_by("-id")}.get(
        args.run, runs.filter(public_id=args.run)).first()
    assert run is not None, f"no run {args.run!r} in the project"
    variants = {"this": selectors}
    if args.against:
        variants = {args.against: selectors_at(args.against), "this": selectors}
    figures: dict[str, Any] = {"run_rollouts": run.n, "queries": {}}  # type: ignore[attr-defined]
    last = Rollout.objects.filter(run=run).aggregate(Max("step"))["step__max"] or 0
    for kind, query in QUERIES:
        params = dict(parse_qsl(query.replace("RUN", run.public_id).replace("LATE", str(last - last // 100))))
        times: dict[str, list[Any]] = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name, module in variants.items():
                times[name].append(timed(module, project, kind, params))
        figures["queries"][f"{kind} {query}"] = times
        print(kind, query, times, file=sys.stderr, flush=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
