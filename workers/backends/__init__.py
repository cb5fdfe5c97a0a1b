"""Cluster backends: JobSpec in, JobStatus out; no Django ORM here.

Importing this package registers every built-in backend kind.
"""

from __future__ import annotations

from workers.backends import local, ray, slurm  # noqa: F401  (registration side effect)
from workers.backends.base import (
    Backend,
    BackendError,
    JobSpec,
    JobState,
    JobStatus,
    Resources,
    backend_class,
    backend_for,
    register,
    registered_kinds,
)

__all__ = [
    "Backend",
    "BackendError",
    "JobSpec",
    "JobState",
    "JobStatus",
    "Resources",
    "backend_class",
    "backend_for",
    "register",
    "registered_kinds",
]
