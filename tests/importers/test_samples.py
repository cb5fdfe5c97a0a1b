"""Every real sample file through the SERVER importer: what is stored is what the file holds."""

from __future__ import annotations

from deeprepo_web.runs.models import MetricSeries, Rollout, Run, ToolCall, Turn

from .conftest import counts

VF = "verifiers_eval"


def _only_run(report):
    assert not report.problems, report.problems
    assert len(report.runs) == 1, report.runs
    return Run.objects.get(public_id=report.runs[0].public_id)


def test_verifiers_math_python_oldest_schema(samples, do_import):
    run = _only_run(do_import(samples / VF / "math-python--gpt-4.1-mini__578769a7"))
    assert run.kind == "eval" and run.source == "verifiers" and run.model == "gpt-4.1-mini"
    c = counts(run)
    assert c["rollouts"] == 15 and c["turns"] > 15
    r = Rollout.objects.get(run=run, example__key="0", sample_index=0)
    assert r.reward == 1.0 and r.reward_components == {"correct_answer_reward_func": 1.0}
    call = ToolCall.objects.filter(rollout=r).order_by("turn__index", "index").first()
    assert call.name == "python" and call.arguments["code"].startswith("from sympy import symbols")
    assert "No module named 'sympy'" in call.output
    assert r.final_answer == "\\[\n\\boxed{0}\n\\]"
    assert r.example.oracle == "0"


def test_verifiers_wordle_groups_and_turn_text(samples, do_import):
    run = _only_run(do_import(samples / VF / "wordle--qwen3-30b-a3b-thinking-2507__50bdff53"))
    assert counts(run)["rollouts"] == 15
    assert sorted(Rollout.objects.filter(run=run, example__key="0").values_list("sample_index", flat=True)) == [0, 1, 2]
    first = Rollout.objects.get(run=run, example__key="0", sample_index=0)
    assert first.reward == 0.7 and first.reward_components["partial_credit_reward_func"] == 0.5
    assert Turn.objects.get(rollout=first, index=0).content == "\n\n<guess>[CRANE]</guess>"
    assert "You have 5 guesses left." in Turn.objects.get(rollout=first, index=1).content


def test_verifiers_wiki_search_tool_calls(samples, do_import):
    run = _only_run(do_import(samples / VF / "wiki-search--gpt-5-mini__dc83cc41"))
    c = counts(run)
    assert c["rollouts"] == 100
    r = Rollout.objects.get(run=run, example__key="0")
    assert r.reward == 1.0 and r.metrics["total_tool_calls"] == 3.0
    assert ToolCall.objects.filter(rollout=r).count() == 3
    call = ToolCall.objects.filter(rollout=r).order_by("turn__index", "index").first()
    assert call.name == "search_pages" and call.arguments == {"query": "Utsuro-bune meaning Japanese"}
    assert call.output.startswith("[{'page_id': 'utsuro-bune'")
    assert c["tool_calls"] == sum(Rollout.objects.filter(run=run).values_list("metrics__total_tool_calls", flat=True))


def test_prime_hosted_every_metric_key_is_a_series(samples, do_import):
    run = _only_run(do_import(samples / "prime_hosted_rl" / "bp6qd19u06wzeqkdrf0h24xx"))
    assert run.kind == "train" and run.source == "prime" and run.model == "Qwen/Qwen3.5-2B"
    assert run.external_id == "bp6qd19u06wzeqkdrf0h24xx"
    assert MetricSeries.objects.filter(run=run).count() == 165
    reward = MetricSeries.objects.get(run=run, key="reward/all/mean")
    assert reward.count == 51 and reward.first_step == 0 and reward.last_step == 50
    assert MetricSeries.objects.filter(run=run, key="eval/intertwine/sv-env-network-logs/avg@1").exists()
    assert run.series.get(key="reward/all/mean").metric_set.get(step=10).value == 0.61625
    c = counts(run)
    assert c["rollouts"] == 25
    r = Rollout.objects.get(run=run, example__key="4", sample_index=0)
    assert r.step == 40 and r.reward == 1.78 and r.input_tokens is None
    assert Turn.objects.filter(rollout=r).order_by("index").first().reasoning.startswith("```json")


