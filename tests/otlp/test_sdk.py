"""An agent instrumented with the real OpenTelemetry SDK (openai-v2 instrumentation, OTLP exporter
over protobuf and over JSON) pointed at a live server with OTEL_EXPORTER_OTLP_ENDPOINT: its
episodes end as rollouts with turns, tool calls, a nested sub-LLM call, tokens and RL fields."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from deeprepo_web.runs.models import Rollout, Run, ToolCall
from tests.otlp.stub_openai import StubOpenAI

pytestmark = pytest.mark.django_db(transaction=True)

AGENT = Path(__file__).with_name("genai_agent.py")


def _run_agent(url: str, key: str, encoding: str, capture: str) -> None:
    with StubOpenAI() as stub:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": url,
               "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer%20{key}",
               "OTEL_SERVICE_NAME": f"weather-agent-{encoding}",
               "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
               "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": capture,
               "STUB_OPENAI_URL": stub.url}
        done = subprocess.run([sys.executable, str(AGENT), encoding], env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        # An exporter that got an error answer logs it and exits 0: the log must be clean.
        assert "Failed to export" not in done.stderr, done.stderr[-3000:]
        assert stub.count == 6  # 2 episodes x (chat, forecaster, chat)


@pytest.mark.parametrize(("encoding", "capture"), [("proto", "event_only"), ("json", "span_only")])
def test_instrumented_openai_agent_lands_as_rollouts(live_server: Any, team: Any, encoding: str,
                                                     capture: str) -> None:
    _run_agent(live_server.url, team.key, encoding, capture)
    run = Run.objects.get(project=team.project, name=f"weather-agent-{encoding}")
    assert run.source == "otlp" and run.model == "policy-0.5b"
    rollouts = list(Rollout.objects.filter(run=run).select_related("example").order_by("sample_index"))
    assert [(r.step, r.sample_index, r.reward) for r in rollouts] == [(3, 0, 1.0), (3, 1, 0.0)]
    assert {r.example.key for r in rollouts} == {"weather-zurich"}  # one GRPO group
    for episode, r in enumerate(rollouts):
        turns = list(r.turns.order_by("index"))
        assert [t.role for t in turns] == ["system", "user", "assistant", "assistant"]
        assert turns[1].content == f"Weather in Zürich? <b>episode {episode}</b>"
        assert turns[3].content == f"It is {18 + episode}°C in Zürich. <script>alert(1)</script>"
        assert r.final_answer == turns[3].content
        assert turns[2].model == "policy-0.5b-v1"
        assert (turns[2].input_tokens, turns[2].output_tokens) == (12, 7)
        assert (turns[3].input_tokens, turns[3].output_tokens) == (14, 7)
        assert (r.input_tokens, r.output_tokens) == (26, 14)
        assert r.stop_condition == "stop" and r.duration and r.duration > 0
        calls = list(ToolCall.objects.filter(rollout=r).order_by("id"))
        tool, sub = calls
        assert (tool.name, tool.parent_id, tool.turn_id) == ("get_weather", None, turns[2].pk)
        assert tool.arguments == {"city": "Zürich"}
        assert json.loads(tool.output) == {"temp_c": 18 + episode, "note": "Cloudy, light wind."}
        assert tool.duration and tool.duration > 0
        assert (sub.parent_id, sub.model, sub.output) == (tool.pk, "forecaster-mini-v1", "Cloudy, light wind.")
        assert (sub.input_tokens, sub.output_tokens) == (11, 7)
