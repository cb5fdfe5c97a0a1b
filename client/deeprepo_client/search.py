"""`deeprepo search`: the server's trajectory search from a terminal (one line per matching rollout)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any
from urllib.parse import quote, urlencode

from deeprepo_client.transport import Refused, ServerAway, Transport

FILTERS = ("mode", "run", "step_min", "step_max", "reward_min", "reward_max", "tool", "stop", "label")


def add_parser(sub: Any) -> None:
    s = sub.add_parser("search", help="search turns, tool calls, answers and prompts of a project's rollouts")
    s.add_argument("query", help='words and "phrases" (or a substring / regex with --mode)')
    s.add_argument("--project", help="project slug (default $DEEPREPO_PROJECT)")
    s.add_argument("--mode", choices=["words", "substring", "regex"], default="words")
    s.add_argument("--in", dest="where", default="", help="one field: content, reasoning, tool_name, tool_args, "
                   "tool_output, tool_error, answer, error, prompt")
    s.add_argument("--run", help="a run's id")
    for name in ("step_min", "step_max", "reward_min", "reward_max", "tool", "stop", "label"):
        s.add_argument(f"--{name.replace('_', '-')}", dest=name)
    s.add_argument("--page", type=int, default=1)
    s.add_argument("--json", action="store_true", help="print the API's JSON answer")
    s.set_defaults(func=cmd_search)


def _line(r: dict[str, Any]) -> str:
    step = "eval" if r["step"] is None else f"step {r['step']}"
    where = f" turn #{r['turn_index']}" if r["turn_index"] is not None else ""
    text = r["snippets"][0]["text"].replace("\n", " ")[:160] if r["snippets"] else ""
    return f"{r['rollout_id']}\t{r['run']}\t{step}\treward {r['reward']}\t{where.strip()}\t{text}"


def cmd_search(args: argparse.Namespace, transport: Transport) -> int:
    project = args.project or os.environ.get("DEEPREPO_PROJECT")
    if not project:
        print("deeprepo search: no project (pass --project or set DEEPREPO_PROJECT)", file=sys.stderr)
        return 2
    params = {"q": args.query, "in": args.where, "page": args.page}
    params.update({name: getattr(args, name) for name in FILTERS if getattr(args, name)})
    try:
        answer = transport.request("GET", f"/projects/{quote(project)}/search?{urlencode(params)}")
    except (ServerAway, Refused) as exc:
        print(f"deeprepo search: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
        return 0
    for warning in answer.get("warnings", []):
        print(f"warning: {warning}", file=sys.stderr)
    for r in answer["results"]:
        print(_line(r))
    if not answer["results"]:
        print("no rollout matches", file=sys.stderr)
    elif answer["has_next"]:
        print(f"(more: --page {args.page + 1})", file=sys.stderr)
    return 0
