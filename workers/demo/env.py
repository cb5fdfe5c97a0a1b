"""The toy repo-audit environment: one episode = one agent auditing one synthetic codebase.

Per turn the agent takes one action (file_tree, read_file, llm_batch, answer). The environment
answers like the real RLM REPL would: the tree, a file's text, or the findings of cheap sub-LLMs
that each review one file (they miss bugs sometimes and hallucinate sometimes). Every turn is
recorded in the client's TurnRecord / ToolCallRecord shapes, so the dashboard shows the demo's
trajectories exactly like real ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workers.demo.codebase import BUG_KINDS, Codebase, f1_score

ACTIONS = ("file_tree", "read_file", "llm_batch", "answer")
FILE_TREE, READ_FILE, LLM_BATCH, ANSWER = range(len(ACTIONS))

ROOT_MODEL = "toy-softmax-policy"
SUB_MODEL = "toy-sub-llm"
# USD per million tokens (input, output); cheap workers, pricier root, as in the seed journal.
ROOT_PRICE = (0.20, 0.80)
SUB_PRICE = (0.20, 1.10)

BATCH_SIZE = 4
SUB_HALLUCINATION = 0.07  # chance per reviewed file that a sub-LLM invents a bug
TURN_COST = 0.03  # reward lost per turn beyond the budget an efficient audit needs
SYSTEM_PROMPT = (
    "You are the root model of a recursive code-audit agent. You run Python in a REPL with "
    "`file_tree()`, `codebase[path]`, `llm_batch(prompts)` (parallel cheap sub-LLMs) and an "
    "`answer` dict. Find the security bugs planted in the repository and report each as "
    "`path: kind`. Set answer['ready'] = True when done."
)


def tokens(text: str) -> int:
    # ~4 characters per token is close enough for a toy and keeps costs plausible.
    return max(1, math.ceil(len(text) / 4))


def price(model_price: tuple[float, float], in_tok: int, out_tok: int) -> float:
    return (in_tok * model_price[0] + out_tok * model_price[1]) / 1e6


def turn_budget(n_files: int) -> int:
    """Turns of an efficient audit: tree, one llm_batch per BATCH_SIZE files, answer."""
    return 2 + math.ceil(n_files / BATCH_SIZE)


@dataclass
class EpisodeState:
    codebase: Codebase
    max_turns: int
    turn: int = 0
    tree_seen: bool = False
    last_error: bool = False
    read: set[str] = field(default_factory=set)
    delegated: dict[str, int] = field(default_factory=dict)  # path -> times reviewed by sub-LLMs
    findings: dict[tuple[str, str], str] = field(default_factory=dict)  # (path, kind) -> source
    done: bool = False

    @property
    def n_files(self) -> int:
        return len(self.codebase.files)

    def covered(self) -> set[str]:
        return self.read | set(self.delegated)

    def frac_covered(self) -> float:
        return len(self.covered()) / self.n_files


def _sub_prompt(path: str, content: str) -> str:
    return (
        "Review this file for security bugs. Answer one line per bug as `path:line: kind — reason`, "
        f"or NO ISSUES.\n\n# {path}\n{content}"
    )


class AuditEnv:
    """Steps one episode; `rng` drives the sub-LLMs and the root's own reading."""

    def __init__(self, codebase: Codebase, rng: np.random.Generator, max_turns: int = 12) -> None:
        self.state = EpisodeState(codebase=codebase, max_turns=max_turns)
        self.rng = rng
        self.turns: list[dict[str, Any]] = []
        self.context_tokens = tokens(SYSTEM_PROMPT) + tokens(self.task_prompt())
        self.sub_in = 0
        self.sub_out = 0
        self.sub_cost = 0.0
        self.sub_calls = 0
        self.errors = 0

    def task_prompt(self) -> str:
        return f"Audit the repository `{self.state.codebase.key}` and report its security bugs."

    # -- actions -------------------------------------------------------------------------------

    def step(self, action: int) -> None:
        s = self.state
        handler = (self._file_tree, self._read_file, self._llm_batch, self._answer)[action]
        thought, code, call = handler()
        s.last_error = bool(call.get("is_error"))
        self.errors += s.last_error
        content = f"{thought}\n\n```python\n{code}\n```"
        out_tok = tokens(content)
        in_tok = self.context_tokens
        call["call_id"] = f"call_{s.turn}"
        call["duration"] = round(0.05 + 0.4 * float(self.rng.random()), 3)
        self.turns.append({
            "role": "assistant",
            "content": content,
            "input_tokens": in_tok,
            "output_tokens": out_tok,
            "latency": round(0.4 + out_tok / 90.0, 3),
            "model": ROOT_MODEL,
            "tool_calls": [call],
            "metadata": {"action": ACTIONS[action], "frac_covered": round(s.frac_covered(), 3)},
        })
        # The next turn sees everything so far: the context grows by this turn and its output.
        self.context_tokens += out_tok + tokens(str(call.get("output") or ""))
        s.turn += 1
        if action == ANSWER:
            s.done = True

    def _file_tree(self) -> tuple[str, str, dict[str, Any]]:
        s = self.state
        thought = (
            "Listing the repository again to double-check the layout."
            if s.tree_seen
            else "I'll start by listing the repository so I know which files to audit."
        )
        s.tree_seen = True
        return thought, "print(file_tree())", {
            "name": "file_tree", "arguments": {}, "output": s.codebase.tree(), "is_error": False,
        }

    def _read_file(self) -> tuple[str, str, dict[str, Any]]:
        s = self.state
        if not s.tree_seen:
            # Without the tree the model guesses an entry point that does not exist.
            return (
                "Let me look at the main module first.",
                "print(codebase['main.py'])",
                {"name": "read_file", "arguments": {"path": "main.py"}, "is_error": True,
                 "output": "Traceback (most recent call last):\n  File \"<repl>\", line 1, in <module>\n"
                           "KeyError: 'main.py'"},
            )
        order = [p for p in s.codebase.paths if p not in s.covered()] or [
            p for p in s.codebase.paths if p not in s.read
        ] or s.codebase.paths
        path = order[0]
        s.read.add(path)
        noticed = []
        for bug in s.codebase.bugs_in(path):
            if self.rng.random() < BUG_KINDS[bug.kind].root_recall:
                s.findings.setdefault((bug.path, bug.kind), "root")
                noticed.append(bug.kind)
        thought = f"Reading {path} myself to check it line by line."
        if noticed:
            thought += " (I will note " + ", ".join(noticed) + " from it.)"
        numbered = "\n".join(f"{i + 1:>3} {line}" for i, line in enumerate(s.codebase.files[path].splitlines()))
        return thought, f"print(codebase[{path!r}])", {
            "name": "read_file", "arguments": {"path": path}, "output": numbered, "is_error": False,
        }

    def _llm_batch(self) -> tuple[str, str, dict[str, Any]]:
        s = self.state
        if not s.tree_seen:
            return (
                "Delegating the audit of every file to sub-LLMs.",
                "results = llm_batch([f'Audit {p}:\\n{codebase[p]}' for p in paths])",
                {"name": "llm_batch", "arguments": {"files": []}, "is_error": True, "sub_calls": [],
                 "output": "Traceback (most recent call last):\n  File \"<repl>\", line 1, in <module>\n"
                           "NameError: name 'paths' is not defined"},
            )
        fresh = [p for p in s.codebase.paths if p not in s.delegated]
        if fresh:
            batch = fresh[:BATCH_SIZE]
            thought = f"Delegating {len(batch)} files to sub-LLMs for a focused security review."
        else:
            # Everything was reviewed once: ask for second opinions on the least-reviewed files.
            batch = sorted(s.codebase.paths, key=lambda p: s.delegated[p])[:BATCH_SIZE]
            thought = "All files were reviewed once; asking the sub-LLMs for a second opinion."
        sub_calls: list[dict[str, Any]] = []
        lines: list[str] = []
        for path in batch:
            s.delegated[path] = s.delegated.get(path, 0) + 1
            response = self._sub_review(path)
            prompt = _sub_prompt(path, s.codebase.files[path])
            in_tok, out_tok = tokens(prompt), tokens(response)
            cost = price(SUB_PRICE, in_tok, out_tok)
            self.sub_in += in_tok
            self.sub_out += out_tok
            self.sub_cost += cost
            self.sub_calls += 1
            sub_calls.append({
                "call_id": f"call_{s.turn}_{len(sub_calls)}",
                "name": "llm_query",
                "model": SUB_MODEL,
                "arguments": {"prompt": prompt},
                "output": response,
                "is_error": False,
                "input_tokens": in_tok,
                "output_tokens": out_tok,
                "cost": round(cost, 8),
                "duration": round(0.8 + 2.0 * float(self.rng.random()), 3),
            })
            lines.append(f"{path} -> {response}")
        code = (
            f"files = {batch!r}\n"
            "results = llm_batch([f'Review {p} for security bugs:\\n{codebase[p]}' for p in files])\n"
            "for p, r in zip(files, results):\n    print(p, '->', r)"
        )
        return thought, code, {
            "name": "llm_batch", "arguments": {"files": batch}, "output": "\n".join(lines),
            "is_error": False, "sub_calls": sub_calls,
        }

    def _sub_review(self, path: str) -> str:
        s = self.state
        found = []
        for bug in s.codebase.bugs_in(path):
            kind = BUG_KINDS[bug.kind]
            if self.rng.random() < kind.sub_llm_recall:
                found.append(f"{path}:{bug.line}: {bug.kind} — {kind.description}")
                s.findings.setdefault((bug.path, bug.kind), "sub_llm")
        if self.rng.random() < SUB_HALLUCINATION:
            # A plausible but wrong finding: an issue kind the file does not contain.
            real = {b.kind for b in s.codebase.bugs_in(path)}
            options = [k for k in BUG_KINDS if k not in real]
            fake = options[int(self.rng.integers(len(options)))]
            line = 1 + int(self.rng.integers(len(s.codebase.files[path].splitlines())))
            found.append(f"{path}:{line}: {fake} — {BUG_KINDS[fake].description}")
            s.findings.setdefault((path, fake), "sub_llm")
        return "\n".join(found) if found else "NO ISSUES"

    def _answer(self) -> tuple[str, str, dict[str, Any]]:
        s = self.state
        report = self.report()
        thought = (
            f"I covered {len(s.covered())} of {s.n_files} files. Writing the final report."
            if s.covered()
            else "I think I have enough to answer."
        )
        code = f"answer['content'] = '''{report}'''\nanswer['ready'] = True"
        return thought, code, {
            "name": "answer",
            "arguments": {"bugs": [f"{p}: {k}" for p, k in sorted(s.findings)]},
            "output": "Answer recorded; episode done.",
            "is_error": False,
        }

    def report(self) -> str:
        if not self.state.findings:
            return "No security issues found."
        return "\n".join(f"- {path}: {kind}" for path, kind in sorted(self.state.findings))

    # -- scoring -------------------------------------------------------------------------------

    def score(self) -> tuple[float, dict[str, float], dict[str, Any]]:
        s = self.state
        truth = s.codebase.truth()
        reported = set(s.findings) if s.done else set()  # no answer, no credit
        precision, recall, f1 = f1_score(reported, truth)
        penalty = TURN_COST * max(0, s.turn - turn_budget(s.n_files))
        reward = float(min(1.0, max(0.0, f1 - penalty)))
        components = {"f1": round(f1, 6), "turn_penalty": round(-penalty, 6) + 0.0}  # + 0.0 turns -0.0 into 0.0
        metrics = {
            "precision": round(precision, 6),
            "recall": round(recall, 6),
            "files_total": s.n_files,
            "files_covered": len(s.covered()),
            "files_read": len(s.read),
            "files_delegated": len(s.delegated),
            "bugs_planted": len(truth),
            "bugs_found": len(reported & truth),
            "false_positives": len(reported - truth),
            "sub_llm_calls": self.sub_calls,
            "errors": self.errors,
        }
        return reward, components, metrics


def features(state: EpisodeState) -> np.ndarray:
    """What the policy sees: progress of the audit and where it is in the episode."""
    s = state
    pending = s.tree_seen and len(s.covered()) < s.n_files
    t = s.turn
    bucket = 0 if t == 0 else 1 if t == 1 else 2 if t == 2 else 3 if t <= 4 else 4 if t <= 6 else 5
    one_hot = np.zeros(6)
    one_hot[bucket] = 1.0
    return np.concatenate((
        [
            1.0,
            float(s.tree_seen),
            s.frac_covered(),
            float(s.tree_seen and not pending),
            float(bool(s.findings)),
            float(s.last_error),
        ],
        one_hot,
    ))


N_FEATURES = 12
