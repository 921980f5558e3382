"""ARX's measures of a release: its loss ("granularity") and non-uniform entropy.

Measured from the released rows and the selection alone, whatever method made the release, with
the label tables of the KL divergence (metrics/kl_divergence.py: every original value of the
selection with every label it takes at some level):

- **loss** (ARX's MetricMDNMLoss with its defaults: generalization/suppression factor 0.5,
  weights 1, geometric mean; after Iyengar 2002): per quasi-identifier, Σ over released rows of
  their label's domain share plus 1 per withheld row, normalized between every row at level 0
  (T / domain size) and every row at the root (T); the release's loss is ∏(1 + loss_i)^(1/m) − 1.
  A label's domain share is, for a taxonomy, ARX's: the share of the hierarchy file's leaves
  below it; for the other hierarchies the share of the selection's distinct values it covers.
- **non-uniform entropy** (ARX's MetricMDNUEntropy, after de Waal & Willenborg 1999, Prasser
  et al. 2014): Σ over quasi-identifiers and rows of log2(rows of the selection under the
  row's released label / rows with the row's original value); a withheld row counts as released
  at the root (log2 T / rows with its value). ARX charges its outliers a slightly different
  term; this is the textbook definition.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from sqlglot import exp

from sqlanon.backends.base import Backend
from sqlanon.context import RunContext, Written
from sqlanon.hierarchy import TaxonomyHierarchy
from sqlanon.metrics.kl_divergence import Selection, _labels, distributions_of, kl_union, released_of, with_shared
from sqlanon.policy.model import QuasiIdentifier
from sqlanon.sql.templates import Owned, col, lit, render


@dataclass(frozen=True)
class ArxMeasures:
    loss: float
    #: per quasi-identifier
    loss_parts: dict[str, float]
    entropy: float


def measures_statement(qis: list[QuasiIdentifier], selection: Selection, released_cells: str,
                       released_names: list[str], rows_in: int, ctx: RunContext) -> Written | None:
    """One statement, one row per quasi-identifier: its KL divergence's (qi, d, h, lost;
    kl_divergence.kl_union), then ARX's (shares, logs, domain, own; ``arx_union``), written at
    once (RunContext.write_ahead) while the database still counts the release. Both read the
    same value and label distributions: where the database has GROUPING SETS, one scan of the
    selection's and one of the release's frequency table serve both measures (apart, each
    statement made its own: 2 × 25 ms at 1 M rows)."""
    if not qis:
        return None
    be = ctx.backend
    shared, distributions = distributions_of(selection, be)
    released_shared, released = released_of(released_cells, released_names, be)
    kl, arx = (exp.Subquery(this=q, alias=exp.TableAlias(this=exp.to_identifier(alias)))
               for q, alias in ((kl_union(qis, distributions, released, rows_in, be), "k"),
                                (arx_union(qis, distributions, released, be), "a")))
    joined = exp.select(col("qi", "k"), col("d", "k"), col("h", "k"), col("lost", "k"), col("shares", "a"),
                        col("logs", "a"), exp.alias_(col("d", "a"), "domain"), col("own", "a")) \
        .from_(kl, copy=False).join(arx, on=col("qi", "a").eq(col("qi", "k")), copy=False)
    return ctx.write_ahead(with_shared(joined, shared, released_shared))


def arx_union(qis: list[QuasiIdentifier], distributions: list[exp.Select], released: list[exp.Select],
              be: Backend) -> exp.Expression:
    """One row per quasi-identifier: the released rows' Σ domain share, Σ ln of the selection
    rows under their label, and of the selection per quasi-identifier the domain size (distinct
    values) and Σ n·ln n over its values (verify/arx.sql)."""
    parts = []
    for i, (q, dist, labels) in enumerate(zip(qis, distributions, released)):
        h = q.hierarchy
        share: exp.Expression = exp.Div(this=exp.cast(col("vals", "l"), "DOUBLE"), expression=col("d", "u"))
        if isinstance(h, TaxonomyHierarchy):
            leaves = _leaves(h)
            share = exp.Case(ifs=[exp.If(this=exp.EQ(this=col("lbl", "l"), expression=be.binary_text(
                exp.Literal.string(label))), true=exp.Literal.number(repr(n / len(h.rows))))
                for label, n in leaves.items()], default=share)
        parts.append(render("verify/arx", qi=lit(i), labels=Owned(_labels(q, dist.copy(), be)),
                            dist=dist.subquery(), share=share, released=Owned(labels.copy().subquery(copy=False))))
    return exp.union(*parts, distinct=False, copy=False) if len(parts) > 1 else parts[0]


def _leaves(h: TaxonomyHierarchy) -> Counter:
    """Each label's leaves in the taxonomy file (a label found at several levels: the most)."""
    out: Counter = Counter()
    for lv in range(1, h.height + 1):
        for label, n in Counter(r[lv] for r in h.rows).items():
            out[label] = max(out[label], n)
    for r in h.rows:
        out[r[0]] = max(out[r[0]], 1)
    return out


def arx_measures(rows: list[tuple] | None, qis: list[QuasiIdentifier], rows_in: int,
                 rows_withheld: int) -> ArxMeasures | None:
    """ARX's loss and the non-uniform entropy from ``arx_union``'s rows (qi, shares, logs,
    domain, own); None without quasi-identifiers or rows."""
    if rows is None or rows_in <= 0:
        return None
    t = float(rows_in)
    parts: dict[str, float] = {}
    entropy = 0.0
    for i, shares, logs, domain, own in rows:
        q = qis[int(i)]
        size = float(len(q.hierarchy.rows)) if isinstance(q.hierarchy, TaxonomyHierarchy) else float(domain or 1)
        low = t / size
        value = float(shares or 0) + rows_withheld
        parts[q.column] = max((value - low) / (t - low), 0.0) if t > low else 0.0
        entropy += (float(logs or 0) + rows_withheld * math.log(t) - float(own or 0)) / math.log(2)
    loss = math.prod(1.0 + p for p in parts.values()) ** (1.0 / len(parts)) - 1.0 if parts else 0.0
    return ArxMeasures(loss, parts, max(entropy, 0.0))