def test_inspect_popularity(samples, do_import):
    run = _only_run(do_import(samples / "inspect_ai" / "2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval"))
    assert run.name == "popularity" and run.model == "openai/gpt-4o-mini" and run.source == "inspect"
    assert counts(run)["rollouts"] == 10
    assert sum(Rollout.objects.filter(run=run).values_list("reward", flat=True)) == 8.0
    r = Rollout.objects.get(run=run, example__key="1")
    assert r.reward_components == {"match": 1.0} and r.input_tokens == 64
    assert Turn.objects.filter(rollout=r).order_by("-index").first().content == "Yes"


def test_inspect_mmlu_choice(samples, do_import):
    run = _only_run(do_import(samples / "inspect_ai" / "mmlu-summary-choices.eval"))
    r = Rollout.objects.get(run=run)
    assert r.reward == 0.0 and r.final_answer == "ANSWER: C" and r.example.oracle == "A"


def test_swe_agent_trajectory(samples, do_import):
    run = _only_run(do_import(samples / "swe_agent" / "pydicom__pydicom-1458.traj"))
    c = counts(run)
    assert c["rollouts"] == 1 and c["turns"] == 12
    r = Rollout.objects.get(run=run)
    assert r.example.key == "pydicom__pydicom-1458" and r.cost == 1.26719
    first = Turn.objects.get(rollout=r, index=0)
    assert first.content.startswith("First, I'll create a new Python script")
    call = ToolCall.objects.get(turn=first, index=0)
    assert call.name == "create" and call.arguments == {"command": "create reproduce_bug.py\n"}
    assert r.final_answer.lstrip().startswith("diff --git a/pydicom/pixel_data_handlers/numpy_handler.py")
    assert r.metrics["touches_tests"] is False


def test_swe_agent_predictions(samples, do_import):
    run = _only_run(do_import(samples / "swe_agent" / "all_preds.jsonl"))
    r = Rollout.objects.get(run=run)
    assert "required_elements.append('PixelRepresentation')" in r.final_answer


def test_openhands_output(samples, do_import):
    run = _only_run(do_import(samples / "openhands" / "multi_swe_bench_output.jsonl"))
    assert run.model == "openai/openrouter-llama-4-maverick" and run.adapter == "CodeActAgent"
    assert run.config["llm_config"]["api_key"] == "***"
    assert counts(run)["rollouts"] == 3
    r = Rollout.objects.get(run=run, example__key="ponylang__ponyc-4595")
    assert r.input_tokens == 565158 and r.output_tokens == 2558
    call = ToolCall.objects.filter(rollout=r).order_by("turn__index", "index").first()
    assert call.name == "execute_bash" and call.arguments["command"] == "ls -l /workspace/ponylang__ponyc__0.1"
    assert call.output.startswith("total 300") and call.turn.input_tokens == 5920


def test_swebench_summary_without_matches_is_an_eval_run(samples, do_import):
    run = _only_run(do_import(samples / "swebench" / "gold.fresh-verified.json"))
    assert run.kind == "eval" and run.source == "swebench" and run.model == "gold"
    assert counts(run)["rollouts"] == 500
    assert Rollout.objects.get(run=run, example__key="astropy__astropy-12907").reward == 1.0
    assert run.summary["resolved_instances"] == 500


def test_whole_samples_folder_imports_every_run_once(samples, do_import):
    report = do_import(samples)
    # MLflow's raw tracking store (SQLite + mlruns/) is read by no format: named, never skipped silently
    store = str(samples / "mlflow" / "store")
    assert all(p["file"].startswith(store) and p["message"].startswith("not read") for p in report.problems)
    assert len(report.problems) == 4 and len(report.runs) >= 8
    first = counts()
    again = do_import(samples)
    assert again.problems == report.problems
    assert all(not r.created and r.rollouts == 0 and r.points == 0 for r in again.runs)
    assert counts() == first
