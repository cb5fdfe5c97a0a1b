"""A rollout whose every field is an attack, for the sanitizer tests and the browser test."""

from __future__ import annotations

from typing import Any

PWN = "window.__pwned = 1; fetch('http://127.0.0.1:9/pwned')"
PAYLOADS = [
    f"<script>{PWN}</script>",
    f'<img src=x onerror="{PWN}">',
    f"[click me](javascript:{PWN})",
    f'<a href="javascript:{PWN}">raw link</a>',
    f'<iframe src="javascript:{PWN}"></iframe>',
    f'<svg onload="{PWN}"></svg>',
    '<style>body { display: none }</style>',
    f'<div style="background:url(javascript:{PWN})">styled</div>',
    f'[ref]: javascript:{PWN}\n\nSee [ref].',
    f"```html\n<script>{PWN}</script>\n```",
]
RTL = "user\u202eexe.txt and zero\u200bwidth and bom\ufeff"
ANSI = "\x1b[31mFAILED\x1b[0m test_x \x1b]0;title\x07 \x1b[2K\x1b[1;32mPASSED\x1b[0m"
BAD_UTF8 = b"caf\xc3 \xff\xfe invalid bytes".decode("utf-8", "replace")
HUGE = "A" * (5 * 1024 * 1024)  # one 5 MB line: goes to the blob store, preview stays in the row
WIDE = "W" * 200_000  # one 200 KB line kept inline


def hostile_rollout(uid: str = "hostile") -> dict[str, Any]:
    text = "\n\n".join(PAYLOADS) + f"\n\n{RTL}\n\n{ANSI}\n\n{BAD_UTF8}"
    return {
        "uid": uid,
        "example_key": f"<script>{PWN}</script>",
        "prompt": [{"role": "user", "content": text}],
        "oracle": f"<img src=x onerror=\"{PWN}\">",
        "step": 0,
        "sample_index": 0,
        "reward": 0.5,
        "reward_components": {"<b onmouseover='x'>f1</b>": 0.5},
        "stop_condition": "<script>x</script>",
        "error": f"<script>{PWN}</script> {ANSI}",
        "final_answer": text,
        "turns": [
            {"role": "system", "content": text},
            {"role": "assistant", "content": text, "reasoning": text,
             "tool_calls": [
                 {"name": f"<img src=x onerror=\"{PWN}\">", "call_id": "<script>", "arguments": {"code": f"<script>{PWN}</script>"},
                  "output": "\n".join([*PAYLOADS, RTL, ANSI, BAD_UTF8] * 5)},
                 {"name": "huge_output", "arguments": {"path": "big.log"}, "output": HUGE},
                 {"name": "wide_output", "arguments": {"path": "wide.log"}, "output": WIDE},
             ]},
            {"role": "tool", "content": "\n".join(PAYLOADS * 10)},
            {"role": f"<script>{PWN}</script>", "content": "weird role"},
        ],
    }
