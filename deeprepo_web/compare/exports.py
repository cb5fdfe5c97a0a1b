"""Markdown and CSV renderings of a Comparison (the page's export buttons and `manage.py compare`)."""

from __future__ import annotations

import csv
import io
import math

from deeprepo_web.compare.comparison import Comparison, behaviour_rows, delta_text, per_example_rewards


def md_cell(text: str) -> str:
    # Run names and error texts are user / model text: keep them from breaking the table or
    # turning into links or HTML where the Markdown is pasted.
    text = " ".join(str(text).split())
    for ch in ("\\", "|", "<", ">", "[", "]", "`", "*", "_"):
        text = text.replace(ch, "\\" + ch)
    return text


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(md_cell(h) for h in header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return lines


def comparison_markdown(c: Comparison, *, title: str = "Comparison") -> str:
    names = [d.run.name for d in c.runs]
    base = c.base
    out = [f"## {md_cell(title)}", ""]
    rows = [[row.label] + [cell.text for cell in row.cells] for row in c.rows if row.key != "turns_sd"]
    rows += [[label] + vals for label, vals in behaviour_rows(c)]
    out += md_table(["Metric"] + names, rows)
    out.append("")
    paired = "paired by example" if c.paired_examples >= 3 else "unpaired (too few shared examples to pair)"
    out.append(f"### Change vs baseline: {md_cell(base.run.name)}")
    out.append("")
    out.append(f"95% bootstrap confidence intervals, {paired}.")
    out.append("")
    others = [i for i in range(len(c.runs)) if i != c.baseline]
    drows = []
    for row in c.rows:
        if not any(row.deltas):
            continue
        drows.append([row.label] + [delta_text(row.deltas[i], row) or "—" for i in others])
    out += md_table(["Metric"] + [names[i] for i in others], drows)
    if c.effects:
        out += ["", "### Effects", ""]
        erows = []
        for effect, d in c.effects:
            label = effect.label or f"{c.runs[effect.a].letter} → {c.runs[effect.b].letter}"
            rel = "—" if math.isnan(d.rel_estimate) else f"{100 * d.rel_estimate:+.1f}%"
            if d.too_small:
                ci = "too few data to tell"
            else:
                rel_ci = "" if math.isnan(d.rel_lo) else f"; {100 * d.rel_lo:+.1f}% to {100 * d.rel_hi:+.1f}%"
                ci = f"{d.lo:+.3f} to {d.hi:+.3f}{rel_ci}"
            erows.append([label, f"{names[effect.a]} → {names[effect.b]}", f"{d.estimate:+.3f}", rel, ci])
        out += md_table(["Delta", "From → To", "Absolute Improvement", "Relative Improvement", "95% CI"], erows)
    keys, cells = per_example_rewards(c)
    if keys and len(keys) <= 20:
        out += ["", "### Rewards per example", ""]
        out += md_table(["Example"] + names, [[f"#{i + 1}"] + line for i, line in enumerate(cells)])
    out.append("")
    return "\n".join(out)


CSV_HEADER = ["run_id", "run_name", "metric", "value", "sd", "ci_lo", "ci_hi", "n", "text",
              "delta", "delta_ci_lo", "delta_ci_hi", "rel_delta", "rel_delta_ci_lo", "rel_delta_ci_hi",
              "paired", "too_small", "baseline"]


def _num(v: float) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.6g}"


def _csv_safe(text: str) -> str:
    # A cell starting with = + - @ runs as a formula in spreadsheets; model/run text must not.
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def comparison_csv(c: Comparison) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(CSV_HEADER)
    for row in c.rows:
        for i, (d, cell) in enumerate(zip(c.runs, row.cells, strict=True)):
            delta = row.deltas[i] if i < len(row.deltas) else None
            diff = delta.diff if delta else None
            w.writerow([
                d.run.public_id, _csv_safe(d.run.name), row.key, _num(cell.value), _num(cell.sd), _num(cell.lo),
                _num(cell.hi), cell.n, _csv_safe(cell.text),
                _num(diff.estimate) if diff else "", _num(diff.lo) if diff else "", _num(diff.hi) if diff else "",
                _num(diff.rel_estimate) if diff else "", _num(diff.rel_lo) if diff else "",
                _num(diff.rel_hi) if diff else "", (str(diff.paired).lower() if diff else ""),
                (str(diff.too_small).lower() if diff else ""), str(i == c.baseline).lower(),
            ])
    return buf.getvalue()
