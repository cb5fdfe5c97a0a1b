"""A real, small GRPO trainer (numpy) on the toy repo-audit environment: the dashboard's demo job.

The policy is a linear softmax over four actions (file_tree, read_file, llm_batch, answer).
Each step samples `examples_per_step` codebases from a fixed training pool, plays
`rollouts_per_example` rollouts of each, computes group-relative advantages and takes a
clipped policy-gradient step with Adam. Metrics, every rollout and before/after evals go to a
sink with the deeprepo_client Run interface (log / log_rollouts / finish).

    python -m workers.demo_grpo --steps 40            # logs into a new run of $DEEPREPO_PROJECT
    python -m workers.demo_grpo --steps 40 --dry-run  # no server: prints the per-step reward
    python -m workers.demo_grpo --checkpoint-every 10  # also saves and logs checkpoints (artifacts)
    python -m workers.demo_grpo --eval-checkpoint PATH --checkpoint-step 10  # evaluates one checkpoint
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from workers.demo.checkpoints import checkpoint_load, checkpoint_name, checkpoint_save
from workers.demo.codebase import generate_codebase
from workers.demo.env import ACTIONS, N_FEATURES, ROOT_MODEL, SUB_MODEL
from workers.demo.policy import Adam, SoftmaxPolicy, group_advantages, grpo_update
from workers.demo.rollout import Episode, play

ENVIRONMENT = "toy-repo-audit"
EVAL_SEED_BASE = 900_000  # eval codebases never overlap the training pool
TRAIN_SEED_BASE = 1_000


class Sink(Protocol):
    """The subset of deeprepo_client's Run the trainer uses."""

    def log(self, values: dict[str, Any], step: int | None = None) -> None: ...

    def log_rollouts(self, rollouts: list[Any]) -> None: ...

    # object, not None: the client's Run.finish returns whether everything was delivered.
    def finish(self, status: str = "finished") -> object: ...


class NullSink:
    """Discards everything (dry runs)."""

    id = "dry-run"

    def log(self, values: dict[str, Any], step: int | None = None) -> None:
        pass

    def log_rollouts(self, rollouts: list[Any]) -> None:
        pass

    def finish(self, status: str = "finished") -> None:
        pass


@dataclass
class TrainConfig:
    steps: int = 40
    examples_per_step: int = 8
    rollouts_per_example: int = 8
    seed: int = 0
    lr: float = 0.05
    epochs: int = 2  # policy-gradient passes over each batch (clipped ratio from the 2nd on)
    clip_eps: float = 0.2
    entropy_coef: float = 0.0
    max_turns: int = 12
    train_pool: int = 64  # distinct training codebases, so examples recur across steps
    eval_examples: int = 6
    eval_rollouts: int = 4
    eval_seed: int = 12345
    evals: bool = True
    log_groups: int | None = None  # groups per step uploaded as rollouts; None = all
    step_sleep: float = 0.0  # seconds between steps, to pace a live demo
    checkpoint_every: int = 0  # save the policy at step 0, every N steps and at the end; 0 = never


@dataclass
class TrainResult:
    history: list[dict[str, float]] = field(default_factory=list)
    eval_before: dict[str, float] | None = None
    eval_after: dict[str, float] | None = None
    policy: SoftmaxPolicy | None = None
    seconds: float = 0.0


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else 0.0


