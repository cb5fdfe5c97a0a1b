from __future__ import annotations

import json
import secrets
from typing import Any

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import F
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import Coalesce
from django.utils import timezone

from deeprepo_web.accounts.models import Project
from deeprepo_web.runs.ingest.pg import dumps

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def new_public_id() -> str:
    # 16 base-36 characters ~ 82 bits: unguessable enough that ids in URLs never enumerate.
    return "".join(secrets.choice(_ALPHABET) for _ in range(16))


class RunKind(models.TextChoices):
    TRAIN = "train"
    EVAL = "eval"


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"
    CRASHED = "crashed"


FINAL_RUN_STATUSES = {RunStatus.FINISHED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.CRASHED}


class Run(models.Model):
    public_id = models.CharField(max_length=24, unique=True, default=new_public_id)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="runs")
    name = models.CharField(max_length=500)
    kind = models.CharField(max_length=8, choices=RunKind.choices, default=RunKind.TRAIN)
    status = models.CharField(max_length=12, choices=RunStatus.choices, default=RunStatus.RUNNING)
    model = models.CharField(max_length=500, blank=True, default="")
    adapter = models.CharField(max_length=500, blank=True, default="")
    environment = models.CharField(max_length=500, blank=True, default="")
    method = models.CharField(max_length=100, blank=True, default="")
    config = models.JSONField(default=dict, blank=True)
    tags = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    notes = models.TextField(blank=True, default="")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="evals")
    checkpoint_step = models.IntegerField(null=True, blank=True)
    source = models.CharField(max_length=32, default="sdk")
    # The foreign tool's id (or the client's own run uuid): re-imports and retries find the same run.
    external_id = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    # When rollouts last changed in place (same ids: a rebuild, rewards attached by an import): what
    # is keyed on the newest rollout id (the run page's GRPO health) adds this. Not updated_at: every
    # batch of points moves that, and a live run's health would be computed again at each poll.
    rollouts_rewritten_at = models.DateTimeField(null=True, blank=True)
    # A cache of aggregates (last reward, counts ...) for list pages; rebuilt from rows when in doubt.
    summary = models.JSONField(default=dict, blank=True)
    # Set when an editor asked to delete a run too big to delete within the request: the worker
    # deletes it (runs.deletion); until then the runs table and the run page say "deleting".
    deletion_requested_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["project", "-created_at"], name="run_project_created"),
            models.Index(fields=["project", "status"], name="run_project_status"),
            models.Index(fields=["parent", "checkpoint_step"], name="run_parent_ckpt"),
            GinIndex(fields=["tags"], name="run_tags_gin"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "source", "external_id"],
                condition=~models.Q(external_id=""),
                name="run_external_id_unique",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.public_id})"

    @property
    def duration_seconds(self) -> float | None:
        """Finished minus started; a run still going counts to now. A run that ended without an end
        time (an import of a finished eval) has the time its files report, or none: never "until now"."""
        if self.finished_at is not None and self.started_at is not None:
            return (self.finished_at - self.started_at).total_seconds()
        if self.status in FINAL_RUN_STATUSES:
            reported = (self.summary or {}).get("time_s") if isinstance(self.summary, dict) else None
            # 0 is what some writers put when they did not time it (vf-eval's time_ms: 0.0).
            return float(reported) if isinstance(reported, int | float) and reported > 0 else None
        if self.started_at is None:
            return None
        return (timezone.now() - self.started_at).total_seconds()


class MetricSeries(models.Model):
    """One metric key of one run; points and rollups hang off its small integer id."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="series")
    key = models.CharField(max_length=500)
    count = models.IntegerField(default=0)
    first_step = models.BigIntegerField(null=True)
    last_step = models.BigIntegerField(null=True)
    last_value = models.FloatField(null=True)
    min_value = models.FloatField(null=True)
    max_value = models.FloatField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "key"], name="series_run_key_unique")]


class MetricAxis(models.Model):
    """The x-axis a run's metric is drawn against besides its step: W&B's `define_metric(key,
    step_metric=x_key)`. `key` may be a glob ("eval/*"), as the SDK call allows."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="metric_axes")
    key = models.CharField(max_length=500)
    x_key = models.CharField(max_length=500)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "key"], name="metric_axis_run_key_unique")]


class Metric(models.Model):
    pk = models.CompositePrimaryKey("series_id", "step")
    # The key (series, step) serves every read by series: an index of its own was 14 % of the table.
    series = models.ForeignKey(MetricSeries, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False)
    step = models.BigIntegerField()
    value = models.FloatField(null=True)
    time = models.FloatField(null=True)  # unix seconds


class MetricRollup(models.Model):
    """Per-bucket min / max / last of a series at a few resolutions, kept as points arrive.

    Level L groups steps into buckets of ROLLUP_WIDTHS[L] steps; min/max/last are idempotent
    under re-sent points, so retries never skew them.
    """

    pk = models.CompositePrimaryKey("series_id", "level", "bucket")
    series = models.ForeignKey(MetricSeries, on_delete=models.DO_NOTHING, db_constraint=False, db_index=False)
    level = models.SmallIntegerField()
    bucket = models.BigIntegerField()
    min_value = models.FloatField(null=True)
    max_value = models.FloatField(null=True)
    last_value = models.FloatField(null=True)
    last_step = models.BigIntegerField()
    last_time = models.FloatField(null=True)


