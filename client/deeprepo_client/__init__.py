"""deeprepo-web client: log GRPO runs, metrics and rollouts; parse foreign RL output formats.

    import deeprepo_client
    run = deeprepo_client.init(project="demo", name="grpo-1", config={"lr": 1e-5})
    run.log({"reward": 0.8}, step=10)
    run.log_rollouts([...])
    run.finish()
"""

from __future__ import annotations

from deeprepo_client.run import Run, init

__all__ = ["Run", "init"]