def batch_metrics(episodes: list[Episode], groups: list[list[Episode]]) -> dict[str, float]:
    """Reward, GRPO-health, behaviour, token and cost aggregates of one batch of rollouts."""
    rewards = np.array([e.reward for e in episodes])
    dead = [g for g in groups if len(g) > 1 and np.ptp([e.reward for e in g]) <= 1e-9]
    n_groups = max(len(groups), 1)
    recs = [e.record for e in episodes]
    out: dict[str, float] = {
        "reward": float(rewards.mean()),
        "reward_std": float(rewards.std()),
        "reward/min": float(rewards.min()),
        "reward/max": float(rewards.max()),
        "reward/f1": _mean([e.components["f1"] for e in episodes]),
        "reward/turn_penalty": _mean([e.components["turn_penalty"] for e in episodes]),
        "num_turns/mean": _mean([r["num_turns"] for r in recs]),
        "num_turns/std": float(np.std([r["num_turns"] for r in recs])),
        "is_truncated": _mean([float(r["is_truncated"]) for r in recs]),
        "frac_zero_std": len(dead) / n_groups,
        "frac_zero_std_all_fail": sum(1 for g in dead if g[0].reward <= 0.0) / n_groups,
        "frac_zero_std_all_pass": sum(1 for g in dead if g[0].reward >= 1.0) / n_groups,
        "tokens/input": _mean([r["input_tokens"] for r in recs]),
        "tokens/output": _mean([r["output_tokens"] for r in recs]),
        "cost/total": float(sum(r["cost"] for r in recs)),
        "cost/mean": _mean([r["cost"] for r in recs]),
        "cost/sub_llm": float(sum(r["metrics"]["cost_sub"] for r in recs)),
        "sub_llm_calls/mean": _mean([r["metrics"]["sub_llm_calls"] for r in recs]),
        "files_covered/frac": _mean([r["metrics"]["files_covered"] / r["metrics"]["files_total"] for r in recs]),
        "precision": _mean([r["metrics"]["precision"] for r in recs]),
        "recall": _mean([r["metrics"]["recall"] for r in recs]),
        "zero_delegation": _mean([float(r["metrics"]["tool_calls/llm_batch"] == 0) for r in recs]),
    }
    for q in (10, 50, 90):
        out[f"reward/p{q}"] = float(np.percentile(rewards, q))
    for name in ACTIONS:
        out[f"tool_calls/{name}"] = _mean([r["metrics"][f"tool_calls/{name}"] for r in recs])
    return out


def play_groups(
    policy: SoftmaxPolicy,
    seeds: list[tuple[int, str]],
    n: int,
    rng: np.random.Generator,
    cfg: TrainConfig,
    step: int | None,
) -> list[list[Episode]]:
    groups = []
    for seed, key in seeds:
        codebase = generate_codebase(seed, key)
        groups.append([
            play(policy, codebase, rng, max_turns=cfg.max_turns, step=step, sample_index=i) for i in range(n)
        ])
    return groups


def evaluate(
    policy: SoftmaxPolicy, cfg: TrainConfig, sink: Sink, checkpoint_step: int, out: Callable[[str], None] = print
) -> dict[str, float]:
    """The fixed eval set (same codebases and sampling seed at every checkpoint), into its own run."""
    seeds = [(EVAL_SEED_BASE + i, f"eval-repo-{i:03d}") for i in range(cfg.eval_examples)]
    rng = np.random.default_rng(cfg.eval_seed)
    groups = play_groups(policy, seeds, cfg.eval_rollouts, rng, cfg, step=None)
    episodes = [e for g in groups for e in g]
    for group in groups:
        adv = group_advantages(np.array([e.reward for e in group]))
        for e, a in zip(group, adv, strict=True):
            e.record["advantage"] = float(a)
    metrics = batch_metrics(episodes, groups)
    sink.log(metrics, step=0)
    sink.log_rollouts([e.record for e in episodes])
    sink.finish(status="finished")
    out(
        f"eval @ step {checkpoint_step}: reward {metrics['reward']:.3f} (σ {metrics['reward_std']:.3f}) "
        f"f1 {metrics['reward/f1']:.3f} turns {metrics['num_turns/mean']:.2f} "
        f"over {len(episodes)} rollouts"
    )
    return metrics


