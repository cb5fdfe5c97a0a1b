from __future__ import annotations

import sys
from typing import Any

import pytest

from tests.wandb_server.venvs import VERSIONS, required, sdk_python

SDKS = ["newest", *VERSIONS]


@pytest.fixture(scope="session", params=SDKS)
def wandb_python(request: Any) -> str:
    """The python of one wandb SDK version: the dev group's (newest), or an older one's own venv."""
    if request.param == "newest":
        return sys.executable
    try:
        return str(sdk_python(request.param))
    except RuntimeError as exc:
        if required():
            pytest.fail(f"wandb {request.param} is needed under CI: {exc}")
        pytest.skip(f"wandb {request.param} could not be installed here: {exc}")
