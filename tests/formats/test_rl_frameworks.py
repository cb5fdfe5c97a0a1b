"""SkyRL, ART, AReaL and rLLM-gateway files written by the tools' own released packages parse into what they hold."""

from __future__ import annotations

from collections import Counter

from deeprepo_client.formats import detect

from .conftest import run_parse

ART_MODEL = "art/art-email-demo/models/email-agent-001"
AREAL_TRIAL = "areal/logs/root/gsm8k-grpo/trial0"


def _per_ref(p) -> Counter:
    return Counter(e.ref for e in p.events if hasattr(e, "rollouts") for _ in e.rollouts)


def test_skyrl_eval_dumps(samples):
    assert detect(samples / "skyrl").format == "skyrl"
    p = run_parse(samples / "skyrl")
    assert not p.problems
    evals = sorted((r.run["checkpoint_step"], r.ref) for r in p.runs if r.run["kind"] == "eval")
    assert [s for s, _ in evals] == [5, 10]
    assert all(r.run.get("parent_ref") == "train" for r in p.runs if r.run["kind"] == "eval")
    assert _per_ref(p) == {"eval/5": 4, "eval/10": 4}
    # aggregated_results.jsonl -> the eval curves of the train run, at the step of its folder
    train_points = [pt for e in p.events if getattr(e, "ref", "") == "train" for pt in getattr(e, "points", [])]
    assert [(pt["step"], pt["values"]["eval/all/avg_score"]) for pt in train_points] == [(5, 0.5), (10, 0.5)]
    r = next(r for r in p.rollouts if r["step"] == 5 and r["reward"] == 1.0 and "2^10" in r["prompt"])
    assert r["oracle"] == "1024" and r["stop_condition"] == "stop" and r["example_info"]["data_source"] == "math500"
    assert r["final_answer"].endswith("1024<|im_end|>")
    groups = Counter((x["step"], x["example_key"]) for x in p.rollouts)
    assert set(groups.values()) == {2} and len(groups) == 4  # 2 prompts x 2 samples, per step


def test_art_model_folder(samples):
    folder = samples / ART_MODEL
    assert detect(samples / "art").format == "art"
    p = run_parse(folder)
    assert not p.problems
    assert p.run["name"] == "email-agent-001" and p.run["config"] == {"project": "art-email-demo"}
    assert _per_ref(p) == {"train": 24, "val/1": 4, "val/2": 4, "val/3": 4}
    assert {r.run["checkpoint_step"] for r in p.runs if r.run["kind"] == "eval"} == {1, 2, 3}
    # history.jsonl: 9 log() calls; NaN-free values, recorded_at as the time
    history = [pt for e in p.events if getattr(e, "ref", "") == "train" for pt in getattr(e, "points", [])]
    assert len(history) == 9 and history[0]["values"]["train/reward"] == 0.25 and history[0]["time"]
    r = p.rollouts[0]
    call = r["turns"][0]["tool_calls"][0]
    assert call["name"] == "search_inbox" and call["arguments"] == {"query": "quarterly review"}
    assert call["output"].startswith('[{"subject"')
    assert r["prompt"][0]["role"] == "system" and r["metrics"]["metadata"]["difficulty"] == "hard"


def test_art_groups_are_arts_own(samples):
    p = run_parse(samples / ART_MODEL)
    train = [r for e in p.events if getattr(e, "ref", "") == "train" for r in getattr(e, "rollouts", [])]
    step1 = [r for r in train if r["step"] == 1]
    # group_index 0 and 1, 4 trajectories each, sample_index their order in the group
    assert sorted(Counter(r["example_key"] for r in step1).values()) == [4, 4]
    assert sorted(r["sample_index"] for r in step1) == [0, 0, 1, 1, 2, 2, 3, 3]


def test_areal_trial(samples):
    assert detect(samples / "areal").format == "areal"
    p = run_parse(samples / AREAL_TRIAL)
    assert not p.problems
    assert _per_ref(p) == {"train": 16, "eval/2": 2}
    files = list((samples / AREAL_TRIAL / "rollout").glob("*/*.jsonl"))
    assert p.run["started_at"] == min(f.stat().st_mtime for f in files)  # dumps carry no clock: their files do
    ev = next(r for r in p.runs if r.run["kind"] == "eval")
    assert ev.run["checkpoint_step"] == 2 and ev.run["parent_ref"] == "train"
    v1 = [r for r in p.rollouts if r["step"] == 1]
    assert sorted(Counter(r["example_key"] for r in v1).values()) == [4, 4]  # task 0 and task 1
    r = v1[0]
    assert r["sample_index"] == 0 and r["input_tokens"] == 62 and r["output_tokens"] == 27
    assert r["metrics"]["head_version"] == -1 and r["metrics"]["task_id"] == 0
    # AReaL logs no metrics with its dumps: curves come from them
    train_points = [pt for e in p.events if getattr(e, "ref", "") == "train" for pt in getattr(e, "points", [])]
    assert [(pt["step"], pt["values"]["reward/mean"]) for pt in train_points] == [(1, 0.75), (2, 0.625)]


def test_rllm_gateway_store_and_session_json_are_the_same_episodes(samples):
    folder = samples / "rllm-model-gateway"
    both = run_parse(folder)
    store = run_parse(folder / "rllm_gateway_traces.db")
    one = run_parse(folder / "session_episode-0_traces.json")
    assert not both.problems and not store.problems
    assert len(both.rollouts) == 2 and {r["uid"] for r in both.rollouts} == {r["uid"] for r in store.rollouts}
    r = next(r for r in one.rollouts)
    assert r["metrics"]["session_id"] == "episode-0" and r["metrics"]["calls"] == 2
    assert r["prompt"] == [{"role": "user", "content": "What's the weather in Zürich?"}]
    call = r["turns"][0]["tool_calls"][0]
    assert call["name"] == "get_weather" and call["output"] == '{"temp_c": 18}'
    assert r["turns"][0]["input_tokens"] == 67 and r["turns"][1]["input_tokens"] == 77
    assert r["final_answer"] == "It is 18°C and cloudy in Zürich right now."
    assert r.get("reward") is None and r["advantage"] is None  # the gateway records no reward
    assert both.run["model"] == "policy-qwen2.5-0.5b"
    # the run's time is the gateway's, not the import's
    assert both.run["started_at"] == 1795436767.1903248 and both.run["finished_at"] > both.run["started_at"]


def test_rllm_gateway_session_still_running_waits_in_watch_mode(samples, tmp_path):
    import json
    import time

    traces = json.loads((samples / "rllm-model-gateway" / "session_episode-0_traces.json").read_text())
    traces[-1]["timestamp"] = time.time()  # its last call just now: the agent may call again
    (tmp_path / "session_episode-0_traces.json").write_text(json.dumps(traces))
    assert run_parse(tmp_path, partial_ok=True).rollouts == []
    assert len(run_parse(tmp_path).rollouts) == 1  # an import takes what is there
