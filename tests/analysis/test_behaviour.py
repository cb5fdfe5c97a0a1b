from __future__ import annotations

import pytest

from deeprepo_web.analysis.behaviour import (
    error_signature,
    is_zero,
    metric_value,
    num_turns,
    repeated_errors,
    rollout_counts,
    sub_calls_per_batch,
    tool_call_counts,
    turn_outliers,
    zero_rate,
)

SYNTAX = 'Traceback (most recent call last):\n  File "<repl>", line 3\nSyntaxError: unterminated triple-quoted string'


def _batch(n: int) -> dict:
    return {"name": "llm_batch", "sub_calls": [{"name": "llm_query", "output": "ok"} for _ in range(n)]}


def _rollout(**extra) -> dict:
    turns = [
        {"role": "assistant", "tool_calls": [{"name": "file_tree"}]},
        {"role": "assistant", "tool_calls": [_batch(4), {"name": "read_file"}]},
        {"role": "tool", "content": "..."},
        {"role": "assistant", "tool_calls": [_batch(2)]},
    ]
    return {"example_key": "x", "turns": turns, **extra}


def test_counts_and_fanout() -> None:
    r = _rollout()
    counts = tool_call_counts(r)
    assert counts == {"file_tree": 1, "llm_batch": 2, "read_file": 1}
    assert tool_call_counts(r, nested=True)["llm_query"] == 6
    assert sub_calls_per_batch(r) == [4, 2]
    assert num_turns(r) == 3
    assert num_turns({**r, "num_turns": 7}) == 7


def test_repeated_errors_seed_003() -> None:
    # The M2.5 root hit one SyntaxError 17 times across 3 turns.
    turns = [
        {"role": "assistant", "tool_calls": [
            {"name": "python", "is_error": True, "output": SYNTAX} for _ in range(n)
        ]}
        for n in (6, 6, 5)
    ]
    turns.append({"role": "assistant", "tool_calls": [
        {"name": "python", "is_error": True, "output": "NameError: name 'x' is not defined"},
        {"name": "python", "is_error": False, "output": SYNTAX},  # not an error: ignored
    ]})
    found = repeated_errors({"turns": turns})
    assert len(found) == 1
    assert found[0].count == 17
    assert found[0].text == "SyntaxError: unterminated triple-quoted string"
    assert len(repeated_errors({"turns": turns}, min_count=1)) == 2


def test_zero_x() -> None:
    no_delegation = {"turns": [{"role": "assistant", "tool_calls": [{"name": "read_file"}]}],
                     "metrics": {"files_covered": 0}, "reward_components": {"f1": 0.0}}
    assert is_zero(no_delegation, "llm_batch")
    assert is_zero(no_delegation, "files_covered")
    assert is_zero(no_delegation, "f1")
    assert not is_zero(no_delegation, "read_file")
    assert not is_zero(_rollout(), "llm_batch")
    assert metric_value(_rollout(cost=0.25), "cost") == 0.25
    assert zero_rate([no_delegation, _rollout(), _rollout()], "llm_batch") == (1, 3)


def test_turn_outliers_seed_002() -> None:
    turns = [18, 5, 5, 7, 9, 8]
    assert turn_outliers(turns) == [0]
    assert turn_outliers(turns, method="median") == [0]
    assert turn_outliers([6, 6, 6, 6, 6, 6]) == []
    assert turn_outliers([1, 50]) == []  # too few to call anything an outlier


def test_rollout_counts_agrees_with_the_single_counts() -> None:
    r = _rollout()
    r["turns"][0]["tool_calls"] += [{"name": "python", "is_error": True, "output": SYNTAX},
                                    {"name": "python", "is_error": True, "output": "x\nValueError: y"},
                                    {"name": "python", "is_error": True, "output": SYNTAX}]
    r["turns"][1]["tool_calls"][0]["sub_calls"][0].update(model="m1", input_tokens=10, output_tokens=3, cost=0.5)
    r["turns"][1]["tool_calls"][0]["sub_calls"][1].update(model="m1", input_tokens=5, cost=float("nan"))
    counts = rollout_counts(r)
    top = tool_call_counts(r)
    assert counts["tool_calls"] == dict(top)
    assert counts["sub_calls"] == sum(tool_call_counts(r, nested=True).values()) - sum(top.values()) == 6
    assert (counts["batches"], counts["sub_calls_per_batch_max"]) == (len(sub_calls_per_batch(r)), 4)
    worst = repeated_errors(r, min_count=1)[0]
    assert (counts["repeated_error"], counts["repeated_error_max"], counts["tool_errors"]) == (worst.text, 2, 3)
    assert counts["sub_tokens"] == {"m1": [15, 3, 0.5, 1]}  # a NaN cost is not added, nor counted


@pytest.mark.parametrize(("output", "signature"), [
    (SYNTAX, "SyntaxError: unterminated triple-quoted string"),
    ("KeyError: 'user_42' at 0xDEADBEEF in /usr/lib/python3.11/foo.py:12", "KeyError: <str> at <id> in <path>:<n>"),
    ("bad uuid 123e4567-e89b-12d3-a456-426614174000, hash deadbeefcafe1234", "bad uuid <id>, hash <id>"),
    ("C:\\Users\\me\\x.txt not found; ../c.py \"dq\" 3.14", "<path> not found; <path> <str> <n>"),
    # a relative path from its first segment (runs 0019): the same error at two paths groups together
    ("FileNotFoundError: tmp/x", "FileNotFoundError: <path>"),
    ("No such file: src/app/main.py line 3", "No such file: <path> line <n>"),
    ("tests/test_x.py::test_y FAILED; see ./run.sh", "<path>::test_y FAILED; see <path>"),
    ("GET https://x.com/a 404", "GET https:<path> <n>"),
    ("x\r\nKeyError: 'k'\r\n\n  ", "KeyError: <str>"),
    ("   ", ""),
    ("Z" * 400, "Z" * 300),
])
def test_an_error_signature_is_its_last_line_without_what_varies(output: str, signature: str) -> None:
    assert error_signature(output) == signature
