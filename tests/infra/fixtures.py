"""Session-scoped pytest fixtures for the real services.

Use them from any test folder's conftest.py:

    from tests.infra.fixtures import ray_head, slurm_cluster, sshd_server  # noqa: F401

A service whose binary is missing skips its tests with the reason, unless
DEEPREPO_REQUIRE_CLUSTERS=1 (CI) turns that into a failure.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest

from tests.infra._proc import ServiceUnavailable
from tests.infra.ray_head import RayHead, start_ray_head
from tests.infra.s3 import S3Server, require_s3, start_s3
from tests.infra.slurm import SlurmCluster, start_slurm
from tests.infra.sshd import SshServer, start_sshd

T = TypeVar("T")


def _start_or_skip(start: Callable[[], T], what: str) -> T:
    try:
        return start()
    except ServiceUnavailable as e:
        if os.environ.get("DEEPREPO_REQUIRE_CLUSTERS") == "1":
            pytest.fail(f"{what} unavailable but DEEPREPO_REQUIRE_CLUSTERS=1: {e}")
        pytest.skip(f"{what} unavailable: {e}")


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    cluster = _start_or_skip(start_slurm, "Slurm")
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def sshd_server() -> Iterator[SshServer]:
    server = _start_or_skip(start_sshd, "sshd")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def ray_head() -> Iterator[RayHead]:
    head = _start_or_skip(start_ray_head, "Ray head")
    yield head
    head.stop()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """rclone's S3 server; skipped (with the reason) only when rclone is missing and DEEPREPO_REQUIRE_S3 is unset."""
    try:
        server = start_s3()
    except ServiceUnavailable as e:
        if require_s3() or os.environ.get("DEEPREPO_REQUIRE_CLUSTERS") == "1":
            pytest.fail(f"S3 server unavailable but DEEPREPO_REQUIRE_S3 is set: {e}")
        pytest.skip(f"S3 server unavailable: {e}")
    yield server
    server.stop()
