from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand

from deeprepo_web.accounts.models import Project, Role
from deeprepo_web.accounts.services import api_key_create, membership_set, project_create


class Command(BaseCommand):
    help = "Create (once) the demo login and project, and print a fresh API key as the last line."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--url", default=settings.SITE_URL)
        parser.add_argument("--username", default="demo")
        parser.add_argument("--project", default="demo")

    def handle(self, *args: Any, **options: Any) -> None:
        password_file = Path(settings.DATA_DIR) / "demo_password"
        if os.environ.get("DEEPREPO_DEMO_PASSWORD"):
            password = os.environ["DEEPREPO_DEMO_PASSWORD"]
        elif password_file.exists():
            password = password_file.read_text().strip()
        else:
            password = secrets.token_urlsafe(9)
            password_file.parent.mkdir(parents=True, exist_ok=True)
            password_file.write_text(password)
            password_file.chmod(0o600)
        user, created = User.objects.get_or_create(username=options["username"])
        if created or not user.check_password(password):
            user.set_password(password)
            user.save()
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            project = project_create(slug=options["project"], name="Demo project", owner=user)
        membership_set(project=project, user=user, role=Role.ADMIN)
        _, key = api_key_create(project=project, user=user, name="make run")
        url = options["url"].rstrip("/")
        self.stdout.write(f"login:    {user.username} / {password}   ({url}/login/)")
        self.stdout.write(f"project:  {url}/p/{project.slug}/")
        self.stdout.write(f"API key:  {key}")