class Example(models.Model):
    """A task's stable identity across runs and checkpoints: (project, environment, key)."""

    # example_unique leads with the project: it serves reads by project too.
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="examples", db_index=False)
    environment = models.CharField(max_length=500, blank=True, default="")
    key = models.TextField()
    # Keys can be long (a prompt hash, or 10 KB of text): uniqueness goes through their sha256.
    key_hash = models.CharField(max_length=64)
    prompt = models.JSONField(null=True, blank=True)
    oracle = models.TextField(blank=True, default="")
    info = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "environment", "key_hash"], name="example_unique")
        ]


def total_tokens() -> CombinedExpression:
    """A rollout's input + output tokens, a missing count as 0: the rollouts list's tokens column and
    order. One definition, as the index that serves the order must match it exactly."""
    return Coalesce("input_tokens", 0) + Coalesce("output_tokens", 0)


class Rollout(models.Model):
    # No single-column FK indexes: the composite indexes below lead with run and with example.
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="rollouts", db_index=False)
    uid = models.CharField(max_length=64)
    example = models.ForeignKey(Example, on_delete=models.PROTECT, related_name="rollouts", db_index=False)
    step = models.IntegerField(null=True, blank=True)
    sample_index = models.IntegerField(null=True, blank=True)
    reward = models.FloatField(null=True, blank=True)
    reward_components = models.JSONField(default=dict, blank=True)
    advantage = models.FloatField(null=True, blank=True)
    num_turns = models.IntegerField(default=0)
    input_tokens = models.BigIntegerField(null=True, blank=True)
    output_tokens = models.BigIntegerField(null=True, blank=True)
    cost = models.FloatField(null=True, blank=True)
    is_truncated = models.BooleanField(default=False)
    stop_condition = models.CharField(max_length=200, blank=True, default="")
    error = models.TextField(blank=True, default="")
    duration = models.FloatField(null=True, blank=True)
    final_answer = models.TextField(blank=True, default="")
    metrics = models.JSONField(default=dict, blank=True)
    # Facts that pages read across many rollouts, written with the row from the record (ingest, replace,
    # seed_scale) so that no query across rollouts reads turn or tool-call rows: the distinct tool names
    # (search's tool filter), one [tool, turn index, error line, signature] per failed call and the final
    # error's signature (`analysis.behaviour.error_signature`: what the errors page groups).
    tools = models.JSONField(default=list, blank=True)
    tool_errors = models.JSONField(default=list, blank=True)
    error_sig = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "uid"], name="rollout_run_uid_unique")]
        indexes = [
            models.Index(fields=["run", "step", "example"], name="rollout_run_step_example"),
            # The rollouts list sorted by reward, worst or best first (ties by id, unscored last): read in
            # order, not sorted whole. A run of 300,000 rollouts sorted its rows per page, 264 ms (docs/scale.md).
            models.Index(fields=["run", "reward", "id"], name="rollout_run_reward_id"),
            models.Index(F("run"), F("reward").desc(nulls_last=True), F("id").desc(), name="rollout_run_reward_desc"),
            # Sorted by turns or by tokens, either way (read backwards for the other): the same, a run of
            # 300,000 rollouts took ~200 ms a page. The tokens' expression is the list's (`total_tokens`).
            models.Index(fields=["run", "num_turns", "id"], name="rollout_run_turns"),
            models.Index(F("run"), total_tokens(), F("id"), name="rollout_run_tokens"),
            models.Index(fields=["example", "run"], name="rollout_example_run"),
            # A run's rollouts in logging order (the rollouts list's default): without it Postgres
            # walked the primary key from the first rollout of every run, 16 ms at 100k rollouts.
            models.Index(fields=["run", "id"], name="rollout_run_id"),
            # Search's tool filter (`tools @> '["name"]'`): a tool no rollout (or few) used is answered
            # from here instead of a walk over every rollout (2.2 B a rollout; docs/scale.md).
            GinIndex(fields=["tools"], opclasses=["jsonb_path_ops"], name="rollout_tools"),
        ]


class JsonColumn(models.JSONField):
    """A json column (not jsonb): Postgres keeps the text as written; psycopg hands it over parsed.
    No model uses it now; migration 0020 names it (runs_rolloutturns.doc until 0023)."""

    def db_type(self, connection: Any) -> str:
        return "json"

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return value


class JsonTextColumn(models.TextField):
    """JSON kept as text, read back parsed. A json column checks every document it is given, character
    by character: for a rollout's turns that was ~12 µs of the server's CPU per rollout at ingest
    (docs/scale.md, "The turns document as text"). Written with `runs.ingest.pg.dumps`, as the ingest
    writes it, which writes only valid JSON; SQL reads it with `::jsonb`. Read with json, as psycopg read
    the json column: orjson would turn an integer past 64 bits (which dumps writes as it is) into a float."""

    # What django-stubs types the attribute as (a TextField's would be str).
    _pyi_private_set_type: Any
    _pyi_private_get_type: Any

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return None if value is None else json.loads(value)

    def get_prep_value(self, value: Any) -> Any:
        return value if value is None or isinstance(value, str) else dumps(value)


