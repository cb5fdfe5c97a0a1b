"""The toy repo-audit environment, policy and rollout recording behind workers/demo_grpo.py."""