def train(
    cfg: TrainConfig,
    sink: Sink,
    *,
    eval_sink: Callable[[int], Sink] | None = None,
    out: Callable[[str], None] = print,
    on_checkpoint: Callable[[int, SoftmaxPolicy], None] | None = None,
) -> TrainResult:
    """Run GRPO; `eval_sink(checkpoint_step)` opens the run each eval logs into;
    `on_checkpoint(step, policy)` is called where cfg.checkpoint_every says."""
    started = time.perf_counter()
    rng = np.random.default_rng(cfg.seed)
    policy = SoftmaxPolicy.init(N_FEATURES, len(ACTIONS), rng)
    optimizer = Adam(lr=cfg.lr)
    result = TrainResult(policy=policy)
    pool = [(TRAIN_SEED_BASE + cfg.seed * 10_000 + i, f"toy-repo-{cfg.seed}-{i:03d}") for i in range(cfg.train_pool)]
    out(
        f"demo GRPO: {cfg.steps} steps x {cfg.examples_per_step} examples x "
        f"{cfg.rollouts_per_example} rollouts, lr {cfg.lr}, seed {cfg.seed}"
    )
    if cfg.evals and eval_sink is not None:
        result.eval_before = evaluate(policy, cfg, eval_sink(0), 0, out)
    every = cfg.checkpoint_every
    if every and on_checkpoint is not None:
        on_checkpoint(0, policy)

    for step in range(cfg.steps):
        t0 = time.perf_counter()
        picks = rng.choice(len(pool), size=min(cfg.examples_per_step, len(pool)), replace=False)
        groups = play_groups(policy, [pool[i] for i in picks], cfg.rollouts_per_example, rng, cfg, step)
        episodes = [e for g in groups for e in g]
        for group in groups:
            adv = group_advantages(np.array([e.reward for e in group]))
            for e, a in zip(group, adv, strict=True):
                e.record["advantage"] = float(a)
        phi = np.concatenate([e.features for e in episodes])
        actions = np.concatenate([e.actions for e in episodes])
        per_decision_adv = np.concatenate([np.full(len(e.actions), e.record["advantage"]) for e in episodes])
        metrics = batch_metrics(episodes, groups)
        upd = grpo_update(
            policy, optimizer, phi, actions, per_decision_adv,
            epochs=cfg.epochs, clip_eps=cfg.clip_eps, entropy_coef=cfg.entropy_coef,
        )
        metrics.update({
            "loss": upd.loss,
            "entropy": upd.entropy,
            "grad_norm": upd.grad_norm,
            "clip_frac": upd.clip_frac,
            "kl": upd.kl,
            "learning_rate": cfg.lr,
            "step_time": time.perf_counter() - t0,
        })
        sink.log(metrics, step=step)
        upload = groups if cfg.log_groups is None else groups[: cfg.log_groups]
        sink.log_rollouts([e.record for g in upload for e in g])
        result.history.append(metrics)
        out(
            f"step {step:3d}  reward {metrics['reward']:.3f}  f1 {metrics['reward/f1']:.3f}  "
            f"turns {metrics['num_turns/mean']:.2f}  dead {metrics['frac_zero_std']:.2f}  "
            f"entropy {metrics['entropy']:.3f}  loss {metrics['loss']:+.4f}"
        )
        if every and on_checkpoint is not None and ((step + 1) % every == 0 or step + 1 == cfg.steps):
            on_checkpoint(step + 1, policy)
        if cfg.step_sleep > 0:
            time.sleep(cfg.step_sleep)

    if cfg.evals and eval_sink is not None:
        result.eval_after = evaluate(policy, cfg, eval_sink(cfg.steps), cfg.steps, out)
    result.seconds = time.perf_counter() - started
    out(f"done in {result.seconds:.1f}s")
    return result


# -- command line -------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m workers.demo_grpo", description=__doc__.splitlines()[0])
    d = TrainConfig()
    p.add_argument("--steps", type=int, default=d.steps)
    p.add_argument("--examples-per-step", type=int, default=d.examples_per_step)
    p.add_argument("--rollouts-per-example", type=int, default=d.rollouts_per_example)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--epochs", type=int, default=d.epochs)
    p.add_argument("--max-turns", type=int, default=d.max_turns)
    p.add_argument("--eval-examples", type=int, default=d.eval_examples)
    p.add_argument("--eval-rollouts", type=int, default=d.eval_rollouts)
    p.add_argument("--log-groups", type=int, default=None, help="groups per step to upload (default: all)")
    p.add_argument("--step-sleep", type=float, default=d.step_sleep, help="pause between steps (live demos)")
    p.add_argument("--no-evals", action="store_true")
    p.add_argument("--checkpoint-every", type=int, default=0, help="save and log a checkpoint every N steps")
    p.add_argument("--checkpoint-dir", default=None, help="default: $DEEPREPO_OUTPUT_DIR, else ./demo-grpo-output")
    p.add_argument("--eval-checkpoint", default=None, metavar="PATH",
                   help="evaluate this checkpoint into the run (a launched job's run) and stop")
    p.add_argument("--checkpoint-step", type=int, default=0, help="the step of --eval-checkpoint")
    p.add_argument("--dry-run", action="store_true", help="no server: print the per-step reward only")
    p.add_argument("--name", default=None)
    p.add_argument("--project", default=None, help="default: $DEEPREPO_PROJECT")
    return p.parse_args(argv)