class RolloutTurns(models.Model):
    """A rollout's turns and their tool calls (nested ones too), one JSON document per rollout: a
    list of turns in order, each with its calls (`runs/turndoc.py` writes it and names its keys).

    One row instead of ~12 (8 turns and their calls, each with two index entries), compressed as one
    value (lz4) where a turn of 150 B never was: turns and calls take half the bytes they took as rows
    (docs/scale.md, "Turns as one document"). Written only by the ingest services, in
    the transaction that creates or rebuilds its rollout; no foreign key is enforced by Postgres (a
    per-row trigger), run_delete removes them explicitly.
    """

    rollout = models.OneToOneField(
        Rollout, on_delete=models.CASCADE, primary_key=True, related_name="+", db_constraint=False
    )
    doc = JsonTextColumn()


# Turn and ToolCall are views over RolloutTurns (runs 0020): every reader that asks for a rollout's
# turns or calls by rollout keeps working, through the ORM or SQL, and Postgres expands only that
# rollout's document. They are read-only: writes go to the document (runs/turndoc.py).
class Turn(models.Model):
    rollout = models.ForeignKey(
        Rollout, on_delete=models.DO_NOTHING, related_name="turns", db_constraint=False, db_index=False
    )
    index = models.IntegerField()
    role = models.CharField(max_length=32)
    content = models.TextField(blank=True, default="")
    # When content passed the blob threshold: sha256 of the full body in the blob store.
    content_blob = models.CharField(max_length=64, blank=True, default="")
    content_size = models.BigIntegerField(default=0)
    reasoning = models.TextField(blank=True, default="")
    input_tokens = models.BigIntegerField(null=True, blank=True)
    output_tokens = models.BigIntegerField(null=True, blank=True)
    latency = models.FloatField(null=True, blank=True)
    model = models.CharField(max_length=500, blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        managed = False
        db_table = "runs_turn"


class ToolCall(models.Model):
    turn = models.ForeignKey(
        Turn, on_delete=models.DO_NOTHING, related_name="tool_calls", db_constraint=False, db_index=False
    )
    rollout = models.ForeignKey(
        Rollout, on_delete=models.DO_NOTHING, related_name="tool_calls", db_constraint=False, db_index=False
    )
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.DO_NOTHING, related_name="sub_calls", db_constraint=False,
        db_index=False,
    )
    index = models.IntegerField()
    call_id = models.CharField(max_length=200, blank=True, default="")
    name = models.CharField(max_length=500)
    arguments = models.JSONField(null=True, blank=True)
    output = models.TextField(blank=True, default="")
    output_blob = models.CharField(max_length=64, blank=True, default="")
    output_size = models.BigIntegerField(default=0)
    is_error = models.BooleanField(default=False)
    duration = models.FloatField(null=True, blank=True)
    model = models.CharField(max_length=500, blank=True, default="")
    input_tokens = models.BigIntegerField(null=True, blank=True)
    output_tokens = models.BigIntegerField(null=True, blank=True)
    cost = models.FloatField(null=True, blank=True)
    turn_index = models.IntegerField()  # the index of its turn, from the document (no join of two views)

    class Meta:
        managed = False
        db_table = "runs_toolcall"


class ModelPrice(models.Model):
    """A project's price for models whose lower-cased name contains `model_pattern` (longest wins).

    Overrides analysis.cost.DEFAULT_PRICES; used only where a rollout came without its own cost.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="model_prices")
    model_pattern = models.CharField(max_length=200)
    input_per_mtok = models.FloatField()  # USD per million input tokens
    output_per_mtok = models.FloatField()  # USD per million output tokens
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "model_pattern"], name="modelprice_project_pattern_unique")
        ]

    def __str__(self) -> str:
        return f"{self.model_pattern}: ${self.input_per_mtok}/${self.output_per_mtok} per Mtok"


class BlobRef(models.Model):
    """A run uses a blob (an offloaded body or image). Answers "may this project see blob X?" through
    an index, and "is blob X still used?" before a run's deletion removes it from the store."""

    pk = models.CompositePrimaryKey("sha", "run_id")
    sha = models.CharField(max_length=64)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="blob_refs", db_index=False)  # blobref_run

    class Meta:
        indexes = [models.Index(fields=["run"], name="blobref_run")]


class IngestRefusal(models.Model):
    """Batches of a run the API refused for good (a 4xx with a reason), one row per distinct error.

    The run page shows them as a banner: a client keeps refused batches on disk, but the person
    looking at the charts should learn that data is missing, and why.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="ingest_refusals")
    kind = models.CharField(max_length=16)  # metrics | rollouts
    error = models.CharField(max_length=500)
    count = models.IntegerField(default=1)
    first_at = models.DateTimeField(default=timezone.now)
    last_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "kind", "error"], name="refusal_run_kind_error")]
