"""Issue 30 items 1 and 2, the option not measured before: a per-project Tantivy index instead of the
search table's two GIN indexes. The same documents go into both, on this machine, one after the other:

- Postgres: COPY into a fresh table shaped like search_doc, with its words GIN (`texts.fts(body)`) and
  its trigram GIN, on 1 connection and on 2 at once (the indexer's default workers);
- Tantivy (`tantivy` from PyPI, not a dependency of the project: run with `uv run --with tantivy==0.27.0`):
  a words field (lowercased words, positions kept: phrases need no recheck), a 3-gram field over the
  whole lowercased text (substring and regex candidates, doc ids only), the body stored in its
  compressed doc store, the run as a fast field; writer threads 1 and 2.

Documents: `--seeded N` search documents of a database seeded by bench/search.py (seed_scale's rollouts,
~1.5 kB, with its planted rare texts), and `--synthetic M` rollouts shaped like bench/ingest.py's (8 turns of
~1 KB and 4 tool calls: ~8.4 kB). Reported per set: documents/s, bytes per document of each index (and of
Tantivy's stored bodies against the raw text), and for the seeded set the time and candidates of a rare
word pair and a rare substring in each engine (Tantivy's substring candidates rechecked in Python here;
the product would recheck in RE2).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres uv run --with tantivy==0.27.0 \\
        python bench/tantivy_spike.py --database bench_s5 --seeded 100000 --synthetic 20000

Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import tantivy

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import db_url  # noqa: E402
from bench.ingest import contents  # noqa: E402

SCRATCH = "spike_search_doc"
WORDS_INDEX = "(to_tsvector('simple'::regconfig, translate(body, '/.<>', '    ')))"


def seeded_docs(conn: psycopg.Connection[Any], n: int) -> list[tuple[int, int, str]]:
    rows = conn.execute("SELECT obj, run_id, body FROM search_doc WHERE src = 'rollout' ORDER BY obj LIMIT %s",
                        [n]).fetchall()
    return [(int(o), int(r), str(b)) for o, r, b in rows]


def synthetic_docs(n: int) -> list[tuple[int, int, str]]:
    """bench/ingest.py's rollouts as the indexer joins them: turn contents, each assistant turn's call."""
    texts = contents()
    out = []
    for i in range(n):
        pieces = []
        for t in range(8):
            pieces.append(texts[(i * 8 + t) % len(texts)])
            if t % 2:
                pieces.append(f'bash\n{{"cmd": "pytest -k t{t}"}}')
        out.append((10_000_000 + i, 1, "\n".join(pieces)))
    return out


def pg_index(url: str, docs: list[tuple[int, int, str]], connections: int) -> dict[str, Any]:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {SCRATCH}")
        conn.execute(f"CREATE TABLE {SCRATCH} (obj bigint PRIMARY KEY, run_id bigint, body text NOT NULL)")
        conn.execute(f"CREATE INDEX {SCRATCH}_tsv ON {SCRATCH} USING gin {WORDS_INDEX}")
        conn.execute(f"CREATE INDEX {SCRATCH}_trgm ON {SCRATCH} USING gin (body gin_trgm_ops)")
        conn.execute(f"CREATE INDEX {SCRATCH}_run ON {SCRATCH} (run_id)")

    def load(part: list[tuple[int, int, str]]) -> None:
        with psycopg.connect(url) as c, c.cursor() as cur:
            for start in range(0, len(part), 1_500):  # the indexer's window of rollouts, a commit each
                with cur.copy(f"COPY {SCRATCH} (obj, run_id, body) FROM STDIN") as copy:
                    for row in part[start:start + 1_500]:
                        copy.write_row(row)
                c.commit()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=load, args=(docs[k::connections],)) for k in range(connections)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    seconds = time.perf_counter() - t0
    with psycopg.connect(url) as conn:
        size = {name: conn.execute("SELECT pg_relation_size(%s::regclass)", [name]).fetchone()[0]  # type: ignore[index]
                for name in (f"{SCRATCH}_tsv", f"{SCRATCH}_trgm")}
        heap = conn.execute("SELECT pg_table_size(%s::regclass)", [SCRATCH]).fetchone()[0]  # type: ignore[index]
    n = len(docs)
    return {"docs_per_s": round(n / seconds), "seconds": round(seconds, 1),
            "words_gin_b": round(size[f"{SCRATCH}_tsv"] / n), "trigram_gin_b": round(size[f"{SCRATCH}_trgm"] / n),
            "body_copy_b": round(heap / n)}


def pg_queries(url: str) -> dict[str, Any]:
    out = {}
    with psycopg.connect(url) as conn:
        for name, sql, param in [
            ("words", f"SELECT count(*) FROM {SCRATCH} WHERE {WORDS_INDEX} @@ "
                      "to_tsquery('simple', %s)", "quota & exceeded"),
            ("substring", f"SELECT count(*) FROM {SCRATCH} WHERE body ILIKE %s", "%quota exceed%"),
        ]:
            times = []
            for _ in range(5):
                t0 = time.perf_counter()
                hits = conn.execute(sql, [param]).fetchone()[0]  # type: ignore[index]
                times.append((time.perf_counter() - t0) * 1000)
            out[name] = {"hits": hits, "ms_median": round(sorted(times)[2], 1)}
    return out


def _schema() -> tantivy.Schema:
    b = tantivy.SchemaBuilder()
    b.add_text_field("words", tokenizer_name="words", index_option="position")
    b.add_text_field("grams", tokenizer_name="grams3", index_option="basic")
    b.add_text_field("body", stored=True, tokenizer_name="raw", index_option="basic")  # stored only: raw, 1 term
    b.add_integer_field("obj", stored=True, indexed=True, fast=True)
    b.add_integer_field("run", indexed=True, fast=True)
    return b.build()


def _open(path: str) -> tantivy.Index:
    index = tantivy.Index(_schema(), path=path)
    index.register_tokenizer("words", tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
                             .filter(tantivy.Filter.remove_long(255)).filter(tantivy.Filter.lowercase()).build())
    index.register_tokenizer("grams3", tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.ngram(3, 3, False))
                             .filter(tantivy.Filter.lowercase()).build())
    return index


def _dir_bytes(path: str) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def tantivy_index(docs: list[tuple[int, int, str]], threads: int, path: str) -> dict[str, Any]:
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    index = _open(path)
    t0 = time.perf_counter()
    writer = index.writer(heap_size=256_000_000, num_threads=threads)
    for start in range(0, len(docs), 1_500):  # a commit per window, as the indexer commits
        for obj, run, body in docs[start:start + 1_500]:
            writer.add_document(tantivy.Document(words=body, grams=body[:100_000], body=body[:100_000], obj=obj, run=run))
        writer.commit()
    writer.wait_merging_threads()
    seconds = time.perf_counter() - t0
    n = len(docs)
    files: dict[str, int] = {}
    for p in Path(path).rglob("*"):
        if p.is_file():
            files[p.suffix or p.name] = files.get(p.suffix or p.name, 0) + p.stat().st_size
    raw = sum(len(b.encode()) for _, _, b in docs)
    store = files.get(".store", 0)
    return {"docs_per_s": round(n / seconds), "seconds": round(seconds, 1),
            "index_b": round((_dir_bytes(path) - store) / n), "stored_bodies_b": round(store / n),
            "stored_over_raw": round(store / raw, 2), "files_b": {k: round(v / n) for k, v in sorted(files.items())}}


def tantivy_queries(path: str) -> dict[str, Any]:
    index = _open(path)
    index.reload()
    searcher = index.searcher()
    schema = index.schema

    def terms(field: str, text: str, size: int) -> tantivy.Query:
        # the query's own text through the field's analyzer: lowercased words, or every 3-gram
        if field == "words":
            toks = text.lower().split()
        else:
            low = text.lower()
            toks = sorted({low[i:i + size] for i in range(len(low) - size + 1)})
        return tantivy.Query.boolean_query([(tantivy.Occur.Must, tantivy.Query.term_query(schema, field, t))
                                            for t in toks])

    out = {}
    needle = "quota exceed"
    for name, query, check in [("words", terms("words", "quota exceeded", 0), None),
                               ("substring", terms("grams", needle, 3), needle)]:
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            found = searcher.search(query, limit=1_000_000)
            candidates = len(found.hits)
            hits = candidates
            if check:  # recheck the candidates' stored bodies
                hits = sum(check in searcher.doc(addr)["body"][0].lower() for _, addr in found.hits)
            times.append((time.perf_counter() - t0) * 1000)
        out[name] = {"candidates": candidates, "hits": hits, "ms_median": round(sorted(times)[2], 1)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--database", default="bench_s5", help="a database seeded by bench/search.py")
    ap.add_argument("--seeded", type=int, default=100_000)
    ap.add_argument("--synthetic", type=int, default=20_000)
    a = ap.parse_args()
    url = db_url(a.database)
    with psycopg.connect(url) as conn:
        sets = {"seeded": seeded_docs(conn, a.seeded), "synthetic_8k": synthetic_docs(a.synthetic)}
    tmp = tempfile.mkdtemp(prefix="tantivy_spike_")
    result: dict[str, Any] = {"bench": "tantivy_spike", "load_avg_1m_start": os.getloadavg()[0]}
    try:
        for name, docs in sets.items():
            raw = sum(len(b.encode()) for _, _, b in docs)
            entry: dict[str, Any] = {"docs": len(docs), "raw_b": round(raw / len(docs))}
            for k in (1, 2):
                entry[f"postgres_{k}conn"] = pg_index(url, docs, k)
                print(name, f"postgres {k} conn", entry[f"postgres_{k}conn"], file=sys.stderr)
                if name == "seeded" and k == 1:
                    entry["postgres_queries"] = pg_queries(url)
                entry[f"tantivy_{k}thread"] = tantivy_index(docs, k, f"{tmp}/{name}")
                print(name, f"tantivy {k} thread", entry[f"tantivy_{k}thread"], file=sys.stderr)
                if name == "seeded" and k == 1:
                    entry["tantivy_queries"] = tantivy_queries(f"{tmp}/{name}")
            result[name] = entry
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP TABLE IF EXISTS {SCRATCH}")
    result["load_avg_1m_end"] = os.getloadavg()[0]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
