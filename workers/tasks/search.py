"""Beat: copy newly ingested text into the search index (search_doc)."""

from __future__ import annotations

from workers.celery import app


# Idempotent (rows already indexed are skipped) and bounded by its budget; the next beat goes on.
@app.task(name="deeprepo.search.index", soft_time_limit=120, time_limit=150, ignore_result=True)
def search_index() -> int:
    from deeprepo_web.search.indexer import search_index_update

    return search_index_update(budget_seconds=60)
