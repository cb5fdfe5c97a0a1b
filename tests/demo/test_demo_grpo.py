from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from deeprepo_web.analysis.grpo import group_advantages as analysis_advantages
from workers.demo.codebase import BUG_KINDS, f1_score, generate_codebase
from workers.demo.env import ACTIONS, ANSWER, FILE_TREE, LLM_BATCH, READ_FILE, AuditEnv, turn_budget
from workers.demo.policy import Adam, SoftmaxPolicy, group_advantages, grpo_update
from workers.demo.rollout import play
from workers.demo_grpo import TrainConfig, main, train

SIGNATURES = {
    "sql_injection": "execute(f",
    "md5_password": "hashlib.md5",
    "hardcoded_secret": "sk_live_",
    "eval_input": "eval(request",
    "shell_injection": "os.system",
    "unsafe_deserialization": "pickle.loads",
    "debug_enabled": "DEBUG = True",
}


class RecordingSink:
    """The sink interface (log / log_rollouts / finish) collecting into lists."""

    def __init__(self) -> None:
        self.metrics: list[tuple[int | None, dict[str, Any]]] = []
        self.rollouts: list[dict[str, Any]] = []
        self.status: str | None = None

    def log(self, values: dict[str, Any], step: int | None = None) -> None:
        self.metrics.append((step, dict(values)))

    def log_rollouts(self, rollouts: list[Any]) -> None:
        self.rollouts.extend(rollouts)

    def finish(self, status: str = "finished") -> None:
        self.status = status


def test_codebase_is_deterministic_by_seed() -> None:
    a, b = generate_codebase(42), generate_codebase(42)
    assert a == b
    assert generate_codebase(43) != a
    for seed in range(30):
        cb = generate_codebase(seed)
        assert 5 <= len(cb.files) <= 12
        assert 1 <= len(cb.bugs) <= 4
        for bug in cb.bugs:
            assert bug.kind in BUG_KINDS
            # The recorded line is the dangerous line of the planted snippet.
            line = cb.files[bug.path].splitlines()[bug.line - 1]
            assert SIGNATURES[bug.kind] in line


def test_episode_is_deterministic_by_seed() -> None:
    cb = generate_codebase(7)
    policy = SoftmaxPolicy.init(12, len(ACTIONS), np.random.default_rng(0))
    one = play(policy, cb, np.random.default_rng(5))
    two = play(policy, cb, np.random.default_rng(5))
    one.record.pop("duration")
    two.record.pop("duration")
    assert one.record == two.record
    assert one.actions.tolist() == two.actions.tolist()


def test_f1_hand_case() -> None:
    truth = {("app/db.py", "sql_injection"), ("app/auth.py", "md5_password"), ("app/config.py", "hardcoded_secret")}
    reported = {("app/db.py", "sql_injection"), ("app/auth.py", "md5_password"), ("app/cache.py", "eval_input"),
                ("app/routes.py", "shell_injection")}
    precision, recall, f1 = f1_score(reported, truth)
    assert precision == 0.5 and recall == pytest.approx(2 / 3)
    assert f1 == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))  # 4/7
    assert f1_score(set(), truth) == (0.0, 0.0, 0.0)
    assert f1_score(truth, truth)[2] == 1.0


def test_scripted_episode_reward() -> None:
    cb = generate_codebase(11)
    env = AuditEnv(cb, np.random.default_rng(0))
    env.step(FILE_TREE)
    while len(env.state.delegated) < len(cb.files):
        env.step(LLM_BATCH)
    env.step(ANSWER)
    reward, components, metrics = env.score()
    assert env.state.turn == turn_budget(len(cb.files))
    _, _, f1 = f1_score(set(env.state.findings), cb.truth())
    assert components == {"f1": round(f1, 6), "turn_penalty": 0.0}
    assert reward == pytest.approx(f1)
    assert metrics["files_covered"] == len(cb.files)

    # Reading before the tree is an error; over-long episodes pay the turn penalty.
    env = AuditEnv(cb, np.random.default_rng(0))
    env.step(READ_FILE)
    assert env.turns[0]["tool_calls"][0]["is_error"]
    for _ in range(turn_budget(len(cb.files)) + 2):
        env.step(FILE_TREE)
    env.step(ANSWER)
    reward, components, _ = env.score()
    assert components["f1"] == 0.0 and components["turn_penalty"] < 0
    assert reward == 0.0


def test_grpo_advantages_known_group() -> None:
    adv = group_advantages(np.array([1.0, 0.0, 0.5, 0.5]))
    std = np.sqrt(0.125)
    assert adv == pytest.approx([0.5 / std, -0.5 / std, 0.0, 0.0])
    assert group_advantages(np.array([0.3, 0.3])).tolist() == [0.0, 0.0]
    rewards = [0.2, 0.9, 0.4, 0.4, 1.0]
    # The trainer and the dashboard's analysis agree on what an advantage is.
    assert group_advantages(np.array(rewards)) == pytest.approx(analysis_advantages(rewards))


