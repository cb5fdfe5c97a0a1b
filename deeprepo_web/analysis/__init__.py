"""Pure analysis functions over run data (no ORM, no Django, nothing else of the project).

stats: descriptive stats, bootstrap CIs and deltas, pass@k · grpo: group advantages and dead
groups · behaviour: tool-use patterns of trajectories · cost: token prices and rollout cost.
"""
