"""Shapes of the runs API: what ingest takes (the server side of deeprepo_client.records) and what run and
series reads return (rollout reads: `trajectories/schemas.py`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Required

from django.conf import settings
from django.urls import reverse
from ninja import Schema
from pydantic import AfterValidator, AwareDatetime, ConfigDict, Field, TypeAdapter
from typing_extensions import TypedDict

from deeprepo_web.api.schemas import Count, Int32, Int64, Iso
from deeprepo_web.runs.models import Run


def _run_time(value: datetime) -> datetime:
    if not 1970 <= value.year <= 2200:
        raise ValueError("must be a time between 1970 and 2200")
    return value.astimezone(UTC)


# An ISO time with its offset (a naive one is ambiguous), within years a run can have.
RunTime = Annotated[AwareDatetime, AfterValidator(_run_time)]


class RunIn(Schema):
    name: str = Field(min_length=1, max_length=500)
    kind: Literal["train", "eval"] = "train"
    status: Literal["queued", "running"] = "running"
    model: str = Field(default="", max_length=500)
    adapter: str = Field(default="", max_length=500)
    environment: str = Field(default="", max_length=500)
    method: str = Field(default="", max_length=100)
    config: dict[str, Any] = {}
    tags: list[str] = []
    notes: str = ""
    external_id: str = Field(default="", max_length=200)
    source: str = Field(default="sdk", max_length=32)
    parent_run_id: str | None = None
    checkpoint_step: Int32 | None = None
    project: str | None = None  # checked against the key's project when given
    # when the run really started / ended (an import of old files); by default, now / at finish
    started_at: RunTime | None = None
    finished_at: RunTime | None = None


class RunPatch(Schema):
    name: str | None = Field(default=None, min_length=1, max_length=500)
    status: Literal["queued", "running", "finished", "failed", "cancelled", "crashed"] | None = None
    model: str | None = None
    adapter: str | None = None
    environment: str | None = None
    method: str | None = None
    config: dict[str, Any] | None = None
    tags: list[str] | None = None
    notes: str | None = None
    summary: dict[str, Any] | None = None


class FinishIn(Schema):
    status: Literal["finished", "failed", "cancelled", "crashed"] = "finished"


class RunOut(Schema):
    id: str = Field(alias="public_id")
    name: str
    kind: str
    status: str
    model: str
    environment: str
    config: dict[str, Any]
    tags: list[str]
    source: str
    parent_run_id: str | None
    checkpoint_step: int | None
    created_at: Iso
    started_at: Iso | None
    finished_at: Iso | None
    url: str

    @staticmethod
    def resolve_parent_run_id(run: Run) -> str | None:
        return run.parent.public_id if run.parent_id and run.parent else None

    @staticmethod
    def resolve_url(run: Run) -> str:
        return settings.SITE_URL + reverse("run", args=[run.project.slug, run.public_id])


class RunDeleteOut(Schema):
    id: str
    deleted: bool  # false: the run is big; the worker deletes it (the runs table says "deleting")
    contents: dict[str, int]  # what goes: rollouts, turns, metric_keys, search_docs, marks, artifacts, blobs …


class RefusedKeyOut(Schema):
    point: int  # index in the request's list of points
    step: int
    key: str  # its first 100 characters
    length: int
    error: str


class IngestOut(Schema):
    received: int
    stored: int


class MetricsIngestOut(IngestOut):
    refused: list[RefusedKeyOut] = []  # keys left out of the batch (the others were stored)


# The two hot payloads are validated into plain dicts (TypedDict), not model objects:
# no per-row object churn on 1,000-point batches.
class MetricPointIn(TypedDict, total=False):
    __pydantic_config__ = ConfigDict(extra="ignore")  # type: ignore[misc]
    step: Required[Int64]
    time: float | None
    values: Required[dict[str, float | None]]


class _ToolCallIn(TypedDict, total=False):
    __pydantic_config__ = ConfigDict(extra="ignore", allow_inf_nan=False)  # type: ignore[misc]
    call_id: str | None
    name: Required[str]
    arguments: Any
    output: str | None
    is_error: bool
    duration: float | None
    model: str | None
    input_tokens: Count | None
    output_tokens: Count | None
    cost: float | None
    sub_calls: list[_ToolCallIn]


class _TurnIn(TypedDict, total=False):
    __pydantic_config__ = ConfigDict(extra="ignore", allow_inf_nan=False)  # type: ignore[misc]
    role: Required[str]
    content: str | None
    reasoning: str | None
    input_tokens: Count | None
    output_tokens: Count | None
    latency: float | None
    model: str | None
    tool_calls: list[_ToolCallIn]
    metadata: dict[str, Any]


class RolloutIn(TypedDict, total=False):
    __pydantic_config__ = ConfigDict(extra="ignore", allow_inf_nan=False)  # type: ignore[misc]
    uid: str
    example_key: Required[str]
    prompt: Any
    oracle: str | None
    example_info: dict[str, Any]
    step: Int32 | None
    sample_index: Int32 | None
    reward: float | None
    reward_components: dict[str, float | None]
    advantage: float | None
    num_turns: Int32 | None
    input_tokens: Count | None
    output_tokens: Count | None
    cost: float | None
    is_truncated: bool
    stop_condition: str | None
    error: str | None
    duration: float | None
    final_answer: str | None
    metrics: dict[str, Any]
    turns: list[_TurnIn]


metric_batch = TypeAdapter(list[MetricPointIn])
rollout_batch = TypeAdapter(list[RolloutIn])
