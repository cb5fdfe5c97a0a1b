"""One call to an OpenAI-compatible chat endpoint, and reading the judge's JSON answer from it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import httpx

from deeprepo_web import outbound

TIMEOUT = httpx.Timeout(120.0, connect=10.0)


class JudgeCallFailed(Exception):
    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


@dataclass
class Reply:
    answer: bool | None
    explanation: str
    citations: list[int] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0


def chat(*, base_url: str, api_key: str, model: str, messages: list[dict[str, str]]) -> Reply:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    body = {"model": model, "messages": messages, "temperature": 0, "response_format": {"type": "json_object"}}
    try:
        # The endpoint is an editor's URL: checked again now (an address may have changed since it was saved).
        with outbound.client(timeout=TIMEOUT) as http:
            res = http.post(f"{base_url.rstrip('/')}/chat/completions", json=body, headers=headers)
    except outbound.OutboundRefused as exc:
        raise JudgeCallFailed(f"the judge endpoint is refused: {exc}", permanent=True) from exc
    except httpx.HTTPError as exc:
        raise JudgeCallFailed(f"the judge endpoint is unreachable: {type(exc).__name__}: {exc}") from exc
    if res.status_code in (401, 403, 404):
        raise JudgeCallFailed(f"the judge endpoint refused: HTTP {res.status_code} {res.text[:200]}", permanent=True)
    if res.status_code >= 400:
        raise JudgeCallFailed(f"the judge endpoint answered HTTP {res.status_code}: {res.text[:200]}")
    try:
        data = res.json()
        text = data["choices"][0]["message"]["content"] or ""
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise JudgeCallFailed("the judge endpoint's answer is not an OpenAI chat completion") from exc
    usage = data.get("usage") or {}
    reply = parse_reply(text)
    reply.input_tokens = int(usage.get("prompt_tokens") or 0)
    reply.output_tokens = int(usage.get("completion_tokens") or 0)
    return reply


def parse_reply(text: str) -> Reply:
    """{"answer": "yes"|"no", "explanation": "…", "citations": [turn numbers]}, found in the text."""
    match = re.search(r"\{.*\}", text, re.S)
    try:
        obj: Any = json.loads(match.group(0)) if match else None
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        return Reply(None, f"unreadable judge reply: {text[:300]}")
    raw = str(obj.get("answer", "")).strip().lower()
    answer = True if raw in ("yes", "true", "1") else False if raw in ("no", "false", "0") else None
    cites = obj.get("citations") or []
    citations = sorted({int(c) for c in cites if isinstance(c, int | float) or (isinstance(c, str) and c.isdigit())})
    return Reply(answer, str(obj.get("explanation", ""))[:4000], citations)
