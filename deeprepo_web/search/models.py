from __future__ import annotations

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models


class Doc(models.Model):
    """The searchable text of one turn, tool call, rollout (answer + error) or example prompt, with its
    tsvector; filled after ingest by search_index_update so the ingest path pays no index upkeep.

    Plain integer references, not foreign keys: no trigger per row, and rows of a deleted run drop out
    of every search through the join with runs_rollout."""

    src = models.CharField(max_length=8)  # turn | call | rollout | prompt
    obj = models.BigIntegerField()  # the turn's, call's, rollout's or example's id
    rollout_id = models.BigIntegerField(null=True)  # None for prompts (an example has many rollouts)
    run_id = models.BigIntegerField(null=True)
    turn_index = models.IntegerField(null=True)
    body = models.TextField()
    tsv = SearchVectorField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["src", "obj"], name="search_doc_src_obj")]
        indexes = [
            models.Index(fields=["rollout_id"], name="search_doc_rollout"),
            GinIndex(fields=["tsv"], name="search_doc_tsv"),
            # search_doc_trgm (body gin_trgm_ops) is made by the migration where pg_trgm exists: the
            # embedded Postgres of `make run` has no pg_trgm; substring and regex searches scan there.
        ]


class Watermark(models.Model):
    """How far search_index_update has read each source table (its highest id seen)."""

    src = models.CharField(max_length=8, primary_key=True)
    last_id = models.BigIntegerField(default=0)
