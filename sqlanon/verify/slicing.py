"""Verification of a sliced release (Li et al. 2012): rows are no longer tuples of one person,
so classes of whole rows mean nothing. What must hold instead, measured on the released rows:
every column group's combinations of quasi-identifier values are shared by k rows, and inside
each bucket no link of the sensitive group to a sensitive value is likelier than 1/l."""
from __future__ import annotations

from sqlglot import exp

from sqlanon.context import RunContext
from sqlanon.criteria import Verdict
from sqlanon.policy.model import Requirement
from sqlanon.pushdown.fragment import Fragment
from sqlanon.verify.reading import Reader
from sqlanon.sql.templates import col, lit, render


def slice_verdicts(frag: Fragment, released: str, req: Requirement, slices: tuple[tuple[str, ...], ...],
                   bucket: str, ctx: RunContext, read: Reader) -> tuple[list[Verdict], dict[str, int]]:
    """The verdicts, and the buckets' statistics (buckets, dm, smallest, largest); ``bucket``
    is the released table's column that holds each row's bucket."""
    qis = {q.column for q in frag.qis}

    def released_value(c: str) -> exp.Expression:
        return read.text(c) if c in qis or c in frag.text_columns else col(c)

    verdicts = []
    for g in slices:
        members = [c for c in g if c in qis]
        if not members:
            continue
        values = [released_value(c) for c in members]
        k_min = ctx.scalar(render("verify/slice_k", qis=[exp.alias_(v, f"q_{i}") for i, v in enumerate(values)],
                                  qis_group=values, released=released))
        ok = k_min is None or int(k_min) >= req.k
        verdicts.append(Verdict(f"k-anonymity of column group ({', '.join(members)})", ok,
                                f"smallest combination {k_min} (k={req.k})"))
    if req.l is not None:
        attr = req.l.attribute
        gq = [c for g in slices if attr in g for c in g if c in qis]
        values = [released_value(c) for c in gq]
        row = ctx.query(render(
            "verify/slice_l", bucket=col(bucket), sv=released_value(attr), released=released, l=lit(req.l.value),
            gq=values, gq_alias=[exp.alias_(v, f"q_{i}") for i, v in enumerate(values)],
            gq_names=[col(f"q_{i}") for i in range(len(values))]))
        p_max, bad = (row[0] if row else (None, 0))
        shown = "n/a" if p_max is None else f"{float(p_max):.4f}"
        verdicts.append(Verdict("l-diverse slicing", not bad,
                                f"largest probability of a link to a {attr} value {shown} (1/l={1 / req.l.value:.4f})"))
    stats = ctx.query(render("verify/buckets", released=released, bucket=col(bucket)))
    names = ("buckets", "dm", "smallest", "largest")
    return verdicts, {n: int(v or 0) for n, v in zip(names, stats[0])} if stats else {}