def test_update_moves_probability_toward_positive_advantage() -> None:
    policy = SoftmaxPolicy(np.zeros((2, 4)))
    phi = np.array([[1.0, 0.0], [1.0, 0.0]])
    before = policy.probs(phi[0])[2]
    stats = grpo_update(policy, Adam(lr=0.1), phi, np.array([2, 3]), np.array([1.0, -1.0]))
    assert policy.probs(phi[0])[2] > before
    assert stats.grad_norm > 0 and stats.entropy == pytest.approx(np.log(4))


def test_short_training_run_improves_reward() -> None:
    cfg = TrainConfig(steps=12, examples_per_step=4, rollouts_per_example=6, seed=3, evals=True,
                      eval_examples=3, eval_rollouts=2)
    sink = RecordingSink()
    evals: dict[int, RecordingSink] = {}

    def eval_sink(step: int) -> RecordingSink:
        evals[step] = RecordingSink()
        return evals[step]

    result = train(cfg, sink, eval_sink=eval_sink, out=lambda _line: None)
    rewards = [m["reward"] for m in result.history]
    first, last = np.mean(rewards[:3]), np.mean(rewards[-3:])
    assert last > first + 0.25, rewards
    assert [step for step, _ in sink.metrics] == list(range(12))
    required = {"reward", "reward_std", "reward/min", "reward/max", "reward/f1", "num_turns/mean",
                "frac_zero_std", "frac_zero_std_all_fail", "frac_zero_std_all_pass", "tokens/input",
                "tokens/output", "cost/total", "loss", "entropy", "grad_norm", "learning_rate"}
    required |= {f"tool_calls/{name}" for name in ACTIONS}
    assert required <= set(sink.metrics[0][1])
    assert set(evals) == {0, 12}
    assert all(e.status == "finished" and len(e.rollouts) == 6 for e in evals.values())
    assert evals[12].metrics[0][1]["reward"] > evals[0].metrics[0][1]["reward"]
    assert all(r["step"] is None for r in evals[0].rollouts)
    assert result.eval_after is not None and result.seconds < 30


def _check_call(call: dict[str, Any]) -> None:
    assert call["name"]
    assert isinstance(call["output"], str)
    if call["name"] == "llm_batch" and not call["is_error"]:
        assert call["sub_calls"], call
        assert len(call["sub_calls"]) == len(call["arguments"]["files"])
        for sub in call["sub_calls"]:
            assert sub["name"] == "llm_query" and sub["model"]
            assert sub["arguments"]["prompt"] and sub["output"]
            assert sub["input_tokens"] > 0 and sub["output_tokens"] > 0 and sub["cost"] > 0


def test_rollout_records_are_well_formed() -> None:
    sink = RecordingSink()
    train(TrainConfig(steps=3, examples_per_step=3, rollouts_per_example=4, seed=1, evals=False), sink,
          out=lambda _line: None)
    assert len(sink.rollouts) == 3 * 3 * 4
    saw_batch = False
    for r in sink.rollouts:
        assert r["example_key"] and r["step"] in (0, 1, 2) and 0 <= r["sample_index"] < 4
        assert 0.0 <= r["reward"] <= 1.0
        assert set(r["reward_components"]) == {"f1", "turn_penalty"}
        assert 0.0 <= r["reward_components"]["f1"] <= 1.0
        assert isinstance(r["advantage"], float)
        assert r["num_turns"] == len(r["turns"]) >= 1
        assert r["input_tokens"] > 0 and r["output_tokens"] > 0 and r["cost"] > 0
        assert r["stop_condition"] in ("episode_done", "max_turns_reached")
        assert r["is_truncated"] == (r["stop_condition"] == "max_turns_reached")
        assert (r["final_answer"] is None) == r["is_truncated"]
        for turn in r["turns"]:
            assert turn["role"] == "assistant" and "```python" in turn["content"]
            for call in turn["tool_calls"]:
                _check_call(call)
                saw_batch |= call["name"] == "llm_batch" and bool(call.get("sub_calls"))
    assert saw_batch
    # Advantages are centred within each group.
    by_group: dict[tuple[int, str], list[float]] = {}
    for r in sink.rollouts:
        by_group.setdefault((r["step"], r["example_key"]), []).append(r["advantage"])
    assert all(abs(sum(v)) < 1e-9 for v in by_group.values())


def test_dry_run_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--dry-run", "--steps", "2", "--examples-per-step", "2", "--rollouts-per-example", "3",
                 "--no-evals"]) == 0
    out = capsys.readouterr().out
    assert "step   0  reward" in out and "step   1  reward" in out
