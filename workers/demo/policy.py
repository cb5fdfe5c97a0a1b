"""A linear softmax policy over the four audit actions, its GRPO update and an Adam optimizer."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


@dataclass
class SoftmaxPolicy:
    weights: np.ndarray  # (n_features, n_actions)

    @classmethod
    def init(cls, n_features: int, n_actions: int, rng: np.random.Generator, scale: float = 0.01) -> SoftmaxPolicy:
        return cls(rng.normal(0.0, scale, size=(n_features, n_actions)))

    def probs(self, phi: np.ndarray) -> np.ndarray:
        return softmax(phi @ self.weights)

    def act(self, phi: np.ndarray, rng: np.random.Generator, temperature: float = 1.0) -> int:
        logits = phi @ self.weights
        if temperature <= 0:
            return int(np.argmax(logits))
        p = softmax(logits / temperature)
        return int(rng.choice(p.size, p=p))


def group_advantages(rewards: np.ndarray) -> np.ndarray:
    """GRPO: reward minus the group mean, divided by the group std when it is > 0."""
    centered = rewards - rewards.mean()
    sd = rewards.std()
    return centered / sd if sd > 1e-9 else np.zeros_like(rewards)


@dataclass
class Adam:
    lr: float
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    t: int = 0
    m: np.ndarray | None = None
    v: np.ndarray | None = None

    def step(self, params: np.ndarray, grad: np.ndarray) -> None:
        """In-place ascent step (the gradient is of the objective to maximize)."""
        if self.m is None or self.v is None:
            self.m = np.zeros_like(params)
            self.v = np.zeros_like(params)
        self.t += 1
        self.m = self.beta1 * self.m + (1 - self.beta1) * grad
        self.v = self.beta2 * self.v + (1 - self.beta2) * grad * grad
        m_hat = self.m / (1 - self.beta1**self.t)
        v_hat = self.v / (1 - self.beta2**self.t)
        params += self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


@dataclass
class UpdateStats:
    loss: float
    entropy: float
    grad_norm: float
    clip_frac: float
    kl: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)


def grpo_update(
    policy: SoftmaxPolicy,
    optimizer: Adam,
    phi: np.ndarray,  # (T, F): features of every decision in the batch
    actions: np.ndarray,  # (T,)
    advantages: np.ndarray,  # (T,): the rollout's advantage repeated on each of its decisions
    *,
    epochs: int = 1,
    clip_eps: float = 0.2,
    entropy_coef: float = 0.0,
    max_grad_norm: float = 5.0,
) -> UpdateStats:
    """Clipped policy-gradient steps on one batch (PPO-style surrogate with GRPO advantages).

    The loss is averaged over decisions (not rollouts), like token-level GRPO: long rollouts
    weigh more, which is what pushes an over-exploring policy to shorten its episodes.
    """
    n = phi.shape[0]
    onehot = np.zeros((n, policy.weights.shape[1]))
    onehot[np.arange(n), actions] = 1.0
    old_p = policy.probs(phi)
    old_logp = np.log(old_p[np.arange(n), actions] + 1e-12)
    stats = UpdateStats(0.0, 0.0, 0.0, 0.0)
    for epoch in range(max(1, epochs)):
        p = policy.probs(phi)
        logp = np.log(p[np.arange(n), actions] + 1e-12)
        ratio = np.exp(logp - old_logp)
        clipped = np.clip(ratio, 1 - clip_eps, 1 + clip_eps)
        surrogate = np.minimum(ratio * advantages, clipped * advantages)
        # Gradient flows only where the unclipped term is the minimum (the PPO rule).
        active = (ratio * advantages) <= (clipped * advantages) + 1e-12
        coef = np.where(active, ratio * advantages, 0.0) / n
        # d log p(a|s) / dW = phi ⊗ (onehot(a) - p)
        grad = phi.T @ (coef[:, None] * (onehot - p))
        logp_all = np.log(p + 1e-12)
        entropy = -(p * logp_all).sum(axis=1)
        if entropy_coef:
            # d H / d logits = -p * (log p + H)
            d_ent = -p * (logp_all + entropy[:, None])
            grad += entropy_coef * phi.T @ d_ent / n
        norm = float(np.linalg.norm(grad))
        if norm > max_grad_norm:
            grad *= max_grad_norm / norm
        optimizer.step(policy.weights, grad)
        if epoch == 0:
            stats = UpdateStats(
                loss=float(-surrogate.mean() - entropy_coef * entropy.mean()),
                entropy=float(entropy.mean()),
                grad_norm=norm,
                clip_frac=float(np.mean(~active)),
            )
    new_p = policy.probs(phi)
    # Exact KL(old || new) over the four actions, averaged over decisions: how far one step moved.
    stats.kl = float(np.mean(np.sum(old_p * (np.log(old_p + 1e-12) - np.log(new_p + 1e-12)), axis=1)))
    return stats