def config_from(args: argparse.Namespace) -> TrainConfig:
    return TrainConfig(
        steps=args.steps,
        examples_per_step=args.examples_per_step,
        rollouts_per_example=args.rollouts_per_example,
        seed=args.seed,
        lr=args.lr,
        epochs=args.epochs,
        max_turns=args.max_turns,
        eval_examples=args.eval_examples,
        eval_rollouts=args.eval_rollouts,
        evals=not args.no_evals,
        log_groups=args.log_groups,
        step_sleep=args.step_sleep,
        checkpoint_every=max(0, args.checkpoint_every),
    )


@contextlib.contextmanager
def _without_env(name: str) -> Iterator[None]:
    """Hide one environment variable: eval runs must be new runs even when the job set DEEPREPO_RUN_ID."""
    saved = os.environ.pop(name, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[name] = saved


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cfg = config_from(args)
    # Progress lines become the job log; flush each one so the live tail is live.
    def out(line: str) -> None:
        print(line, flush=True)

    if args.dry_run:
        train(cfg, NullSink(), eval_sink=lambda _step: NullSink(), out=out)
        return 0

    import deeprepo_client  # lazily: the trainer and its tests work without the client

    project = args.project or os.environ.get("DEEPREPO_PROJECT")
    name = args.name or f"demo-grpo-seed{cfg.seed}"
    config = {**asdict(cfg), "sub_model": SUB_MODEL, "policy": "linear-softmax"}
    if args.eval_checkpoint:
        return _eval_checkpoint(args, cfg, project, config, out)
    run = deeprepo_client.init(project=project, name=name, config=config, kind="train",
                               model=ROOT_MODEL, environment=ENVIRONMENT, method="grpo")
    out(f"logging into run {run.id or '(offline: id assigned on sync)'}")

    def eval_sink(step: int) -> Sink:
        with _without_env("DEEPREPO_RUN_ID"):
            return deeprepo_client.init(
                project=project,
                name=f"{name} eval @ step {step}",
                config={**config, "checkpoint_step": step},
                kind="eval",
                parent_run_id=run.id,
                checkpoint_step=step,
                run_id=None,
                model=ROOT_MODEL,
                environment=ENVIRONMENT,
                method="grpo",
            )

    root = Path(args.checkpoint_dir or os.environ.get("DEEPREPO_OUTPUT_DIR") or "demo-grpo-output")

    def on_checkpoint(step: int, policy: SoftmaxPolicy) -> None:
        path = checkpoint_save(policy, root, step)
        # Logged as an artifact of kind checkpoint: a checkpoint-eval rule on this run launches its eval.
        run.log_artifact(path, kind="checkpoint", name=checkpoint_name(step))
        out(f"checkpoint @ step {step}: {path}")

    try:
        train(cfg, run, eval_sink=eval_sink, out=out, on_checkpoint=on_checkpoint)
    except BaseException:
        run.finish(status="failed")
        raise
    run.finish(status="finished")
    return 0


def _eval_checkpoint(args: argparse.Namespace, cfg: TrainConfig, project: str | None, config: dict[str, Any],
                     out: Callable[[str], None]) -> int:
    """One checkpoint's eval, into the launched job's run (DEEPREPO_RUN_ID) or a new eval run."""
    import deeprepo_client

    policy = checkpoint_load(args.eval_checkpoint)
    run = deeprepo_client.init(project=project, name=args.name or f"demo-grpo eval @ step {args.checkpoint_step}",
                               config={**config, "checkpoint": args.eval_checkpoint,
                                       "checkpoint_step": args.checkpoint_step},
                               kind="eval", checkpoint_step=args.checkpoint_step, model=ROOT_MODEL,
                               environment=ENVIRONMENT, method="grpo")
    try:
        evaluate(policy, cfg, run, args.checkpoint_step, out)
    except BaseException:
        run.finish(status="failed")
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
