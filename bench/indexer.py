"""The search indexer against ingest (issue 30 item 2: text searchable <= 30 s after ingest while ingest
runs at its full rate): the indexer's docs/s on freshly ingested rollouts in an already large database,
and ingest's rate with the indexer running beside it, measured together.

    python bench/indexer.py --database deeprepo_bench_idx [--rollouts 3000] [--together-rollouts 8000]
                            [--together-rate 0] [--rounds 2] [--variant NAME=PATH ...]

The database is one bench/search.py seeded and indexed (e.g. `bench/search.py --database
deeprepo_bench_idx --rollouts 100000`); it grows by both phases' rollouts per round and variant. Per round:

- *alone*: `--rollouts` rollouts (bench/ingest.py's: 8 turns of ~1 KB, 4 tool calls) through the ingest
  service, then search_index_update looped until it finds nothing: the indexer's docs/s; then one word
  and one substring search of the new text (a search right after a pass: what a pending GIN list costs);
- *together*: `--together-rollouts` (at full speed, or `--together-rate` rollouts/s) with the indexer looping beside ingest in a thread (as beat's task
  would, back to back while there is work), a sampler counting the run's rollouts logged and searchable
  (their rollout document committed in search_doc: the unit both document layouts share, before and
  after search 0004) every 0.25 s: ingest's rollouts/s, the rollouts/s made searchable meanwhile, the
  backlog when ingest ends, the time to catch up and the rate then, and the longest a rollout waited
  to become searchable (`max_delay_s`).

`--variant NAME=PATH` loads another indexer.py (e.g. main's) as variant NAME; variants alternate within
each round, so the ratios hold on a busy machine. Without it: this checkout's indexer. One JSON line per
variant (medians over rounds), then a last line {"variants": {...}}.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.common import db_url  # noqa: E402


def _load(name: str, path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_indexer_{name}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _catch_up(indexer: ModuleType) -> tuple[int, float]:
    t0 = time.monotonic()
    docs = 0
    while added := indexer.search_index_update(budget_seconds=600):
        docs += added
    return docs, time.monotonic() - t0


def _ingest(run: Any, batches: list[list[dict[str, Any]]], rate: float = 0) -> float:
    """Seconds to ingest the batches, at full speed or held to `rate` rollouts/s."""
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest

    t0 = time.monotonic()
    done = 0
    for batch in batches:
        rollouts_ingest(run=run, rollouts=batch)
        done += len(batch)
        if rate:
            time.sleep(max(0.0, t0 + done / rate - time.monotonic()))
    return time.monotonic() - t0


def _searches() -> dict[str, float]:
    from bench.ingest import contents
    from deeprepo_web.accounts.models import Project
    from deeprepo_web.search.selectors import search_page, search_scope
    from deeprepo_web.search.spec import spec_parse

    project = Project.objects.get(slug="scale")
    text = contents()[0]  # what the new turns say ("agent1234 tool567 ..."): their index entries are read
    out = {}
    for label, params in (("word_ms", {"q": " ".join(text.split()[:2])}),
                          ("substring_ms", {"q": text[3:14], "mode": "substring"})):
        spec = spec_parse(params)
        t0 = time.perf_counter()
        found, _ = search_page(scope=search_scope(project=project, spec=spec), spec=spec, per_page=50)
        out[label] = round((time.perf_counter() - t0) * 1000, 1)
        assert found, params  # the search did read the new rows
    return out


def _alone(indexer: ModuleType, run: Any, batches: list[list[dict[str, Any]]]) -> dict[str, Any]:
    seconds = _ingest(run, batches)
    docs, index_s = _catch_up(indexer)
    rollouts = sum(len(b) for b in batches)
    return {"ingest_alone_rollouts_per_s": rollouts / seconds, "indexer_rollouts_per_s": rollouts / index_s,
            "indexer_docs_per_s": docs / index_s, "indexer_docs": docs, **_searches()}


def _together(indexer: ModuleType, run: Any, batches: list[list[dict[str, Any]]], rate: float) -> dict[str, Any]:
    from django.db import connection, connections

    stop, ingest_done = threading.Event(), threading.Event()
    samples: list[tuple[float, int, int]] = []  # (time, the run's rows logged, the run's rows searchable)
    # In rollouts (the unit both document layouts share): logged, and with their rollout document in
    # (a document per turn and call before search 0004 comes before the rollout's own in each pass).
    counts = ("SELECT (SELECT count(*) FROM runs_rollout WHERE run_id = %s), "
              "(SELECT count(DISTINCT obj) FROM search_doc WHERE run_id = %s AND src = 'rollout')")

    def index_loop() -> None:
        # As beat's task: a pass with its budget, the next one at once while there is work.
        while not stop.is_set():
            if not indexer.search_index_update(budget_seconds=60) and ingest_done.is_set():
                break
        connection.close()

    def sample_loop() -> None:
        with connections["default"].cursor() as cur:
            while True:
                cur.execute(counts, [run.pk] * 2)
                logged, searchable = cur.fetchone()
                samples.append((time.monotonic(), logged, searchable))
                if stop.wait(0.25):
                    break
            cur.execute(counts, [run.pk] * 2)
            samples.append((time.monotonic(), *cur.fetchone()))
        connections["default"].close()

    threads = [threading.Thread(target=index_loop), threading.Thread(target=sample_loop)]
    for thread in threads:
        thread.start()
    seconds = _ingest(run, batches, rate)
    ingest_end = time.monotonic()
    with connection.cursor() as cur:
        cur.execute(counts, [run.pk] * 2)
        logged, searchable = cur.fetchone()
    ingest_done.set()
    threads[0].join()
    caught_up = time.monotonic()
    stop.set()
    threads[1].join()
    # The longest wait: at each sample, since when the oldest row not yet searchable had been logged
    # (rows are indexed in id order; a row is "logged" from the first sample that counts it).
    delay = 0.0
    for t, _, done in samples:
        first = next((ts for ts, n, _ in samples if n > done), None)
        if first is not None:
            delay = max(delay, t - first)
    return {"ingest_together_rollouts_per_s": len(batches) * len(batches[0]) / seconds,
            "indexer_together_rollouts_per_s": searchable / seconds,
            "backlog_at_ingest_end_rollouts": logged - searchable, "catch_up_s": caught_up - ingest_end,
            "indexer_catch_up_rollouts_per_s": (logged - searchable) / (caught_up - ingest_end), "max_delay_s": delay}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", default="deeprepo_bench_idx")
    parser.add_argument("--rollouts", type=int, default=3000, help="ingested, then indexed (alone)")
    parser.add_argument("--together-rollouts", type=int, default=8000, help="ingested with the indexer beside")
    parser.add_argument("--together-rate", type=float, default=0,
                        help="hold ingest beside the indexer to this many rollouts/s (0: full speed)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variant", action="append", default=[], help="NAME=PATH of an indexer.py")
    parser.add_argument("--phases", default="alone,together")
    args = parser.parse_args()
    os.environ["DATABASE_URL"] = db_url(args.database)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")
    import django

    django.setup()
    from bench.ingest import rollout_records
    from deeprepo_web.accounts.models import Project
    from deeprepo_web.runs.services import run_create
    from deeprepo_web.search import indexer as this

    variants = {name: _load(name, path) for name, path in (v.split("=", 1) for v in args.variant)} or {"this": this}
    records = rollout_records(max(args.rollouts, args.together_rollouts))
    sizes = {"alone": args.rollouts, "together": args.together_rollouts}
    project = Project.objects.get(slug="scale")
    _catch_up(next(iter(variants.values())))  # start from an indexed database
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    stamp = int(time.time())
    for rnd in range(args.rounds):
        order = list(variants) if rnd % 2 == 0 else list(reversed(variants))
        for name in order:
            row: dict[str, Any] = {}
            for phase in args.phases.split(","):
                run, _ = run_create(project=project, name=f"idx-{stamp}-{name}-{rnd}-{phase}")
                batches = [records[s:s + 50] for s in range(0, sizes[phase], 50)]
                row.update(_alone(variants[name], run, batches) if phase == "alone"
                           else _together(variants[name], run, batches, args.together_rate))
            results[name].append(row)
            print(name, rnd, json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()}),
                  file=sys.stderr, flush=True)
    summary = {}
    for name, rows in results.items():
        med = {k: round(statistics.median(r[k] for r in rows), 2) for k in rows[0]}
        summary[name] = med
        print(json.dumps({"variant": name, **sizes, "rounds": args.rounds, **med}))
    print(json.dumps({"variants": summary, "cores": os.cpu_count()}))


if __name__ == "__main__":
    main()
