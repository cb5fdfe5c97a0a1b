"""Shapes of the rollouts API: a page of rollouts, one rollout with its turns and tool calls."""

from __future__ import annotations

from typing import Any

from ninja import Schema
from pydantic import Field

from deeprepo_web.runs.models import Rollout, ToolCall, Turn
from deeprepo_web.runs.turns import turns_page


class RolloutOut(Schema):
    id: int
    uid: str
    example_key: str
    step: int | None
    sample_index: int | None
    reward: float | None
    reward_components: dict[str, Any]
    advantage: float | None
    num_turns: int | None
    input_tokens: int | None
    output_tokens: int | None
    cost: float | None
    is_truncated: bool
    stop_condition: str
    error: str
    duration: float | None
    final_answer: str
    metrics: dict[str, Any]

    @staticmethod
    def resolve_example_key(r: Rollout) -> str:
        return r.example.key


class RolloutPage(Schema):
    page: int | None  # the old numbered paging's page, when the request used it
    has_next: bool
    next_cursor: str | None  # pass as ?cursor= for the next page; null on the last
    rollouts: list[RolloutOut]


class ToolCallOut(Schema):
    id: int
    parent: int | None = Field(alias="parent_id")
    name: str
    arguments: Any
    output: str
    output_truncated: bool
    is_error: bool

    @staticmethod
    def resolve_output_truncated(c: ToolCall) -> bool:
        return bool(c.output_blob)


class TurnOut(Schema):
    index: int
    role: str
    content: str
    content_truncated: bool
    reasoning: str
    input_tokens: int | None
    output_tokens: int | None
    latency: float | None
    tool_calls: list[ToolCallOut]

    @staticmethod
    def resolve_content_truncated(t: Turn) -> bool:
        return bool(t.content_blob)

    @staticmethod
    def resolve_tool_calls(t: Turn) -> list[ToolCall]:
        return sorted(t.tool_calls.all(), key=lambda c: (c.parent_id or 0, c.index))


class RolloutDetailOut(RolloutOut):
    turns: list[TurnOut]

    @staticmethod
    def resolve_turns(r: Rollout) -> list[Turn]:
        return turns_page(rollout=r, start=0, limit=10_000)
