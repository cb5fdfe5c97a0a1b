"""Fills a running MLflow tracking server with the real `mlflow` client (run by the tests in a child
process): a run with params, tags, metric histories (two values at one step, as MLflow allows), an
eval series, and two traces of an agent with a tool call (AGENT -> CHAT_MODEL -> TOOL -> CHAT_MODEL).
Values are functions of the step so the test can recompute them."""

from __future__ import annotations

import sys

import mlflow
from mlflow.entities import SpanType

STEPS = 30


def reward(step: int) -> float:
    return round(0.02 * step, 6)


def main(uri: str, experiment: str) -> None:
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment)
    with mlflow.start_run(run_name="grpo-mlflow") as run:
        mlflow.log_params({"lr": "1e-6", "model": "tiny-policy", "rollout.n": "4"})
        mlflow.set_tags({"team": "rl", "stage": "dev"})
        for step in range(1, STEPS + 1):
            mlflow.log_metrics({"train/reward": reward(step), "train/kl": 0.5 / step}, step=step)
            if step % 10 == 0:
                mlflow.log_metric("eval/accuracy", step / 100, step=step)
        mlflow.log_metric("train/reward", 0.0, step=STEPS)  # a second value at the last step
        mlflow.log_table({"step": [30, 30], "prompt": ["1+1?", "1+1?"], "completion": ["2", "3"], "reward": [1.0, 0.0]},
                         artifact_file="rollouts/samples.json")
        for episode in range(2):
            _agent(episode)
        print(run.info.run_id)


def _agent(episode: int) -> None:
    question = f"What is 6 * 7? (episode {episode})"

    @mlflow.trace(name="rollout", span_type=SpanType.AGENT)
    def rollout(q: str) -> str:
        messages = [{"role": "system", "content": "Use the calculator."}, {"role": "user", "content": q}]
        first = chat(messages)
        result = calculator(first["tool_calls"][0]["function"]["arguments"])
        messages += [first, {"role": "tool", "tool_call_id": "call_1", "content": result}]
        return chat(messages)["content"]

    @mlflow.trace(name="chat.completions", span_type=SpanType.CHAT_MODEL)
    def chat(messages: list[dict]) -> dict:
        if messages[-1]["role"] == "tool":
            return {"role": "assistant", "content": f"The answer is {messages[-1]['content']}."}
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "calculator", "arguments": '{"expr": "6*7"}'}}]}

    @mlflow.trace(name="calculator", span_type=SpanType.TOOL)
    def calculator(arguments: str) -> str:
        return "42"

    rollout(question)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
