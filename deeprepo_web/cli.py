"""The `deeprepo-web` command of an installed wheel (`uv tool install deeprepo-web`, pipx):
`deeprepo-web server` starts what `make run` starts; `deeprepo-web manage …` is manage.py."""

from __future__ import annotations

import argparse
import os
import sys

USAGE = """usage: deeprepo-web server [--host HOST] [--port PORT] [--data-dir DIR]
       deeprepo-web manage <django command> [args…]   (migrate, createsuperuser, backup, …)

server: an embedded Postgres (unless DATABASE_URL is set), migrations, a demo login, a Celery worker
and beat, and the web app; Ctrl-C stops them all. Settings come from the environment (.env.example)."""


def manage(argv: list[str]) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")
    from deeprepo_web.embedded_db import database_ensure

    # Without DATABASE_URL: the data directory's embedded Postgres (the one the server uses),
    # started here when it is not running and stopped at exit if nothing else uses it.
    server = database_ensure()  # noqa: F841 - the handle lives as long as the command
    from django.core.management import execute_from_command_line

    execute_from_command_line(["deeprepo-web manage", *argv])


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["manage"]:
        manage(args[1:])
        return 0
    if args[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if args[:1] != ["server"]:
        print(USAGE, file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog="deeprepo-web server")
    parser.add_argument("--host", default=os.environ.get("DEEPREPO_HOST", "127.0.0.1"))
    parser.add_argument("--port", default=os.environ.get("DEEPREPO_PORT", "8000"))
    parser.add_argument("--data-dir", default=os.environ.get("DEEPREPO_DATA_DIR", ""),
                        help="default: ~/.local/share/deeprepo-web")
    opts = parser.parse_args(args[1:])
    os.environ["DEEPREPO_HOST"], os.environ["DEEPREPO_PORT"] = opts.host, str(opts.port)
    if opts.data_dir:
        os.environ["DEEPREPO_DATA_DIR"] = opts.data_dir
    from deeprepo_web import launcher

    return launcher.main()


if __name__ == "__main__":
    sys.exit(main())
