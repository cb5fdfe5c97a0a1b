"""The neutral record shapes shared by the client, the ingest API and every format parser.

A parser, the client and `deeprepo watch` all produce these plain dicts; the server's
`runs.ingest` consumes them. Keys not listed are ignored by the server, so parsers put
anything else worth keeping into `metrics` / `info` rather than inventing new keys.

Every field is optional unless marked required. Numbers may be None (unknown). Token
counts of 0 that mean "unknown" must be sent as None.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict


class ToolCallRecord(TypedDict, total=False):
    call_id: str | None
    name: str  # required
    arguments: Any  # dict when it parses as JSON, else the raw string
    output: str | None
    is_error: bool
    duration: float | None  # seconds
    model: str | None  # for sub-LLM calls
    input_tokens: int | None
    output_tokens: int | None
    cost: float | None  # USD
    sub_calls: list[ToolCallRecord]  # nested calls, e.g. the N sub-LLM calls of an llm_batch


class TurnRecord(TypedDict, total=False):
    role: str  # required: system | user | assistant | tool | environment
    content: str | None
    reasoning: str | None
    input_tokens: int | None
    output_tokens: int | None
    latency: float | None  # seconds
    model: str | None
    tool_calls: list[ToolCallRecord]
    metadata: dict[str, Any]


class RolloutRecord(TypedDict, total=False):
    uid: str  # idempotency key; when absent the server hashes the record
    example_key: str  # required: group identity (example_id, problem_id, instance id, prompt hash)
    prompt: Any  # stored on the Example the first time it is seen
    oracle: str | None  # oracle answer / gold patch, stored on the Example
    example_info: dict[str, Any]
    step: int | None  # training step; None for evals
    sample_index: int | None  # index within its group (epoch for Inspect)
    reward: float | None
    reward_components: dict[str, float]
    advantage: float | None
    num_turns: int | None  # when None: number of assistant turns
    input_tokens: int | None
    output_tokens: int | None
    cost: float | None
    is_truncated: bool
    stop_condition: str | None
    error: str | None
    duration: float | None  # seconds
    final_answer: str | None
    metrics: dict[str, Any]
    turns: list[TurnRecord]


class MetricPoint(TypedDict, total=False):
    step: int  # required
    time: float | None  # unix seconds
    values: dict[str, float | None]  # required


class MediaRecord(TypedDict, total=False):
    """A media file logged outside tables (W&B `wandb.log({"sample": wandb.Image(...)})`)."""

    key: str  # required: the logged key, e.g. "samples/board"
    step: int  # required
    kind: str  # required: image | html | audio | video | file
    name: str  # required: the file's path in the run, e.g. "media/images/samples/board_0_ac07.png"
    caption: str
    data: bytes  # required: the file's bytes (parsers read them so events outlive a zip's temp folder)


class RunRecord(TypedDict, total=False):
    name: str  # required
    kind: Literal["train", "eval"]
    status: str  # queued | running | finished | failed | cancelled | crashed
    model: str
    adapter: str
    environment: str
    method: str
    config: dict[str, Any]
    tags: list[str]
    notes: str
    source: str  # sdk | job | verifiers | prime | trl | inspect | swe_agent | openhands | swebench
    external_id: str  # the foreign tool's own id (re-imports update the same run)
    started_at: float | None  # unix seconds
    finished_at: float | None
    parent_ref: str | None  # ref of another run in the same import (an eval of its checkpoint)
    parent_external_id: str | None  # the parent's external id (same source): found in the project when
    #                                 it is not in this import (an eval folder imported after its train run)
    checkpoint_step: int | None
    summary: dict[str, Any]
    # The file stops before the run's end (cut short, or still written): what it says of the run's
    # end (status, summary) never replaces what a complete file stored.
    partial: bool


# Events a parser yields, in order: a RunEvent before any data event that names its ref.
@dataclass
class RunEvent:
    ref: str  # parser-local name of the run; unique within one import
    run: RunRecord


@dataclass
class MetricsEvent:
    ref: str
    points: list[MetricPoint]


@dataclass
class RolloutsEvent:
    ref: str
    rollouts: list[RolloutRecord]


@dataclass
class RewardsEvent:
    """Attach rewards to rollouts already stored (SWE-bench reports): matched by example key."""

    ref: str
    by_example: dict[str, dict[str, Any]]  # example_key -> {reward, reward_components, metrics}


@dataclass
class MediaEvent:
    ref: str
    media: list[MediaRecord]


@dataclass
class Problem:
    """Something that could not be read. Parsing goes on after it."""

    file: str
    line: int | None
    message: str
    fatal: bool = False

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.message}"


Event = RunEvent | MetricsEvent | RolloutsEvent | RewardsEvent | MediaEvent | Problem


@dataclass
class Detected:
    format: str  # e.g. "verifiers", "prime_hosted", "trl_state", "inspect_eval", ...
    path: str
    details: dict[str, Any] = field(default_factory=dict)
