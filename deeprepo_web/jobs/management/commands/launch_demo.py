from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Start the demo GRPO training job in the background, logging into the demo project."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--api-key", required=True)
        parser.add_argument("--url", default=settings.SITE_URL)
        parser.add_argument("--steps", type=int, default=40)

    def handle(self, *args: Any, **options: Any) -> None:
        logs = Path(settings.DATA_DIR) / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "DEEPREPO_URL": options["url"], "DEEPREPO_API_KEY": options["api_key"],
               "DEEPREPO_PROJECT": "demo"}
        log = open(logs / "demo_grpo.log", "ab")  # noqa: SIM115 - the child owns it
        proc = subprocess.Popen(
            [sys.executable, "-m", "workers.demo_grpo", "--steps", str(options["steps"])],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            cwd=Path(settings.BASE_DIR),
        )
        self.stdout.write(f"demo GRPO job started (pid {proc.pid}); log: {logs / 'demo_grpo.log'}")
