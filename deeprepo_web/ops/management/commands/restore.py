from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from deeprepo_web.ops.backup import BackupError, backup_restore


class Command(BaseCommand):
    help = ("Restore a backup made by `manage.py backup` into an empty database (DATABASE_URL) and an "
            "empty blob store (the data folder or DEEPREPO_S3_BUCKET).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dir", help="the backup folder")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            s = backup_restore(Path(options["dir"]))
        except (BackupError, RuntimeError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"restored from {options['dir']}: {s.objects:,} objects ({s.object_bytes:,} bytes); "
                          "run `manage.py migrate` if this release is newer than the backup")
