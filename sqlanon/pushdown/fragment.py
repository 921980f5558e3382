"""Stage 4: the pushdown fragment and the rest of the query.

The fragment is selection + projection over the protected table, run in the database as
``CREATE TEMPORARY TABLE … AS SELECT <needed columns> FROM <table> WHERE <predicates>``. The rest
of the query is the original statement with the table replaced by the released temp table and
the pushed-down predicates removed (joins with unprotected tables and the predicates that
involve them run here, on the released rows), in random order unless the query orders it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from sqlglot import exp

from sqlanon.analyze import Analysis, column_families, numeric_use
from sqlanon.analyze.linked import Link, origin
from sqlanon.backends.base import Backend
from sqlanon.backends.connect import Database
from sqlanon.hierarchy import IntervalHierarchy
from sqlanon.policy.model import QuasiIdentifier, TablePolicy
from sqlanon.sql.templates import col, table

#: the number of each released row, where a grouped join counts them (never selected: ``*`` was
#: expanded before)
ROW_NUMBER = "sqlanon_row"


@dataclass(frozen=True)
class Fragment:
    policy: TablePolicy
    #: the protected table as the database spells it
    table: str
    alias: str
    #: base-table columns the release carries, in policy order
    columns: tuple[str, ...]
    #: quasi-identifiers among them: the columns that are generalized
    qis: tuple[QuasiIdentifier, ...]
    where: exp.Expression | None
    #: text columns: compared byte for byte when classes are formed
    text_columns: frozenset[str]
    #: row-key columns carried through the pipeline so that a stored release can be kept
    #: consistent with later ones; those the policy does not release are never stored with it
    key: tuple[str, ...] = ()
    #: protected tables joined with each other: the release's rows are the join's, its columns
    #: read from the tables under their own names (analyze/linked.py)
    link: Link | None = None

    @property
    def released_columns(self) -> tuple[str, ...]:
        """The columns a stored release keeps: never a row key or person column the policy
        does not release."""
        releasable = set(self.policy.releasable)
        return tuple(c for c in self.columns if c in releasable)

    @property
    def persons(self) -> tuple[str, ...]:
        """The columns that recognise the persons behind the rows, where a person may have
        several (a join's person links, or the policy's ``person``): classes count them."""
        return _persons(self.policy, self.link)

    def with_key(self, key: tuple[str, ...]) -> "Fragment":
        return replace(self, columns=self.columns + tuple(c for c in key if c not in self.columns), key=key)

    def source(self, name: str, backend: Backend | None = None) -> exp.Expression:
        """The base column as the pushdown reads it: binary text where it is text when a
        backend is given, the stored value otherwise."""
        c = self.link.columns[name].copy() if self.link is not None else col(name, self.alias)
        return backend.binary_text(c) if backend is not None and name in self.text_columns else c

    def canonical_where(self) -> exp.Expression | None:
        """The pushed-down predicate with the protected table's columns named by the table
        itself, not the query's alias: one selection written the same way reads the same in
        every query (release log, differencing checks). Subqueries keep their own names."""
        if self.where is None:
            return None
        where = self.where.copy()
        for c in where.find_all(exp.Column):
            if c.table == self.alias and not c.find_ancestor(exp.Subquery):
                c.set("table", exp.to_identifier(self.table, quoted=True))
        return where

    def selections(self) -> list[tuple[str, exp.Expression | None, tuple[str, ...]]]:
        """Each protected table the selection reads, which of its rows, as a condition over
        that table named by itself (None: all), and its identifier columns (the persons behind
        its rows): what differencing compares across releases."""
        if self.link is None:
            return [(self.table, self.canonical_where(), self.policy.identifiers)]
        return [(t, self.link.selection(t, self.where), self.link.identifiers[t]) for t in self.link.tables]

    def origin(self, alias: str | None = None) -> exp.Select:
        """``SELECT … FROM`` the stored rows the selection reads (the table under ``alias``,
        the query's by default, or the joined tables), without a select list or WHERE."""
        return origin(self.table, alias or self.alias, self.link)

    def select(self, backend: Backend, extra: list[exp.Expression] = ()) -> exp.Select:
        items = [exp.alias_(self.source(c, backend), c, quoted=True) for c in self.columns]
        sel = self.origin().select(*items, *extra)
        if self.where is not None:
            sel = sel.where(self.where.copy())
        return sel


def fragment(analysis: Analysis, db: Database) -> Fragment:
    tp = analysis.policy
    assert tp is not None
    carried = set(analysis.needed)
    # the attributes the criteria judge travel with the release, selected or not
    req = tp.requirement
    carried.update(m.attribute for m in (req.alpha, req.l, req.t) if m is not None)
    if not carried:
        # the query reads no column of the table (COUNT(*), a join ON a constant): its rows still
        # go through a release, over the quasi-identifiers, and the query counts released rows
        carried.update(q.column for q in tp.quasi_identifiers)
        carried.update(tp.releasable[:1])
    columns = tuple(c for c in tp.releasable if c in carried)
    qis = tuple(q for q in tp.quasi_identifiers if q.column in carried)
    families = column_families(analysis, db)
    link = analysis.link
    # the persons travel with the rows, inside the database, to be counted in every class
    columns += tuple(c for c in _persons(tp, link) if c not in columns)
    text = frozenset(c for c in columns if families[c] in ("text", "other"))
    return Fragment(tp, analysis.table, analysis.alias, columns, qis, analysis.where, text, link=link)


def _persons(tp: TablePolicy, link: Link | None) -> tuple[str, ...]:
    return link.persons if link is not None else (tp.person,) if tp.person else ()


def remainder(analysis: Analysis, released: str, min_group: int, numbers: tuple[str, ...] = ()) -> exp.Select:
    """The rest of the query over the released table, rows in random order.

    In arithmetic and numeric aggregates, a quasi-identifier generalized by numeric intervals
    stands for the midpoint of its released interval (NULL for '*'); ``numbers`` are the columns
    released as numbers already (group means), which are read as they are.

    A GROUP BY over the released rows returns only groups of at least ``min_group`` (k) rows:
    a small group of a released value would single out the few rows behind it. Under a join the
    released rows are counted, not the joined ones: an outer join pads a group with NULL-extended
    rows of the other table, and any join repeats a released row once per match.

    The released table is stored in whatever order the method wrote it, which may follow the
    source (unsorted matching, Sweeney 2002): so every result is ordered here, and a LIMIT without
    ORDER BY picks a random sample, never the first rows in storage order (an answer read whole
    at once, ordered at random alone, is permuted in the client instead: finish/shuffle.py).
    Under DISTINCT the user's ORDER BY stays as it is (its ties are distinct generalized tuples,
    not rows)."""
    tree = analysis.tree.copy()
    assert isinstance(tree, exp.Select)
    tree.set("where", exp.Where(this=analysis.kept_where.copy()) if analysis.kept_where is not None else None)
    assert analysis.policy is not None
    for c in list(tree.find_all(exp.Column)):
        q = analysis.policy.qi(c.name) if c.table == analysis.alias else None
        if q is not None and isinstance(q.hierarchy, IntervalHierarchy) and c.name not in numbers \
                and numeric_use(c) is not None:
            c.replace(q.hierarchy.midpoint(c.copy()))
    src = next(t for t in tree.find_all(exp.Table) if t.alias_or_name == analysis.alias)
    src.set("this", exp.to_identifier(released, quoted=True))
    src.set("db", None)
    src.set("catalog", None)
    grouped = tree.args.get("group") is not None
    rows: exp.Expression = exp.Count(this=exp.Star())
    if grouped and analysis.joined:
        numbered = exp.select(exp.Column(this=exp.Star(), table=exp.to_identifier(released, quoted=True)),
                              exp.alias_(exp.Window(this=exp.RowNumber()), ROW_NUMBER, quoted=True)) \
            .from_(table(released))
        src.replace(numbered.subquery(exp.to_identifier(analysis.alias, quoted=True)))
        rows = exp.Count(this=exp.Distinct(expressions=[col(ROW_NUMBER, analysis.alias)]))
    if grouped:
        enough = exp.GTE(this=rows, expression=exp.Literal.number(min_group))
        having = tree.args.get("having")
        tree.set("having", exp.Having(this=exp.and_(having.this.copy(), enough) if having is not None else enough))
    order = tree.args.get("order")
    if order is None and not tree.args.get("distinct"):
        return tree.order_by(exp.Rand())
    if order is None:
        # DISTINCT allows no ORDER BY outside its select list: order the distinct rows outside,
        # under names that a derived table accepts (a join may select two columns of one name)
        limit, offset = tree.args.get("limit"), tree.args.get("offset")
        tree.set("limit", None)
        tree.set("offset", None)
        seen: dict[str, int] = {}
        for e in list(tree.expressions):
            name = e.alias_or_name
            seen[name] = seen.get(name, 0) + 1
            if seen[name] > 1:
                e.replace(exp.alias_(e.unalias(), f"{name}_{seen[name]}", quoted=True))
        outer = exp.select("*").from_(tree.subquery("q")).order_by(exp.Rand())
        outer.set("limit", limit)
        outer.set("offset", offset)
        return outer
    if not tree.args.get("distinct"):
        order.append("expressions", exp.Ordered(this=exp.Rand()))
    return tree
