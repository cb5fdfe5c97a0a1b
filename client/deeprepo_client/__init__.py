"""deeprepo-web client: log GRPO runs, metrics and rollouts; parse foreign RL output formats.

    import deeprepo_client
    run = deeprepo_client.init(project="demo", name="grpo-1", config={"lr": 1e-5})
    run.log({"reward": 0.8}, step=10)
    run.log_rollouts([...])
    run.finish()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deeprepo_client.run import Run, init

__all__ = ["Run", "init"]


def __getattr__(name: str) -> Any:
    # Loaded on first use: the format parsers (and the importer's parse process) need no HTTP client.
    if name in __all__:
        from deeprepo_client import run

        return getattr(run, name)
    raise AttributeError(f"module 'deeprepo_client' has no attribute {name!r}")
