"""OpenHands evaluation `output.jsonl`: one instance a line with its event-stream history."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..records import Event, Problem, RolloutRecord, RunEvent, RunRecord, ToolCallRecord, TurnRecord
from ._batches import batch_rollouts
from ._json import iter_jsonl
from ._patches import patch_touches_tests
from ._values import err_text, num, short_hash, tokens

# Noisy per-action flags that say nothing about what the agent did.
_ARG_NOISE = {"thought", "is_input", "blocking", "is_static", "cwd", "hidden", "confirmation_state",
              "security_risk", "impl_source"}
_SECRET = ("api_key", "secret", "password", "access_key", "auth_token")


def _redact(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: ("***" if any(s in k.lower() for s in _SECRET) and v[k] else _redact(x)) for k, x in v.items()}
    return v


def _usage(ev: dict[str, Any]) -> tuple[float, float, float] | None:
    lm = ev.get("llm_metrics")
    if not isinstance(lm, dict):
        return None
    acc = lm.get("accumulated_token_usage") or {}
    return (num(acc.get("prompt_tokens")) or 0.0, num(acc.get("completion_tokens")) or 0.0,
            num(lm.get("accumulated_cost")) or 0.0)


def history_to_turns(history: list[Any]) -> tuple[list[TurnRecord], dict[str, Any]]:
    turns: list[TurnRecord] = []
    calls_by_event: dict[Any, ToolCallRecord] = {}
    calls_by_tcid: dict[str, ToolCallRecord] = {}
    prev = (0.0, 0.0, 0.0)
    extra: dict[str, Any] = {}
    for ev in history:
        if not isinstance(ev, dict):
            continue
        action, obs = ev.get("action"), ev.get("observation")
        args = ev.get("args") or {}
        if action == "system":
            extra["system_prompt"] = args.get("content") or ev.get("message")
            continue
        if action is not None:
            if ev.get("source") == "user" and action == "message":
                turns.append({"role": "user", "content": args.get("content") or ev.get("message")})
                continue
            if ev.get("source") != "agent":
                # recall requests and the like: the environment talking, not the model
                turns.append({"role": "environment", "content": ev.get("message"), "metadata": {"action": action}})
                continue
            tcm = ev.get("tool_call_metadata") or {}
            content = args.get("thought")
            if action == "message":
                content = args.get("content") or ev.get("message")
            elif action == "finish":
                content = args.get("final_thought") or args.get("thought") or ev.get("message")
            turn: TurnRecord = {"role": "assistant", "content": content}
            if action != "message" or tcm:
                call: ToolCallRecord = {"call_id": tcm.get("tool_call_id"), "name": str(tcm.get("function_name") or action),
                                        "arguments": {k: v for k, v in args.items() if k not in _ARG_NOISE}}
                turn["tool_calls"] = [call]
                calls_by_event[ev.get("id")] = call
                if call.get("call_id"):
                    calls_by_tcid[str(call["call_id"])] = call
            resp = tcm.get("model_response") or {}
            if resp.get("model"):
                turn["model"] = resp["model"]
            usage = _usage(ev)
            if usage is not None:  # llm_metrics are cumulative: the difference is this turn's usage
                turn["input_tokens"] = tokens(usage[0] - prev[0])
                turn["output_tokens"] = tokens(usage[1] - prev[1])
                prev = usage
            turns.append(turn)
            continue
        if obs is not None:
            tcm = ev.get("tool_call_metadata") or {}
            target = calls_by_event.get(ev.get("cause")) or calls_by_tcid.get(str(tcm.get("tool_call_id")))
            text = ev.get("content") if ev.get("content") is not None else ev.get("message")
            if target is not None and "output" not in target:
                target["output"] = text
                extras = ev.get("extras") or {}
                meta = extras.get("metadata")
                exit_code = num(meta.get("exit_code")) if isinstance(meta, dict) else None
                if obs == "error" or (exit_code or 0) not in (0, -1):
                    target["is_error"] = True
            else:
                turns.append({"role": "environment", "content": text, "metadata": {"observation": obs}})
    return turns, extra


def row_to_rollout(row: dict[str, Any], ident: str) -> tuple[RolloutRecord, dict[str, Any]]:
    turns, extra = history_to_turns(row.get("history") or [])
    metrics_in = row.get("metrics") or {}
    acc = metrics_in.get("accumulated_token_usage") or {}
    patch = (row.get("test_result") or {}).get("git_patch")
    instance = row.get("instance") or {}
    cost = num(metrics_in.get("accumulated_cost"))
    if cost == 0.0 and not metrics_in.get("costs"):
        cost = None  # no cost was recorded at all (self-hosted model): unknown, not free
    metrics: dict[str, Any] = {"touches_tests": patch_touches_tests(patch or "")}
    lat = [num(x.get("latency")) for x in metrics_in.get("response_latencies") or [] if isinstance(x, dict)]
    lat_known = [x for x in lat if x is not None]
    if lat_known:
        metrics["llm_latency_s"] = sum(lat_known)
        metrics["llm_calls"] = len(lat_known)
    test_result = {k: v for k, v in (row.get("test_result") or {}).items() if k != "git_patch"}
    if test_result:
        metrics["test_result"] = test_result
    oracle = instance.get("patch") or instance.get("fix_patch")
    iid = str(row.get("instance_id") or instance.get("instance_id"))
    r: RolloutRecord = {
        "uid": short_hash("openhands", ident, iid, n=32),
        "example_key": iid,
        "prompt": row.get("instruction"),
        "sample_index": 0,
        "turns": turns,
        "final_answer": patch,
        "input_tokens": tokens(acc.get("prompt_tokens")),
        "output_tokens": tokens(acc.get("completion_tokens")),
        "cost": cost,
        "error": err_text(row.get("error")),
        "metrics": metrics,
        "example_info": {k: v for k, v in instance.items() if k not in ("patch", "fix_patch")},
    }
    if oracle:
        r["oracle"] = oracle
    if r["error"] and "maximum iteration" in r["error"]:
        r["stop_condition"] = "max_iterations"
        r["is_truncated"] = True
    return r, extra


def parse(path: Path, *, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    ref = "eval"
    started = False
    ident = path.name
    buf: list[RolloutRecord] = []
    for item in iter_jsonl(path, partial_ok=partial_ok):
        if isinstance(item, Problem):
            yield item
            continue
        lineno, row = item
        if not isinstance(row, dict):
            yield Problem(str(path), lineno, "expected an object")
            continue
        try:
            rollout, extra = row_to_rollout(row, ident)
        except Exception as e:
            yield Problem(str(path), lineno, f"unreadable instance: {type(e).__name__}: {e}")
            continue
        if not started:
            meta = _redact(row.get("metadata") or {})
            llm = meta.get("llm_config") or {}
            model = str(llm.get("model") or "")
            agent = str(meta.get("agent_class") or "")
            name = Path(str(meta.get("eval_output_dir") or "")).name or f"openhands-{agent}-{model}"
            if extra.get("system_prompt"):
                meta = dict(meta, system_prompt=extra["system_prompt"])
            run: RunRecord = {"name": name, "kind": "eval", "source": "openhands", "status": "finished",
                              "model": model, "adapter": agent, "config": meta, "external_id": name}
            yield RunEvent(ref, run)
            started = True
        buf.append(rollout)
        if len(buf) >= 100:  # instances are big (whole agent histories): smaller batches
            yield from batch_rollouts(ref, buf)
            buf = []
    if not started:
        yield RunEvent(ref, {"name": path.stem, "kind": "eval", "source": "openhands"})
    if buf:
        yield from batch_rollouts(ref, buf)
