"""Names and keys read as the files say them (issue 25, item 5): a SWE-bench model name keeps its
dots, a lone results file is named by its file, a trace's example key is its question, not a hash."""

from __future__ import annotations

import json

from deeprepo_client.formats._genai_trace import _example_key

from .conftest import run_parse


def test_swebench_summary_model_keeps_its_dots(tmp_path):
    f = tmp_path / "TinyLlama-1.1B-Chat-v1.0.my_eval.json"
    f.write_text(json.dumps({"total_instances": 2, "resolved_ids": ["a__b-1"], "unresolved_ids": ["a__b-2"],
                             "submitted_ids": ["a__b-1", "a__b-2"], "completed_ids": ["a__b-1", "a__b-2"]}))
    p = run_parse(f)
    assert p.run["model"] == "TinyLlama-1.1B-Chat-v1.0" and p.run["config"]["run_id"] == "my_eval"


def test_swebench_reports_model_keeps_its_dots(tmp_path):
    d = tmp_path / "logs" / "run_evaluation" / "my_eval" / "TinyLlama-1.1B-Chat-v1.0" / "a__b-1"
    d.mkdir(parents=True)
    (d / "report.json").write_text(json.dumps({"a__b-1": {"resolved": True, "patch_exists": True,
                                                          "patch_successfully_applied": True}}))
    p = run_parse(tmp_path / "logs")
    assert p.run["model"] == "TinyLlama-1.1B-Chat-v1.0"


def test_a_lone_results_file_is_named_by_its_file(tmp_path):
    folder = tmp_path / "3f9a1c0e5b7d2a4c"  # an upload's folder: a content hash
    folder.mkdir()
    f = folder / "gsm8k_policy_eval.jsonl"
    f.write_text(json.dumps({"prompt": [{"role": "user", "content": "2+2?"}],
                             "completion": [{"role": "assistant", "content": "4"}], "reward": 1.0}) + "\n{broken\n")
    p = run_parse(f)
    assert p.run["name"] == "gsm8k_policy_eval"
    assert len(p.rollouts) == 1 and [pr.line for pr in p.problems] == [2]  # the broken line is named


def test_a_trace_example_key_reads_as_its_question():
    prompt = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 17 * 23, exactly?"}]
    key = _example_key([], prompt, "abc")
    assert key.startswith("What is 17 * 23, exactly? #") and len(key) < 80
    assert key == _example_key([], prompt, "other-trace")  # the same question is the same example
