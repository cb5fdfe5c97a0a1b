"""What one compressed document per rollout (its turns and tool calls folded, zstd with a project
dictionary) would do to ingest and to a trajectory's read, against the rows of today. Issue 30 items 1
and 6: bench/body_zstd.py measured the bytes; this measures the time, in one process, alternating.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<scratch, migrated> PYTHONPATH=. \\
        uv run --with zstandard==0.25.0 python bench/folded_spike.py [--requests 30]

The workload is the shared one's shape (64-rollout batches joined 4 to a request: 256 rollouts of 8
turns of ~1 KB, assistant turns with one tool call), with fresh text in every turn so the dictionary
cannot have seen it. Each request goes through `runs.api._batch` (pydantic's validate_json), then
either `rollouts_ingest` (today: examples, rollout COPY, turn COPY, tool-call COPY) or the folded
write (the same examples and rollout COPY, then one COPY of a (rollout id, zstd frame) row each into a
scratch table). Python CPU from this process, Postgres CPU from its backend's /proc entry (same
machine), wall per rollout. Then the read: a trajectory's first page of turns with their calls, as
`turn_views_page` queries them, against one SELECT of the frame, decompressed and parsed.
`zstandard` is not a dependency: nothing here is built into the product. Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
import uuid
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")

import django  # noqa: E402

django.setup()

import orjson  # noqa: E402
import zstandard  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from deeprepo_web.accounts.models import Project  # noqa: E402
from deeprepo_web.runs import schemas, services  # noqa: E402
from deeprepo_web.runs.api import _batch  # noqa: E402
from deeprepo_web.runs.ingest import rollouts as ingest  # noqa: E402
from deeprepo_web.runs.ingest.pg import copy_binary  # noqa: E402
from deeprepo_web.runs.models import ToolCall, Turn  # noqa: E402

WORDS = ["the", "agent", "calls", "tool", "grep", "patch", "test", "passed", "failed", "Traceback", "def",
         "return", "import", "self", "value", "error", "assert", "file", "line", "src/app.py"]
rnd = random.Random(7)


def text(size: int = 1024) -> str:
    out = []
    n = 0
    while n < size:
        w = f"{rnd.choice(WORDS)}{rnd.randint(0, 9999)} " if rnd.random() < 0.5 else f"{rnd.choice(WORDS)} "
        out.append(w)
        n += len(w)
    return "".join(out)[:size]


def request_body(base: int, n: int = 256) -> bytes:
    records = []
    for i in range(base, base + n):
        turns = []
        for t in range(8):
            role = "user" if t == 0 else ("assistant" if t % 2 else "tool")
            turn: dict[str, Any] = {"role": role, "content": text()}
            if role == "assistant":
                turn["tool_calls"] = [{"name": "bash", "arguments": {"cmd": f"pytest -k t{t}"}, "output": text(200)}]
            turns.append(turn)
        records.append({"uid": uuid.uuid4().hex, "example_key": f"ex-{(i % 64) // 8}", "step": i // 64,
                        "sample_index": i % 8, "reward": 0.5, "reward_components": {"correct": 0.5},
                        "num_turns": 8, "output_tokens": 900, "turns": turns})
    return orjson.dumps(records)


class _Request:
    def __init__(self, body: bytes) -> None:
        self.body = body


def backend_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def folded_ingest(run: Any, rollouts: list[dict[str, Any]], comp: zstandard.ZstdCompressor | None) -> int:
    """Today's examples and rollout rows, then one document per rollout instead of turn and call rows:
    a zstd frame made here, or (`comp` None) the JSON as it is, which Postgres's TOAST compresses (lz4)."""
    uids = [ingest.rollout_uid(r) for r in rollouts]
    now = timezone.now()
    with transaction.atomic(), connection.cursor() as cur:
        example_ids = ingest._examples_upsert(cur, run, rollouts)
        rows = [ingest._rollout_row(r, u, example_ids[ingest.example_key_hash(r["example_key"])], now, run)
                for r, u in zip(rollouts, uids, strict=True)]
        new_ids = ingest._rollouts_copy(cur, rows)
        table = "spike_rollout_doc" if comp else "spike_rollout_doc_lz4"
        with copy_binary(table, ("rollout_id", "doc")) as copy:
            for r, u in zip(rollouts, uids, strict=True):
                doc = orjson.dumps(r.get("turns") or [])
                copy.write_row((new_ids[u], comp.compress(doc) if comp else doc))
    return len(new_ids)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=30, help="requests of 256 rollouts per variant")
    ap.add_argument("--reads", type=int, default=300)
    a = ap.parse_args()
    project, _ = Project.objects.get_or_create(slug="bench-folded", defaults={"name": "bench-folded"})
    run, _ = services.run_create(project=project, name=f"folded-{uuid.uuid4().hex[:6]}")
    with connection.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS spike_rollout_doc (rollout_id bigint PRIMARY KEY, doc bytea NOT NULL)")
        cur.execute("CREATE TABLE IF NOT EXISTS spike_rollout_doc_lz4 (rollout_id bigint PRIMARY KEY, "
                    "doc bytea COMPRESSION lz4 NOT NULL)")
        cur.execute("SELECT pg_backend_pid()")
        pid = cur.fetchone()[0]
    # The project's dictionary, trained on rollouts it will not compress.
    train = [orjson.dumps(r["turns"]) for k in range(8) for r in orjson.loads(request_body(10**7 + k * 256))]
    dictionary = zstandard.train_dictionary(64 * 1024, train)
    comp = zstandard.ZstdCompressor(level=3, dict_data=dictionary)
    dec = zstandard.ZstdDecompressor(dict_data=dictionary)

    variants = {"rows": lambda items: ingest.rollouts_ingest(run=run, rollouts=items),
                "folded": lambda items: folded_ingest(run, items, comp),
                "folded_lz4": lambda items: folded_ingest(run, items, None)}
    bodies = [request_body(k * 256) for k in range(len(variants) * (a.requests + 1))]
    raw = sum(len(t["content"]) + sum(len(c["output"]) + 20 for c in t.get("tool_calls", []))
              for b in bodies[:2] for r in orjson.loads(b) for t in r["turns"]) / 512
    for write in variants.values():  # warm: column types, example rows, imports
        write(_batch(_Request(bodies.pop()), schemas.rollout_batch, "rollouts"))  # type: ignore[arg-type]
    per: dict[str, dict[str, list[float]]] = {v: {"python": [], "postgres": [], "wall": []} for v in variants}
    stored = dict.fromkeys(variants, 0)
    for k, body in enumerate(bodies):
        name = list(variants)[k % len(variants)]
        w, c, p = time.perf_counter(), time.process_time(), backend_cpu(pid)
        write_fn = variants[name]
        n = write_fn(_batch(_Request(body), schemas.rollout_batch, "rollouts"))  # type: ignore[arg-type]
        per[name]["wall"].append((time.perf_counter() - w) * 1e6)
        per[name]["python"].append((time.process_time() - c) * 1e6)
        per[name]["postgres"].append((backend_cpu(pid) - p) * 1e6)
        stored[name] += n

    # Sizes of what each variant stored for this run.
    doc_bytes = {}
    with connection.cursor() as cur:
        for table in ("spike_rollout_doc", "spike_rollout_doc_lz4"):
            cur.execute(f"SELECT sum(pg_column_size(d.doc)) / count(*) FROM {table} d JOIN runs_rollout r "
                        "ON r.id = d.rollout_id WHERE r.run_id = %s", [run.pk])
            doc_bytes[table] = round(cur.fetchone()[0])

    # The read: first trajectory page of turns + calls, today's two queries against one frame.
    row_ids = list(Turn.objects.filter(rollout__run=run).values_list("rollout_id", flat=True).distinct()[: a.reads])
    with connection.cursor() as cur:
        cur.execute("SELECT d.rollout_id FROM spike_rollout_doc d JOIN runs_rollout r ON r.id = d.rollout_id "
                    "WHERE r.run_id = %s LIMIT %s", [run.pk, a.reads])
        doc_ids = [r[0] for r in cur.fetchall()]
    reads: dict[str, list[float]] = {"rows": [], "folded": []}
    for rid, did in zip(row_ids, doc_ids, strict=False):
        t0 = time.perf_counter()
        turns = list(Turn.objects.filter(rollout_id=rid, index__gte=0).order_by("index")[:51])
        calls = list(ToolCall.objects.filter(rollout_id=rid, turn_id__in=[t.pk for t in turns])
                     .order_by("turn_id", "index", "id"))
        assert turns and calls
        reads["rows"].append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        with connection.cursor() as cur:
            cur.execute("SELECT doc FROM spike_rollout_doc WHERE rollout_id = %s", [did])
            doc = orjson.loads(dec.decompress(bytes(cur.fetchone()[0])))
        assert doc and doc[1]["tool_calls"]
        reads["folded"].append((time.perf_counter() - t0) * 1e3)

    out: dict[str, Any] = {"bench": "folded_spike", "requests_per_variant": a.requests, "rollouts_per_request": 256,
                           "raw_text_bytes_per_rollout": round(raw), "doc_bytes_per_rollout": doc_bytes,
                           "load_avg_1m": os.getloadavg()[0]}
    for name, series in per.items():
        # Totals over the variant's requests: a backend's CPU ticks are 10 ms, 39 µs of a 256-rollout request.
        out[name] = {f"{k}_us_per_rollout": round(sum(v) / stored[name], 1) for k, v in series.items()}
        if name in reads:
            out[name]["read_ms_median"] = round(statistics.median(reads[name]), 3)
            out[name]["read_ms_p95"] = round(sorted(reads[name])[int(0.95 * len(reads[name]))], 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
