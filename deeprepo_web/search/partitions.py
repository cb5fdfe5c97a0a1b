"""search_doc is LIST-partitioned by run (search migration 0003): one partition per run, named
search_doc_<run id>, and search_doc_0 for example prompts (which belong to no run). Deleting a run
drops its partition instead of deleting its documents row by row (issue 30 item 3).

Partitions are made by the indexer, for every run that has none yet, before it copies rows in."""

from __future__ import annotations

from typing import Any

PROMPTS = 0  # the run_id of prompt documents


def partition_name(run_id: int) -> str:
    return f"search_doc_{int(run_id)}"


def partitions_ensure(cur: Any) -> int:
    """Make the missing partition of each run; returns how many were made. CREATE ... PARTITION OF
    locks search_doc briefly: the caller's lock_timeout bounds the wait behind a running search."""
    cur.execute("SELECT r.id FROM runs_run r WHERE to_regclass('search_doc_' || r.id) IS NULL ORDER BY r.id")
    missing = [row[0] for row in cur.fetchall()]
    for run_id in missing:
        cur.execute(f"CREATE TABLE IF NOT EXISTS {partition_name(run_id)} PARTITION OF search_doc "
                    f"FOR VALUES IN ({int(run_id)})")
    return len(missing)


def partition_drop(cur: Any, run_id: int) -> None:
    """A deleted run's documents: its whole partition."""
    cur.execute(f"DROP TABLE IF EXISTS {partition_name(run_id)}")
