"""The report in plain words: what was asked, what was measured — each measure with a line that
says what it means — and what it cost. ``Report.__str__`` is this text; ``Report.to_dict`` is
the machine-readable form.

The text names columns as the query and the policy name them; the pipeline's own names (temp
tables, the columns that recognise persons in a joined release) never appear in it.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from sqlanon.risk.headline import headline_lines

if TYPE_CHECKING:
    from sqlanon.finish.report import Report

#: the text lists buckets one by one up to this many (to_dict: all that were measured)
SHOWN_BUCKETS = 30

#: one line per measure: what it means, and which way is better
MEANINGS = {
    "suppressed": "withheld (selected rows left out) + released with every quasi-identifier at its hierarchy's "
                  "root; max_suppression bounds their share",
    "KL divergence": "how far each quasi-identifier's released distribution is from the selected rows' "
                     "— normalized Kullback-Leibler divergence: 0 = identical, higher = more lost",
    "IL": "information loss of group means: squared distance of the released values from the stored ones, "
          "as a share of their total variance (SSE/SST): 0 = unchanged",
    "classes": "groups of released rows that share every quasi-identifier value: a row cannot be told apart "
               "from the others of its class",
    "discernibility": "sum over rows of the size of the class each falls in, a withheld row counting the whole "
                      "selection: lower = finer",
    "C_avg": "average class size divided by k: 1 = ideal, higher = coarser than k needs",
    "ARX loss": "ARX's loss (granularity): each released label's share of its domain, a withheld row counting "
                "1, normalized per quasi-identifier and averaged geometrically: 0 = as stored, 1 = all at the root",
    "entropy": "non-uniform entropy: bits lost to generalization, per row and quasi-identifier log2 of the "
               "selected rows under its released label over those with its value, summed: 0 = nothing lost",
    "levels": "rows released at each generalization level of each quasi-identifier: 0 = the value as stored, "
              "the root = nothing of it",
    "buckets": "slicing's buckets, rows/l each: a row's link to its sensitive value is at most 1/l likely",
}


def _number(v: Any) -> str:
    if isinstance(v, float):
        return "∞" if math.isinf(v) else f"{v:g}"
    return str(v)


def _plain(v: Any) -> str:
    """A value in words: lists joined by commas, mappings as 'key value' (never a Python repr)."""
    if isinstance(v, dict):
        return ", ".join(f"{k} {_plain(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple, set, frozenset)):
        return ", ".join(_plain(x) for x in v)
    return _number(v)


def _protected(protect: Any) -> str:
    return "every value protected" if protect in (None, "all") else f"protected: {_plain(protect)}"


def requirement_text(req: dict[str, Any]) -> str:
    """``Report.requirement`` as one line: ``k=5 (every class at least 5 rows); …``."""
    parts = []
    for key, v in req.items():
        if key == "k":
            parts.append(f"k={v} (every class at least {v} rows)")
        elif key == "alpha" and isinstance(v, dict):
            share = f"{float(v['value']):.0%}"
            parts.append(f"alpha={_number(v['value'])} on {v.get('attribute')} (no protected value above {share} "
                         f"of a class; {_protected(v.get('protect'))})")
        elif key == "l" and isinstance(v, dict):
            variant = v.get("variant", "distinct")
            what = {"distinct": f"at least {v['value']} distinct values per class",
                    "entropy": f"every class's entropy at least log {v['value']}",
                    "recursive": f"recursive (c={_number(v.get('c'))}, l={v['value']})-diversity"}.get(variant, variant)
            parts.append(f"l={v['value']} on {v.get('attribute')} ({what})")
        elif key == "t" and isinstance(v, dict):
            parts.append(f"t={_number(v['value'])} on {v.get('attribute')} ({v.get('distance')} distance: every "
                         "class's distribution at most t from the selection's)")
        elif key == "persons" and isinstance(v, dict):
            by = ", ".join(v.get("columns") or [])
            parts.append(f"at least {v.get('k')} distinct persons per class" + (f" (persons recognised by {by})" if by else ""))
        elif key == "epsilon" and isinstance(v, dict):
            who = "each client" if v.get("per") == "client" else "all clients together"
            parts.append(f"ε={_number(v['per_query'])} per query, budget {_number(v['budget'])} per "
                         f"{_days(v['window_seconds'])} ({who})")
        elif key == "delta":
            parts.append(f"δ={_number(v)} (for keys without a public domain)")
        elif key == "rows_per_person":
            parts.append(f"at most {v} row(s) per person")
        elif key == "measurements":
            parts.append(f"ε split over {v} measurement(s)")
        elif key == "bounds" and isinstance(v, dict):
            parts.append("values clamped into " + ", ".join(f"{c} [{_number(b[0])}, {_number(b[1])}]"
                                                            for c, b in v.items()))
        elif key == "max_suppression" and isinstance(v, (int, float)):
            parts.append(f"max_suppression={_number(v)} (at most {float(v):.0%} of the selected rows suppressed)")
        else:
            parts.append(f"{key} {_plain(v)}")
    return "; ".join(parts)


def _days(seconds: Any) -> str:
    return f"{seconds / 86_400:g} days" if seconds % 86_400 == 0 else f"{seconds} s"


def _dp_text(r: "Report") -> str:
    """A differentially private answer: the budget, the noise of each figure, the intervals."""
    lines = [f"table {r.table}: method dp (differential privacy)", f"  why: {r.rule}"]
    d = r.dp
    if not d:
        lines.append("  (not run: nothing spent, no figure drawn)")
    else:
        per = "this client's" if d["per"] == "client" else "all clients'"
        lines.append(f"privacy: ε {_number(d['epsilon_spent'])} spent"
                     + (f", δ {_number(d['delta_spent'])}" if d["delta_spent"] else "")
                     + f"; {per} budget {_number(d['budget'])} per {_days(d['window_seconds'])}: "
                     f"{_number(round(d['budget_spent'], 6))} spent, {_number(round(d['budget_left'], 6))} left")
        lines.append(f"  ε split over {d['measurements']} measurement(s) of ε {_number(round(d['epsilon_each'], 6))} "
                     "each (sequential composition)")
        lines.append("noise (OpenDP), per figure:")
        for figure, n in d["noise"].items():
            extra = f", threshold {n['threshold']}" if "threshold" in n else ""
            lines.append(f"  {figure}: {n['mechanism']}, sensitivity {_number(n['sensitivity'])}, "
                         f"scale {_number(round(n['scale'], 4))}{extra}")
        shown = d["intervals"][:SHOWN_BUCKETS]
        if shown:
            lines.append("95 % intervals, row by row (the value lies in it with 95 % probability):")
            for i, spans in enumerate(shown, 1):
                parts = [f"{c} [{_number(round(s[0], 4))}, {_number(round(s[1], 4))}]"
                         for c, s in zip(d["columns"], spans) if s is not None]
                lines.append(f"  row {i}: " + ", ".join(parts))
            if len(d["intervals"]) > SHOWN_BUCKETS:
                lines.append(f"  … and {len(d['intervals']) - SHOWN_BUCKETS} more rows (all of them in the JSON report)")
    if r.requirement:
        lines.append(f"  requirement {requirement_text(r.requirement)}")
    times = ", ".join(f"{k} {v:.3f} s" for k, v in r.seconds.items())
    lines.append(f"cost: {r.statements} SQL statements; {times}")
    if r.notes:
        lines.append("notes:")
        lines.extend(f"  {n}" for n in r.notes)
    return "\n".join(lines)


def _measure(name: str, value: str) -> list[str]:
    return [f"  {name:<15} {value}", f"  {'':<15} ({MEANINGS[name]})"]


def report_text(r: "Report") -> str:
    if r.table is None:
        return f"pass-through ({r.rule}); {r.statements} statement(s), {sum(r.seconds.values()):.3f} s"
    if r.method == "dp":
        return _dp_text(r)
    lines = [f"table {r.table}: method {r.method}", f"  why: {r.rule}"]
    if r.requirement:
        lines.append(f"  requirement {requirement_text(r.requirement)}")
    if r.rows_in:
        lines.append(f"rows: {r.rows_in} selected, {r.rows_released} released, {r.rows_suppressed} suppressed "
                     f"({r.rows_suppressed / r.rows_in:.2%})")
        lines.append(f"  suppressed = {r.rows_withheld} withheld (selected rows left out) + {r.rows_generalized} "
                     "released with every quasi-identifier at its hierarchy's root; max_suppression bounds their share")
    else:
        lines.append("rows: none selected")
    if r.checks:
        lines.append("checks, on the released rows inside the database:")
        lines.extend(f"  {'ok  ' if c['ok'] else 'FAIL'} {c['criterion']}: {c['measured']}" for c in r.checks)
    lines.append("measures:")
    if r.kl_divergence:
        per = ", ".join(f"{k} {_number(round(v, 4))}" for k, v in r.kl_divergence.items())
        lines += _measure("KL divergence", f"{per}; sum {_number(round(r.kl_sum, 4))}")
    if r.information_loss is not None:
        lines += _measure("IL", f"{r.information_loss:.2f} %")
    lines += _measure("classes", str(r.classes))
    lines += _measure("discernibility", str(r.discernibility))
    lines += _measure("C_avg", f"{r.avg_class_size:.2f}" if r.avg_class_size is not None else "n/a (no class)")
    if r.arx_loss is not None:
        lines += _measure("ARX loss", f"{r.arx_loss:.4f}")
    if r.nu_entropy is not None:
        lines += _measure("entropy", f"{r.nu_entropy:.1f}")
    if r.levels:
        shown = [f"{qi}: " + ", ".join(f"level {key}: {n}" for key, n in hist.items()) for qi, hist in r.levels.items()]
        lines.append(f"  {'levels':<15} {shown[0]}")
        lines.extend(f"  {'':<15} {s}" for s in shown[1:])
        lines.append(f"  {'':<15} ({MEANINGS['levels']})")
    if 0 < len(r.buckets) <= SHOWN_BUCKETS:
        lines += _measure("buckets", ", ".join(
            f"{b['rows']}" + (f"/{b['l']:.2f}" if b["l"] is not None else "") for b in r.buckets))
    if r.risk:
        lines += headline_lines(r.risk)
    times = ", ".join(f"{k} {v:.3f} s" for k, v in r.seconds.items())
    lines.append(f"cost: {r.statements} SQL statements; {times}")
    if r.notes:
        lines.append("notes:")
        lines.extend(f"  {n}" for n in r.notes)
    return "\n".join(lines)
