"""Joins of protected tables with each other: one release of the joined rows (John's thesis, §5).

``SELECT p.age, v.diagnosis FROM patients p JOIN visits v ON v.patient_id = p.id`` is
anonymized as one table whose rows are the join's: the join and every condition run in the
pushdown, inside the database, and the method sees the quasi-identifiers and sensitive
attributes of both tables side by side (renamed ``<table>__<column>`` where two tables share a
name). The rest of the query reads that release as if it were one table.

What makes such a release sound is that its rows are not persons. A patient with twelve visits
is twelve joined rows with the same patient attributes; classes of k rows could hold one
person. So the tables must be linked by *person links* — equalities between identifier columns
of two tables (``v.patient_id = p.id``, both identifiers in the policy) — and every class must
hold k distinct persons of each link, counted on the link's values (``Persons``). The flow asks
the method for classes of (k−1)·m + 1 rows, m the most rows of one person in the selection, which
makes k persons certain, and the verification counts them independently. Identifier values never
leave the database: they are carried in the temp tables to count persons, and never selected.

Accepted: inner and cross joins of protected tables written one after the other, linked by
person links, every other condition over their released columns; unprotected tables joined in
too, which join the release after anonymization (conditions that involve them run there, on the
released values). Rejected by name: outer joins in such a query (a NULL-extended row of one
table is no person of the other), self-joins, subqueries.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from sqlglot import exp

from sqlanon.analyze.joins import check_joins, conjuncts
from sqlanon.backends.connect import Database
from sqlanon.errors import QueryRejected
from sqlanon.policy.model import Policy, Requirement, TablePolicy

#: the release's name in the rest of the query
ALIAS = "sqlanon_joined"
#: the release's columns that recognise persons (one per person link)
PERSON = "sqlanon_person_{}"


@dataclass(frozen=True)
class Link:
    """The joined selection: protected tables, each under its own name, and their person links."""

    tables: tuple[str, ...]
    links: tuple[exp.EQ, ...]
    #: every column of the joined release: its name → the base column it is read from
    columns: dict[str, exp.Column]
    #: the release's column families (text, numeric, …), as the tables store them
    families: dict[str, str]
    #: the columns that recognise persons, one per set of linked identifier columns
    persons: tuple[str, ...]
    #: per table, the columns that recognise its rows (its primary key, else its identifiers):
    #: what the differencing check compares selections of that table by
    keys: dict[str, tuple[str, ...]]
    #: per table, its identifier columns: the persons behind its rows
    identifiers: dict[str, tuple[str, ...]]

    def selection(self, name: str, where: exp.Expression | None) -> exp.Expression:
        """The rows of table ``name`` that the joined selection reads, as a condition over
        that table alone (named by itself): ``(key) IN (SELECT key FROM <join> WHERE …)``."""
        keys = [exp.column(k, table=name, quoted=True) for k in self.keys[name]]
        inner = self.origin().select(*[k.copy() for k in keys])
        if where is not None:
            inner = inner.where(where.copy())
        return exp.In(this=exp.Tuple(expressions=keys) if len(keys) > 1 else keys[0], query=inner.subquery())

    def origin(self) -> exp.Select:
        """``SELECT … FROM t1 JOIN t2 ON <links> …`` without a select list."""
        first, *rest = self.tables
        sel = exp.select().from_(_table(first))
        for name in rest:
            on = [e.copy() for e in self.links if name in {c.table for c in e.find_all(exp.Column)}
                  and all(c.table in self.tables[:self.tables.index(name) + 1] for c in e.find_all(exp.Column))]
            sel = sel.join(_table(name), on=exp.and_(*on) if on else exp.true(), join_type="inner")
        return sel


def _table(name: str, alias: str | None = None) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name, quoted=True),
                     alias=exp.TableAlias(this=exp.to_identifier(alias or name, quoted=True)))


def origin(table: str, alias: str, link: Link | None) -> exp.Select:
    """``SELECT … FROM`` the stored rows a selection reads: one table under the query's alias,
    or the linked tables."""
    return link.origin() if link is not None else exp.select().from_(_table(table, alias))


def check_linked(tree: exp.Select, refs: list[exp.Table], policy: Policy, db: Database) -> None:
    """The shapes a joined release cannot have, named before the query is qualified."""
    names = ", ".join(t.name for t in refs)
    sub = tree.find(exp.Subquery)
    if sub is not None:
        raise QueryRejected("subquery", f"in a join of protected tables {names}", fragment=sub.sql())
    seen: set[str] = set()
    for t in refs:
        if t.name.lower() in seen:
            raise QueryRejected("self-join of a protected table", f"{t.name} joined with itself", fragment=tree.sql())
        seen.add(t.name.lower())
    tp = policy.for_table(refs[0].name)
    assert tp is not None
    check_joins(tree, tp, db.backend)
    for j in tree.args.get("joins") or []:
        if j.side:
            raise QueryRejected(f"{j.side.upper()} join of protected tables", f"{names}: a NULL-extended row of one "
                                "table is no person of the other; a query that joins protected tables joins "
                                "every table with inner joins", fragment=j.sql())


def expand_stars(tree: exp.Select, policy: Policy) -> None:
    """``*`` and ``alias.*`` become the releasable columns of each table, in the order of the
    FROM clause, so identifiers never enter the tree."""
    tables = [tree.args["from_"].this] + [j.this for j in tree.args.get("joins") or []]

    def own(t: exp.Table) -> list[exp.Expression]:
        tp = policy.for_table(t.name)
        if tp is None:  # an unprotected table: all its columns, expanded by qualify
            return [exp.Column(this=exp.Star(), table=exp.to_identifier(t.alias_or_name))]
        return [exp.column(c, table=t.alias_or_name, quoted=True) for c in tp.releasable]

    out: list[exp.Expression] = []
    for e in tree.expressions:
        if isinstance(e, exp.Star):
            out.extend(c for t in tables for c in own(t))
        elif isinstance(e, exp.Column) and isinstance(e.this, exp.Star):
            out.extend(c for t in tables if t.alias_or_name == e.table for c in own(t))
        else:
            out.append(e)
    tree.set("expressions", out)


@dataclass(frozen=True)
class Linked:
    """What ``analyze_linked`` finds."""

    #: the rest of the query: the joined release is one table, ``ALIAS``, joined with the
    #: unprotected tables by the conditions that involve them (a WHERE over released values)
    rest: exp.Select
    policy: TablePolicy
    link: Link
    #: the conditions over protected tables alone, which the pushdown runs on the stored rows
    where: exp.Expression | None
    #: the release's columns the rest reads, in policy order
    needed: tuple[str, ...]
    #: unprotected tables are joined after anonymization
    joined: bool


def analyze_linked(tree: exp.Select, db: Database, policy: Policy) -> Linked:
    """``tree`` is qualified (every column names its table's alias) and joins every table with
    inner or cross joins (``check_linked``)."""
    refs = [tree.args["from_"].this] + [j.this for j in tree.args.get("joins") or []]
    protected = [t for t in refs if policy.for_table(t.name)]
    spelled = {t.alias_or_name: db.spelling.get(t.name.lower(), t.name) for t in protected}
    policies = {spelled[t.alias_or_name]: policy.for_table(t.name) for t in protected}
    others = [t for t in refs if not policy.for_table(t.name)]
    clash = [t.alias_or_name for t in others if t.alias_or_name in policies]
    if clash:
        raise QueryRejected("alias of a protected table's name", f"{clash[0]} names another table here")
    label = " and ".join(sorted(policies))
    # the tables under their own names, whatever the query called them: one selection written
    # the same way reads the same in every query (release log, differencing)
    for c in tree.find_all(exp.Column):
        if c.table in spelled:
            c.set("table", exp.to_identifier(spelled[c.table], quoted=True))
    conditions = conjuncts(tree.args["where"].this if tree.args.get("where") else None)
    for j in tree.args.get("joins") or []:
        conditions += conjuncts(j.args.get("on"))
    conditions = [c for c in conditions if not isinstance(c, exp.Boolean)]

    def kind(c: exp.Column) -> str:
        tp = policies.get(c.table)
        if tp is None:
            return "other"
        if c.name in tp.identifiers:
            return "identifier"
        if c.name not in tp.releasable:
            raise QueryRejected("column not named in the policy", f"{c.table}.{c.name}")
        return "released"

    def own(condition: exp.Expression) -> bool:
        return all(kind(c) != "other" for c in condition.find_all(exp.Column))

    links = [c for c in conditions if isinstance(c, exp.EQ) and isinstance(c.this, exp.Column)
             and isinstance(c.expression, exp.Column) and c.this.table != c.expression.table
             and kind(c.this) == kind(c.expression) == "identifier"]
    pushed = [c for c in conditions if own(c) and not any(c is x for x in links)]
    # the links in one order, each written one way: one join reads the same in every query
    links = sorted((exp.EQ(this=a, expression=b) for a, b in (
        sorted((e.this.copy(), e.expression.copy()), key=lambda c: (c.table, c.name)) for e in links)),
        key=lambda e: e.sql())
    kept = [c for c in conditions if not own(c)]
    for f in pushed + kept:
        for c in f.find_all(exp.Column):
            if kind(c) == "identifier":
                raise QueryRejected("identifier column", f"{c.table}.{c.name} may only link persons of two "
                                    "protected tables (an equality with an identifier of the other table)",
                                    fragment=f.sql())
    tables = tuple(sorted(policies))
    declared = [(t, tp.person) for t, tp in policies.items() if tp is not None and tp.person]
    persons = _persons(tables, links, declared, label)

    # every releasable column of every table, under its own name unless two tables share it
    owners: dict[str, list[str]] = {}
    for name, tp in policies.items():
        assert tp is not None
        for c in tp.releasable:
            owners.setdefault(c.lower(), []).append(name)

    def merged(t: str, c: str) -> str:
        return c if len(owners[c.lower()]) == 1 else f"{t}__{c}"

    columns = {merged(t, c): exp.column(c, table=t, quoted=True) for t in tables for c in policies[t].releasable}
    person_names = tuple(PERSON.format(i) for i in range(len(persons)))
    columns.update({n: p.copy() for n, p in zip(person_names, persons)})
    if len({n.lower() for n in columns}) < len(columns):
        raise QueryRejected("join of protected tables", f"{label}: two released columns would share a name")
    families = {n: db.columns(c.table)[c.name].family for n, c in columns.items()}
    merged_policy = _merged_policy(_name(tables, links), tables, policies, merged, label)

    # the rest: the release, then the other tables, every condition that involves them in WHERE
    # (inner joins only: where a condition runs does not change the rows)
    out = tree.copy()
    out.set("from_", exp.From(this=exp.Table(this=exp.to_identifier(merged_policy.table, quoted=True),
                                             alias=exp.TableAlias(this=exp.to_identifier(ALIAS, quoted=True)))))
    out.set("joins", [exp.Join(this=t.copy(), kind="CROSS") for t in others] or None)
    out.set("where", exp.Where(this=exp.and_(*[c.copy() for c in kept])) if kept else None)
    for c in list(out.find_all(exp.Column)):
        if c.table in policies:
            if kind(c) == "identifier":
                raise QueryRejected("identifier column", f"{c.table}.{c.name} is never released nor usable")
            c.replace(exp.column(merged(c.table, c.name), table=ALIAS, quoted=True))
    needed = {c.name for c in out.find_all(exp.Column) if c.table == ALIAS}
    keys = {t: db.primary_key(t) or policies[t].identifiers for t in tables}
    return Linked(rest=out, policy=merged_policy, link=Link(tables, tuple(links), columns, families, person_names, keys,
                                                          {t: policies[t].identifiers for t in tables}),
                  where=exp.and_(*[f.copy() for f in pushed]) if pushed else None,
                  needed=tuple(c for c in merged_policy.releasable if c in needed), joined=bool(others))


def _persons(tables: tuple[str, ...], links: list[exp.EQ], declared: list[tuple[str, str]],
             label: str) -> list[exp.Column]:
    """One column per set of identifier columns the links make equal, and one for each table's
    declared ``person`` no link reaches (visits linked to labs by visit id are still counted by
    patient); every table must be reached, or the join pairs rows of unrelated persons."""
    parent: dict[tuple[str, str], tuple[str, str]] = {x: x for x in declared}

    def find(x: tuple[str, str]) -> tuple[str, str]:
        parent.setdefault(x, x)
        while parent[x] != x:
            x = parent[x]
        return x

    joined = {t: t for t in tables}

    def root(t: str) -> str:
        while joined[t] != t:
            t = joined[t]
        return t

    for e in links:
        a, b = (e.this.table, e.this.name), (e.expression.table, e.expression.name)
        parent[find(a)] = find(b)
        joined[root(a[0])] = root(b[0])
    if len({root(t) for t in tables}) > 1:
        raise QueryRejected("join of protected tables without a person link", f"{label}: join them by an equality "
                            "of identifier columns, one of each table (v.patient_id = p.id, both listed as "
                            "identifiers in the policy), so that every joined row is one person's")
    groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for x in list(parent):
        groups.setdefault(find(x), []).append(x)
    return [exp.column(c, table=t, quoted=True) for t, c in sorted(min(g) for g in groups.values())]


def _name(tables: tuple[str, ...], links: list[exp.EQ]) -> str:
    """The joined release's name in reports and the release log, the same however the query
    writes the join: ``patients JOIN visits ON patients.id = visits.patient_id``. Selections
    are compared for differencing among releases of one name (catalog/differencing.py)."""
    sides = [sorted(f"{c.table}.{c.name}" for c in (e.this, e.expression)) for e in links]
    name = f"{' JOIN '.join(tables)} ON {' AND '.join(sorted(f'{a} = {b}' for a, b in sides))}"
    return name if len(name) <= 200 else f"{name[:180]} #{hashlib.sha256(name.encode()).hexdigest()[:12]}"


def _merged_policy(name: str, tables: tuple[str, ...], policies: dict[str, TablePolicy | None], merged, label: str) -> TablePolicy:
    """The joined release's policy: every table's quasi-identifiers and sensitive attributes
    under their release names, and the stricter of every setting."""
    tps = [policies[t] for t in tables]
    assert all(tp is not None for tp in tps)
    reqs = [tp.requirement for tp in tps]  # type: ignore[union-attr]
    models: dict[str, object] = {}
    for t, tp in zip(tables, tps):
        assert tp is not None
        for model in ("alpha", "l", "t"):
            spec = getattr(tp.requirement, model)
            if spec is None:
                continue
            if model in models:
                raise QueryRejected("join of protected tables", f"{label} both ask for {model}: a joined release "
                                    f"judges one attribute per model; query the tables one at a time")
            models[model] = replace(spec, attribute=merged(t, spec.attribute))
    # a method both tables name, unless it is slicing, which cannot keep a person's rows whole
    methods = {r.method for r in reqs} - {"slicing"}
    method = methods.pop() if len(methods) == 1 and len({r.method for r in reqs}) == 1 else "auto"
    req = Requirement(
        k=max(r.k for r in reqs), max_suppression=min(r.max_suppression for r in reqs), method=method,
        few_rows=min(r.few_rows for r in reqs), min_rows=max(r.min_rows for r in reqs),
        difference_window=max(r.difference_window for r in reqs), across_releases="off",
        consistent=any(r.consistent for r in reqs),
        metric=reqs[0].metric if len({r.metric for r in reqs}) == 1 else "loss",
        **models)  # type: ignore[arg-type]
    return TablePolicy(
        table=name, identifiers=(),
        quasi_identifiers=tuple(replace(q, column=merged(t, q.column)) for t, tp in zip(tables, tps)
                                for q in tp.quasi_identifiers),  # type: ignore[union-attr]
        sensitive=tuple(replace(s, column=merged(t, s.column)) for t, tp in zip(tables, tps)
                        for s in tp.sensitive),  # type: ignore[union-attr]
        insensitive=tuple(merged(t, c) for t, tp in zip(tables, tps) for c in tp.insensitive),  # type: ignore[union-attr]
        requirement=req)
