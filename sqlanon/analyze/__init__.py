"""Stage 2: resolve every column, find the protected table, and check what may be rewritten.

The result says which table is protected, which of its columns the rest of the query needs
after anonymization, and which predicates can be pushed down. ``*`` expands to the columns the
policy releases, never to identifiers.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.merge_subqueries import merge_subqueries
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.optimizer.qualify import qualify

from sqlanon.analyze.allowlist import STATISTICS, check_available, check_passthrough, check_protected, construct_name
from sqlanon.analyze.joins import check_joins, conjuncts, extending_join, null_extended
from sqlanon.analyze.linked import ALIAS, Link, analyze_linked, check_linked, expand_stars
from sqlanon.analyze.names import base_tables
from sqlanon.backends.connect import Database
from sqlanon.errors import QueryRejected
from sqlanon.hierarchy import IntervalHierarchy
from sqlanon.parse import Parsed
from sqlanon.policy.model import MICROAGGREGATION, Policy, TablePolicy


@dataclass(frozen=True)
class Analysis:
    tree: exp.Query
    #: None: the query reads no protected table and passes through
    policy: TablePolicy | None = None
    alias: str = ""
    #: the protected table's name as the database spells it (the policy may differ in case)
    table: str = ""
    #: conditions over the protected table alone that run in the pushdown (analyze/joins.py)
    where: exp.Expression | None = None
    #: columns of the protected table that the rest of the query reads, in policy order
    needed: tuple[str, ...] = ()
    #: WHERE conjuncts that run after anonymization: they involve other tables, or the protected
    #: table where an outer join NULL-extends it
    kept_where: exp.Expression | None = None
    #: the protected table is joined with unprotected tables (inner, cross or outer joins)
    joined: bool = False
    #: protected tables joined with each other: the release is of the joined rows, ``table`` and
    #: ``policy`` are the merged ones, and ``where`` reads the tables under their own names
    link: Link | None = None


def _tables(tree: exp.Expression) -> list[exp.Table]:
    """Base-table references of a tree that ``base_tables`` has checked (no CTE is named like a
    table, so a reference named like a CTE is that CTE)."""
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    return [t for t in tree.find_all(exp.Table) if t.name.lower() not in ctes or t.db]


def _qualify(tree: exp.Expression, db: Database, dialect: str) -> exp.Expression:
    try:
        return qualify(tree, schema=db.sqlglot_schema(), dialect=dialect, expand_stars=True,
                       validate_qualify_columns=True, quote_identifiers=True, identify=True)
    except OptimizeError as e:
        raise QueryRejected("unresolved column", str(e)) from None


def analyze(parsed: Parsed, db: Database, policy: Policy) -> Analysis:
    # names as the database reads them (PostgreSQL folds unquoted ones to lower case), before
    # anything compares them: an alias spelled P here and p there is one name or two, as there
    tree = normalize_identifiers(parsed.tree.copy(), dialect=parsed.dialect)
    tables = base_tables(tree, frozenset(db.tables) | db.views)
    for t in tables:
        if t.args.get("catalog") or (t.db and t.db.lower() not in ("", "public", "main")):
            raise QueryRejected("table outside the connected schema", t.sql(parsed.dialect))
        if t.name.lower() not in db.tables:
            raise QueryRejected("unknown table", t.name)
    protected = [t for t in tables if policy.for_table(t.name)]
    if not protected:
        check_passthrough(tree)
        return Analysis(tree=_qualify(tree, db, parsed.dialect))

    tp = policy.for_table(protected[0].name)
    assert tp is not None
    if tree.find(exp.With) or any(isinstance(s.parent, (exp.From, exp.Join)) for s in tree.find_all(exp.Subquery)):
        tree = _merge(tree, tp, db, parsed.dialect)
        protected = [t for t in _tables(tree) if policy.for_table(t.name)]
    aggregates = _whole_table_aggregates(tree, tp)
    # names the first construct it does not understand; the aggregates were checked above
    stand_ins = [(sub, sub.replace(exp.Literal.number(0))) for sub in aggregates]
    try:
        check_protected(tree, tp.table)
    finally:
        for sub, stand_in in stand_ins:
            stand_in.replace(sub)
    inner = {id(t) for sub in aggregates for t in sub.find_all(exp.Table)}
    refs = [t for t in protected if id(t) not in inner]
    if not isinstance(tree, exp.Select):
        raise QueryRejected("several tables", f"protected table {tp.table} with other tables")
    if len(refs) > 1:
        return _linked(tree, refs, db, policy, parsed.dialect)
    check_joins(tree, tp, db.backend)
    alias = refs[0].alias_or_name
    _expand_stars(tree, tp, alias)
    tree = _qualify(tree, db, parsed.dialect)
    assert isinstance(tree, exp.Select)
    for whole in tree.find_all(exp.TableColumn):  # PostgreSQL's `SELECT p FROM patients p`
        raise QueryRejected("whole-row reference", f"{whole.sql()} stands for every column of its table",
                            fragment=whole.sql())
    _check_uncorrelated(tree, tp)
    check_available(tree, db.backend)

    # conditions over the protected table alone are pushed down (run on the stored rows) where
    # that equals filtering after the joins (analyze/joins.py); the others run after
    # anonymization, on the released rows joined to the other tables
    where = tree.args.get("where")
    conditions = conjuncts(where.this if where is not None else None)
    extended = null_extended(tree, alias)
    # a condition over a sensitive attribute runs on the released rows, unless the policy says
    # otherwise: run on the stored rows, it would decide refusals and the method's choices by
    # values the answer does not show (one person's diagnosis turning an answer into a refusal)
    sensitive = {sa.column for sa in tp.sensitive} if tp.requirement.sensitive_predicates == "released" else set()
    def pushable(c: exp.Expression) -> bool:
        return _own(c, alias) and not any(x.name in sensitive for x in c.find_all(exp.Column) if x.table == alias)

    pushed = [c for c in conditions if not extended and pushable(c)]
    kept = [c for c in conditions if not any(c is p for p in pushed)]
    for c in kept:
        if c.find(exp.Subquery):
            raise QueryRejected("subquery", f"an aggregate of protected table {tp.table} runs inside the pushdown: "
                                "it may only be compared with that table's own columns, in a WHERE over a table "
                                "no outer join NULL-extends", fragment=c.sql())
    join = extending_join(tree, alias)
    on = conjuncts(join.args.get("on")) if join is not None else []
    pushed += [c for c in on if pushable(c)]
    pushed_cols = {id(col) for c in pushed for col in c.find_all(exp.Column)}
    needed: set[str] = set()
    releasable = set(tp.releasable)
    for c in tree.find_all(exp.Column):
        if c.table != alias:
            continue  # a column of an unprotected table
        name = c.name
        if name in tp.identifiers:
            raise QueryRejected("identifier column", f"{tp.table}.{name} is never released nor usable")
        if name not in releasable:
            raise QueryRejected("column not named in the policy", f"{tp.table}.{name}")
        if id(c) not in pushed_cols:
            needed.add(name)
            if tp.qi(name) is not None and tp.requirement.method not in MICROAGGREGATION:
                _check_generalized_use(c, tp)
    if join is not None:
        rest = [c for c in on if not pushable(c)]
        join.set("on", exp.and_(*rest) if rest else exp.true())
    return Analysis(
        tree=tree, policy=tp, alias=alias,
        table=_db_name(db, tp.table),
        where=exp.and_(*pushed) if pushed else None,
        needed=tuple(c for c in tp.releasable if c in needed),
        kept_where=exp.and_(*kept) if kept else None,
        joined=bool(tree.args.get("joins")),
    )


def _linked(tree: exp.Select, refs: list[exp.Table], db: Database, policy: Policy, dialect: str) -> Analysis:
    """A join of protected tables, anonymized as one release of the joined rows (analyze/linked.py)."""
    check_linked(tree, refs, policy, db)
    expand_stars(tree, policy)
    qualified = _qualify(tree, db, dialect)
    assert isinstance(qualified, exp.Select)
    for whole in qualified.find_all(exp.TableColumn):
        raise QueryRejected("whole-row reference", f"{whole.sql()} stands for every column of its table",
                            fragment=whole.sql())
    check_available(qualified, db.backend)
    found = analyze_linked(qualified, db, policy)
    merged = found.policy
    if merged.requirement.method not in MICROAGGREGATION:
        for c in found.rest.find_all(exp.Column):
            if c.table == ALIAS and merged.qi(c.name) is not None:
                _check_generalized_use(c, merged)
    return Analysis(tree=found.rest, policy=merged, alias=ALIAS, table=merged.table, where=found.where,
                    needed=found.needed, kept_where=found.rest.args["where"].this if found.rest.args.get("where") else None,
                    joined=found.joined, link=found.link)


def column_families(analysis: Analysis, db: Database) -> dict[str, str]:
    """The family (text, numeric, …) of every column the release may carry."""
    if analysis.link is not None:
        return dict(analysis.link.families)
    assert analysis.policy is not None
    return {name: c.family for name, c in db.columns(analysis.policy.table).items()}


def _merge(tree: exp.Expression, tp: TablePolicy, db: Database, dialect: str) -> exp.Expression:
    """CTEs and derived tables that only project and filter the protected table's rows are
    merged into the query that reads them (sqlglot's ``merge_subqueries``), which leaves the one
    SELECT the rewriter understands: ``WITH x AS (SELECT age, disease FROM patients WHERE age >
    30) SELECT disease, COUNT(*) FROM x GROUP BY disease`` is that query over ``patients``. One
    that aggregates, limits or joins stays a CTE or subquery and is rejected by name. ``*`` over
    the protected table is expanded to its releasable columns first, as in the outer query."""
    for sel in list(tree.find_all(exp.Select)):
        source = sel.args["from_"].this if sel.args.get("from_") else None
        if isinstance(source, exp.Table) and source.name.lower() == tp.table.lower() and not sel.args.get("joins"):
            _expand_stars(sel, tp, source.alias_or_name)
    return merge_subqueries(_qualify(tree, db, dialect))


def _own(condition: exp.Expression, alias: str) -> bool:
    """Whether ``condition`` reads the protected table alone (a whole-table aggregate inside it
    reads its own table)."""
    return all(c.table == alias for c in condition.find_all(exp.Column) if not c.find_ancestor(exp.Subquery))


#: functions whose value over a generalized (text) column would be meaningless or fail
NUMERIC_ONLY = (exp.Sum, exp.Avg, *STATISTICS, exp.Abs, exp.Round, exp.Floor, exp.Ceil, exp.Sqrt, exp.Ln, exp.Exp,
                exp.Pow, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod, exp.Neg)


def numeric_use(c: exp.Column) -> exp.Expression | None:
    """The numeric function or operator that reads ``c`` (before the enclosing SELECT), if any."""
    node = c.parent
    while node is not None and not isinstance(node, exp.Select):
        if isinstance(node, NUMERIC_ONLY):
            return node
        node = node.parent
    return None


def _check_generalized_use(c: exp.Column, tp: TablePolicy) -> None:
    """A quasi-identifier is released as text (``[30,40)``, ``*``): arithmetic on it is refused
    here, by name, rather than failing in the database or silently comparing text — except over
    numeric intervals, which stand for their midpoints (pushdown.remainder)."""
    q = tp.qi(c.name)
    node = numeric_use(c)
    if node is not None and not (q is not None and isinstance(q.hierarchy, IntervalHierarchy)):
        name = node.sql_name() if isinstance(node, exp.Func) else node.key.upper()
        raise QueryRejected(f"{name} over generalized column",
                            f"{tp.table}.{c.name} is released as generalized text; numeric semantics are "
                            "defined for interval hierarchies (midpoints) and group means only")


#: aggregates of a whole protected table that a WHERE clause may compare with (John's thesis, Figure 31)
WHOLE_TABLE_AGGREGATES = (exp.Avg, exp.Sum, exp.Count, exp.Stddev, exp.StddevPop, exp.StddevSamp,
                          exp.Variance, exp.VariancePop)


def _whole_table_aggregates(tree: exp.Expression, tp: TablePolicy) -> list[exp.Subquery]:
    """Scalar subqueries in the WHERE clause that aggregate the whole protected table, as in
    ``WHERE age < (SELECT AVG(age) FROM adult)`` (John's thesis, Figures 21, 31).

    Such an aggregate is no release of rows: the pushdown computes it on the stored values
    inside the database, and only the rows it selects are anonymized. It must cover the whole
    table — a WHERE, GROUP BY or LIMIT could narrow it to a few people — and MIN and MAX are
    refused: each is one person's value (Figures 32, 33). Any other subquery is left for
    the allowlist to reject."""
    where = tree.args.get("where") if isinstance(tree, exp.Select) else None
    out: list[exp.Subquery] = []
    for sub in (where.find_all(exp.Subquery) if where is not None else ()):
        sel = sub.this
        tables = list(sel.find_all(exp.Table)) if isinstance(sel, exp.Select) else []
        if len(tables) != 1 or tables[0].name.lower() != tp.table.lower():
            continue
        narrowing = [k for k in ("where", "group", "having", "order", "limit", "offset", "distinct", "joins", "with_")
                     if sel.args.get(k)]
        if narrowing or len(sel.expressions) != 1:
            raise QueryRejected("subquery", f"a subquery over protected table {tp.table} may only compute one "
                                f"aggregate of the whole table ({', '.join(narrowing) or 'several values'} given)",
                                fragment=sel.sql())
        agg = sel.expressions[0].unalias()
        if isinstance(agg, (exp.Min, exp.Max)):
            raise QueryRejected(f"{agg.key.upper()} in a subquery", f"over protected table {tp.table}: it is one "
                                "person's value", fragment=sel.sql())
        if not isinstance(agg, WHOLE_TABLE_AGGREGATES) or not isinstance(agg.this, (exp.Column, exp.Star)):
            raise QueryRejected(f"{construct_name(agg)} in a subquery", f"over protected table {tp.table}: only "
                                "AVG, SUM, COUNT, STDDEV and VARIANCE of one column", fragment=sel.sql())
        out.append(sub)
    return out


def _check_uncorrelated(tree: exp.Select, tp: TablePolicy) -> None:
    """A whole-table aggregate reads its own table only: a reference to the outer query's row
    would make it a per-row value."""
    for sub in tree.args["where"].find_all(exp.Subquery) if tree.args.get("where") else ():
        own = {t.alias_or_name for t in sub.find_all(exp.Table)}
        for c in sub.find_all(exp.Column):
            if c.table not in own:
                raise QueryRejected("correlated subquery", f"over protected table {tp.table}", fragment=sub.sql())


def _db_name(db: Database, name: str) -> str:
    return db.spelling.get(name.lower(), name)


def _expand_stars(tree: exp.Select, tp: TablePolicy, alias: str) -> None:
    """``*`` and ``alias.*`` become the releasable columns, so identifiers never enter the tree;
    with joins, ``*`` keeps the other tables' columns (``other.*``, expanded by qualify)."""
    others = [t.alias_or_name for t in tree.find_all(exp.Table)
              if t.alias_or_name != alias and not t.find_ancestor(exp.Subquery)]
    out: list[exp.Expression] = []
    for e in tree.expressions:
        own = [exp.column(c, table=alias, quoted=True) for c in tp.releasable]
        if isinstance(e, exp.Star):
            out.extend(own + [exp.Column(this=exp.Star(), table=exp.to_identifier(o)) for o in others])
        elif isinstance(e, exp.Column) and isinstance(e.this, exp.Star) and e.table in ("", alias):
            out.extend(own)
        else:
            out.append(e)
    tree.set("expressions", out)
