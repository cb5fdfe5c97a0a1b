"""The status badge: one markup, one set of colours and one wording for every state a page shows.

Runs, jobs, trials, sweeps, imports, judge jobs, artifacts, keys, share links and cluster checks all
say their state through `status_badge` (templates: `{% load status %}{% status_badge x.status %}`);
a run's through `run_badge` (`{% run_badge run %}`), which also says "deleting".
The colour comes from the state's tone, so a new state needs one line here and no CSS; the
`status-<state>` class stays as a hook for scripts and tests that look for one state.
"""

from __future__ import annotations

from typing import Any

from django.utils.html import format_html
from django.utils.safestring import SafeString

# A state's tone: live (moving now), good (ended well), bad (ended badly or going away), wait (not
# started yet, or stopping), off (stopped on purpose). States not named here are neutral.
TONES = {
    "running": "live",
    "finished": "good", "succeeded": "good", "complete": "good", "done": "good", "ready": "good",
    "active": "good", "ok": "good", "listening": "good",
    "failed": "bad", "crashed": "bad", "lost": "bad", "deleting": "bad",
    "queued": "wait", "pending": "wait", "submitting": "wait", "requeued": "wait", "cancelling": "wait",
    "partial": "wait", "no worker": "wait",
    "cancelled": "off", "pruned": "off", "revoked": "off", "expired": "off",
}

_BADGE = '<span class="status tone-{tone} status-{state}"{id}{title}>{dot}{text}</span>'
_DOT = SafeString('<span class="live-dot" aria-hidden="true"></span>')


def status_badge(state: str, text: str = "", *, element_id: str = "", title: str = "") -> SafeString:
    """The badge of `state`; `text` words it otherwise (a cluster check's "ok", an import's problem
    count). A running state carries the pulsing dot."""
    state = str(state)
    tone = TONES.get(state, "neutral")
    return format_html(
        _BADGE, tone=tone, state=state.replace(" ", "-"),
        id=format_html(' id="{}"', element_id) if element_id else "",
        title=format_html(' title="{}"', title) if title else "",
        dot=_DOT if tone == "live" else "", text=text or state,
    )


def run_badge(run: Any, *, element_id: str = "") -> SafeString:
    """A run's badge: "deleting" while the worker deletes it (runs.deletion), else its status."""
    return status_badge("deleting" if run.deletion_requested_at else run.status, element_id=element_id)
