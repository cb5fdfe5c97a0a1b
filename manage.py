#!/usr/bin/env python
from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")
    from deeprepo_web.embedded_db import database_ensure

    # Without DATABASE_URL: the data directory's embedded Postgres (the one `make run` uses),
    # started here when it is not running and stopped at exit if nothing else uses it.
    server = database_ensure()  # noqa: F841 - the handle lives as long as the command
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
