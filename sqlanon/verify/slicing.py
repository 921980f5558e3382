"""Verification of a sliced release (Li et al. 2012): rows are no longer tuples of one person,
so classes of whole rows mean nothing. What must hold instead, measured on the released rows:
every column group's combinations of quasi-identifier values are shared by k rows, and inside
each bucket no link of the sensitive group to a sensitive value is likelier than 1/l."""
from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sqlanon.context import RunContext
from sqlanon.criteria import Verdict
from sqlanon.policy.model import Requirement
from sqlanon.pushdown.fragment import Fragment
from sqlanon.sql.templates import col, lit, render, table
from sqlanon.verify.reading import Reader

#: a report lists every bucket up to this many, and above only their range
LISTED_BUCKETS = 1000


@dataclass(frozen=True)
class Buckets:
    """The buckets of a sliced release as the report states them."""

    count: int
    #: Σ size²: every row is indistinguishable within its bucket
    dm: int
    smallest: int
    largest: int
    #: the lowest and highest l of a bucket, for ``attribute`` (None: no sensitive column)
    l_min: float | None
    l_max: float | None
    attribute: str | None
    #: every bucket (bucket, rows, l), when there are at most LISTED_BUCKETS
    listed: list[dict]

    def describe(self) -> str:
        out = f"buckets: {self.count}, of {self.smallest} to {self.largest} rows"
        if self.l_min is not None and self.l_max is not None:
            out += f"; l of a bucket ({self.attribute}) from {self.l_min:.2f} to {self.l_max:.2f}"
        if self.count > LISTED_BUCKETS:
            out += f" (over {LISTED_BUCKETS}: not listed one by one)"
        return out


def slice_verdicts(frag: Fragment, released: str, cells: str, req: Requirement, slices: tuple[tuple[str, ...], ...],
                   bucket: str, ctx: RunContext, read: Reader) -> tuple[list[Verdict], Buckets]:
    """The verdicts, and the buckets; ``bucket`` is the released table's column that holds
    each row's bucket, ``cells`` the released rows' frequency table over every quasi-identifier
    (``_q<i>`` for ``frag.qis[i]``, read byte for byte; rows in ``cnt``): a column group's
    combinations are counted on it, not on the rows again."""
    qis = {q.column for q in frag.qis}
    cell = {q.column: col(f"_q{i}") for i, q in enumerate(frag.qis)}

    def released_value(c: str) -> exp.Expression:
        return read.text(c) if c in qis or c in frag.text_columns else col(c)

    verdicts = []
    for g in slices:
        members = [c for c in g if c in qis]
        if not members:
            continue
        k_min = ctx.scalar(render("verify/slice_k", qis=[cell[c] for c in members], cells=cells))
        ok = k_min is None or int(k_min) >= req.k
        verdicts.append(Verdict(f"k-anonymity of column group ({', '.join(members)})", ok,
                                f"smallest combination {k_min} (k={req.k})"))
    # Every bucket's rows and l, for the l attribute, else the first sensitive column released
    attr = req.l.attribute if req.l is not None else next(
        (s.column for s in frag.policy.sensitive if s.column in frag.columns), None)
    gq = [c for g in slices if attr in g for c in g if c in qis] if attr else []
    values = [released_value(c) for c in gq]
    per = ctx.create_temp("sbuckets", render(
        "verify/bucket_stats", bucket=col(bucket), sv=released_value(attr) if attr else lit(0),
        sv_group=[released_value(attr)] if attr else [], released=released,
        l=lit(req.l.value if req.l is not None else 0), gq=values,
        gq_alias=[exp.alias_(v, f"q_{i}") for i, v in enumerate(values)],
        gq_names=[col(f"q_{i}") for i in range(len(values))]))
    row = ctx.query(render("verify/buckets", stats=per))
    names = ("buckets", "dm", "smallest", "largest", "l_min", "l_max", "bad")
    stats = dict(zip(names, row[0])) if row else {}
    if req.l is not None:
        l_min = stats.get("l_min")
        shown = "n/a" if l_min is None else f"{1 / float(l_min):.4f}"
        verdicts.append(Verdict("l-diverse slicing", not stats.get("bad"),
                                f"largest probability of a link to a {attr} value {shown} (1/l={1 / req.l.value:.4f})"))
    listed = []
    if int(stats.get("buckets") or 0) <= LISTED_BUCKETS:
        listed = [{"bucket": int(b), "rows": int(n), "l": None if attr is None or l is None else round(float(l), 4)}
                  for b, n, l in sorted(ctx.query(exp.select(col("b"), col("n"), col("l")).from_(table(per))))]
    ctx.drop(per)

    def l_of(name: str) -> float | None:
        return None if attr is None or stats.get(name) is None else float(stats[name])

    count, dm, smallest, largest = (int(stats.get(n) or 0) for n in ("buckets", "dm", "smallest", "largest"))
    return verdicts, Buckets(count, dm, smallest, largest, l_of("l_min"), l_of("l_max"), attr, listed)
