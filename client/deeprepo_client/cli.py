"""`deeprepo sync DIR`: upload spooled runs. `deeprepo watch DIR`: follow a live output folder.
`deeprepo import SOURCE`: send a W&B / MLflow / Trackio (or other) source through the API.
`deeprepo search QUERY`: search a project's trajectories."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from deeprepo_client import search
from deeprepo_client.spool import Spool, spool_dirs
from deeprepo_client.transport import Refused, ServerAway, Transport, drain


def _transport(args: argparse.Namespace) -> Transport:
    key = args.api_key or os.environ.get("DEEPREPO_API_KEY")
    if not key:
        sys.exit("deeprepo: no API key (pass --api-key or set DEEPREPO_API_KEY)")
    return Transport(args.url or os.environ.get("DEEPREPO_URL") or "http://127.0.0.1:8000", key)


def cmd_sync(args: argparse.Namespace) -> int:
    dirs = spool_dirs(Path(args.dir))
    if not dirs:
        print(f"deeprepo: no spooled run in {args.dir}", file=sys.stderr)
        return 1
    transport = _transport(args)
    failed = 0
    for path in dirs:
        spool = Spool(path)
        if args.refused:
            print(f"{path.name}: {spool.requeue_rejected()} refused batch(es) queued again", file=sys.stderr)
        try:
            result = drain(spool, transport, in_flight=2)
        except (ServerAway, Refused) as exc:
            print(f"{path.name}: not sent ({exc}); run sync again later", file=sys.stderr)
            failed += 1
            continue
        server_id = spool.read_meta()["server_id"]
        print(f"{path.name}: run {server_id}: {result.sent} batch(es), {result.points} points, "
              f"{result.rollouts} rollouts sent; {spool.pending()} left")
        for line in result.rejected:
            print(f"  refused: {line}", file=sys.stderr)
        failed += bool(result.rejected)
    return 1 if failed else 0


def cmd_watch(args: argparse.Namespace) -> int:
    from deeprepo_client.watch import watch

    folder = Path(args.dir)
    if not folder.is_dir():
        print(f"deeprepo watch: {args.dir} is not a folder", file=sys.stderr)
        return 2
    if args.interval <= 0:
        print("deeprepo watch: --interval must be a positive number of seconds", file=sys.stderr)
        return 2
    transport = _transport(args)
    try:
        return watch(folder, transport, project=args.project or os.environ.get("DEEPREPO_PROJECT"),
                     interval=args.interval, once=args.once, state_dir=args.state, fmt=args.format,
                     into_run=args.into_run)
    except KeyboardInterrupt:
        return 0
    finally:
        transport.close()


def cmd_import(args: argparse.Namespace) -> int:
    from deeprepo_client.importing import report, send_events, source_events

    events = source_events(args.source, args.experiment)
    transport = _transport(args)
    try:
        return report(send_events(events, transport), transport)
    except (ServerAway, Refused) as exc:
        print(f"deeprepo import: stopped ({exc}); run the same command again to finish "
              "(nothing is sent twice)", file=sys.stderr)
        return 1
    finally:
        transport.close()


def _formats_epilog() -> str:
    """The formats SOURCE may be in, from the format registry (plugins included)."""
    from deeprepo_client.formats import format_labels

    lines = [f"  {name:<18} {label}" for name, label in format_labels()]
    return "formats (recognised from the content):\n" + "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="deeprepo")
    parser.add_argument("--url", help="server URL (default $DEEPREPO_URL)")
    parser.add_argument("--api-key", help="API key (default $DEEPREPO_API_KEY)")
    sub = parser.add_subparsers(dest="command", required=True)
    sync = sub.add_parser("sync", help="upload runs spooled while the server was away or offline")
    sync.add_argument("dir", help="a run's spool directory, or a spool root holding several")
    sync.add_argument("--refused", action="store_true",
                      help="also send again the batches the server refused (after fixing their cause)")
    sync.set_defaults(func=cmd_sync)
    w = sub.add_parser("watch", help="follow a live output folder (verifiers -s, TRL, prime-rl, verl, "
                                        "SkyRL, ART, AReaL) and stream new rows")
    w.add_argument("dir", help="the trainer's output folder")
    w.add_argument("--project", help="project slug (default $DEEPREPO_PROJECT; the API key's project)")
    w.add_argument("--interval", type=float, default=5.0, help="seconds between passes (default 5)")
    w.add_argument("--once", action="store_true", help="one pass, then exit")
    w.add_argument("--state", help="where to remember what was sent (default DIR/.deeprepo-watch)")
    w.add_argument("--format", help="skip detection: read DIR as this format")
    w.add_argument("--into-run", help="fill this existing run (e.g. a job's $DEEPREPO_RUN_ID) with the folder's train "
                                      "run instead of creating one; eval runs link to it")
    w.set_defaults(func=cmd_watch)
    imp = sub.add_parser("import", help="import a W&B / MLflow / Trackio / other tool's output through the API",
                         epilog=_formats_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    imp.add_argument("source", help="a file or folder, or mlflow://HOST:PORT")
    imp.add_argument("--experiment", help="the MLflow experiment to pull (with mlflow://)")
    imp.set_defaults(func=cmd_import)
    search.add_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "search":
        transport = _transport(args)
        try:
            return search.cmd_search(args, transport)
        finally:
            transport.close()
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
