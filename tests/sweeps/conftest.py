from __future__ import annotations

from tests.jobs.conftest import local_cluster, work  # noqa: F401  (fixtures: a local cluster in a scratch dir)
