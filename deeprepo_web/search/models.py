from __future__ import annotations

from django.db import models


class Doc(models.Model):
    """The searchable text of one rollout (its turns, tool calls, answer and error) or of one example
    prompt; filled after ingest by search_index_update so the ingest path pays no index upkeep
    (measured: GIN indexes kept up by ingest itself cut its rate 4-12x, docs/scale.md).

    Plain integer references, not foreign keys: no trigger per row, and rows of a deleted run drop out
    of every search through the join with runs_rollout."""

    # (src, obj, part) is the key: no id column and no index of its own (8 B and a 26 MB index at 10^5).
    pk = models.CompositePrimaryKey("src", "obj", "part")
    src = models.CharField(max_length=8)  # rollout | prompt
    obj = models.BigIntegerField()  # the rollout's or example's id
    # A rollout longer than texts.PART_CHARS is cut into parts at its pieces' boundaries: a tsvector
    # holds positions up to 16,383 only (phrases further on would not match) and lexemes up to 1 MB.
    part = models.SmallIntegerField(default=0)
    rollout_id = models.BigIntegerField(null=True)  # None for prompts (an example has many rollouts)
    run_id = models.BigIntegerField(null=True)
    body = models.TextField()

    class Meta:
        indexes = [
            # A run's deletion and its confirmation's count find its documents here, not by a scan of
            # every run's (0003). Few distinct values: btree deduplication keeps it small (docs/scale.md).
            models.Index(fields=["run_id"], name="search_doc_run"),
            # Two GIN indexes over the body, made by migrations, no stored tsvector: search_doc_tsv on
            # texts.fts(body) (0002), and search_doc_trgm (body gin_trgm_ops, 0001) where pg_trgm
            # exists: the embedded Postgres of `make run` has none; substring and regex scan there.
        ]


class Watermark(models.Model):
    """How far search_index_update has read each source table (its highest id seen)."""

    src = models.CharField(max_length=8, primary_key=True)
    last_id = models.BigIntegerField(default=0)
