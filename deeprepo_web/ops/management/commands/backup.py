from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from deeprepo_web.ops.backup import BackupError, backup_create


class Command(BaseCommand):
    help = "Back up the database and the blob store, consistent with each other, into a new folder."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dir", help="a new or empty folder")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            s = backup_create(Path(options["dir"]))
        except (BackupError, RuntimeError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"backed up to {options['dir']}: database dump {s.dump_bytes:,} bytes, "
                          f"{s.objects:,} objects ({s.object_bytes:,} bytes)")
