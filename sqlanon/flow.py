"""The flow of one query: parse → analyze → plan → pushdown → anonymize → verify → finish;
and ``check``, which only measures a stored table.

Each stage is a function of its own module; this module only calls them in order inside one
run context, so that every temp table is dropped whatever happens. ``live=False`` runs the same
code without sending anything: the statements of the first search round, as ``explain`` shows.
"""
from __future__ import annotations

import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

import sqlglot
from sqlglot import exp

from sqlanon import collector
from sqlanon.analyze import Analysis, analyze
from sqlanon.anonymize import REGISTRY, Method
from sqlanon.anonymize.base import reads_rows_once
from sqlanon.backends.connect import Database
from sqlanon.backends.faults import fault
from sqlanon.context import RunContext
from sqlanon.dp import Spend, respond
from sqlanon.errors import (
    Interrupted,
    PolicyError,
    QueryRejected,
    ReleaseRefused,
    SelectionChanged,
    SqlanonError,
    SuppressionExceeded,
)
from sqlanon.finish.report import Report
from sqlanon.finish.shuffle import prepare, shuffled, unordered
from sqlanon.finish.store import Store, Target
from sqlanon.finish.stream import Row, Rows, Streamed
from sqlanon.parse import Parsed, parse
from sqlanon.plan import Plan, count_statement, plan
from sqlanon.policy.model import Overrides, Policy, Requirement
from sqlanon.pushdown.fragment import Fragment, fragment, remainder
from sqlanon.pushdown.persons import per_person
from sqlanon.risk.headline import headline
from sqlanon.verify import Measurement, enforce, measure_table, verify
from sqlanon.verify.noise import SCALE as NOISE_SCALE
from sqlanon.verify.noise import noisy

#: a check of the selection before it is anonymized (see ``run``); what it returns is called
#: once the release has passed verification (the catalog then remembers the selection)
Guard = Callable[[Fragment, Requirement, RunContext], Callable[[RunContext], None] | None]


@dataclass
class Result:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    report: Report


def _requirement(analysis: Analysis, overrides: Overrides) -> Requirement:
    assert analysis.policy is not None
    return analysis.policy.requirement.tightened(overrides, analysis.policy.sensitive)


@contextmanager
def _understood(db: Database) -> Iterator[None]:
    """An exception other than sqlanon's own while a query is read (a construct the analysis did
    not foresee) becomes a rejection that names it: never a traceback, never a hang of a
    front-end waiting for an answer, never a pass-through. A database's error (a lost
    connection, a lock) is told as what it is (sqlanon.backends.faults)."""
    try:
        yield
    except SqlanonError:
        raise
    except RecursionError:
        raise QueryRejected("statement too complex", "nesting too deep") from None
    except Exception as e:  # noqa: BLE001 - any other failure of the analysis is a rejection
        mapped = fault(e, db.backend)
        if mapped is not None:
            raise mapped from e
        raise QueryRejected("unsupported query", f"sqlanon failed on it ({type(e).__name__})") from e


def _analyze(db: Database, policy: Policy, sql: str) -> tuple[Parsed, Analysis]:
    with _understood(db):
        parsed = parse(sql, db.backend.dialect)
        return parsed, analyze(parsed, db, policy)


def run(db: Database, policy: Policy, sql: str, *, overrides: Overrides = Overrides(),
        live: bool = True, timed: bool = False, created: list[str] | None = None,
        progress: Callable[[str], None] | None = None, into: Target | None = None,
        guard: Guard | None = None, spend: Spend | None = None) -> tuple[Result, RunContext, Plan | None]:
    """``guard`` runs after the pushdown and before any anonymization: it may refuse the
    selection with what it knows of earlier releases (the catalog's differencing check).
    ``spend`` reserves a differentially private answer's ε in the catalog's ledger (sqlanon.dp).
    ``timed``: every statement waits for its answer and is timed (RunContext.timed)."""
    with _understood(db), collector.paused():
        result, ctx, chosen = _run(db, policy, sql, overrides=overrides, live=live, timed=timed, created=created,
                                   progress=progress, into=into, guard=guard, spend=spend)
    assert isinstance(result, Result)
    return result, ctx, chosen


def stream(db: Database, policy: Policy, sql: str, size: int, *, overrides: Overrides = Overrides(),
           created: list[str] | None = None, progress: Callable[[str], None] | None = None,
           guard: Guard | None = None, spend: Spend | None = None,
           answered: Callable[[Report], None] | None = None) -> Streamed:
    """``run``, the answer read from the database ``size`` rows at a time as its reader asks
    (finish/stream.py): the same stages, the release verified before the answer's statement
    runs, after ``answered`` was given the report; the run ends when the rows are read or closed."""
    with _understood(db), collector.paused():
        result, _, _ = _run(db, policy, sql, overrides=overrides, live=True, timed=False, created=created,
                            progress=progress, into=None, guard=guard, spend=spend,
                            stream=Streaming(size, answered))
    assert isinstance(result, Streamed)
    return result


def _name(method: Method) -> str:
    """A method as a report names it."""
    return {"alpha_k": "(α,k)", "sabre": "SABRE", "mondrian": "Mondrian"}.get(method.name, method.name)


def _pushdown(method: Method, frag: Fragment, ctx: RunContext) -> list[str]:
    """The columns ``method`` adds to the pushed-down rows, as written."""
    return [e.sql() for e in method.pushdown_columns(frag, ctx)]


def _selection(method: Method, frag: Fragment, ctx: RunContext, must_copy: bool) -> tuple[str, bool]:
    """The pushed-down rows, and whether they are a view: where the method reads them in one
    statement alone and nothing else reads them (a stored release pins them, linked persons are
    counted on them, the catalog's differencing check judges them before the method reads
    them: ``must_copy``, so that what was judged is what is released), a view of the selection
    (Backend.selection_view) spares writing a copy to be read once; verify then counts the
    selection through it. Else a copy."""
    select = frag.select(ctx.backend, method.pushdown_columns(frag, ctx))
    if not must_copy and not frag.persons and reads_rows_once(method, frag, ctx):
        view = ctx.selection_view("src", select)
        if view is not None:
            return view, True
    return ctx.create_temp("src", select), False


def _run(db: Database, policy: Policy, sql: str, *, overrides: Overrides, live: bool, timed: bool,
         created: list[str] | None, progress: Callable[[str], None] | None, into: Target | None,
         guard: Guard | None, spend: Spend | None = None,
         stream: Streaming | None = None) -> tuple[Result | Streamed, RunContext, Plan | None]:
    t0 = time.perf_counter()
    parsed, analysis = _analyze(db, policy, sql)
    front = time.perf_counter() - t0
    # a pass-through runs as the login, which cannot read a protected table (sqlanon.access)
    # a streamed answer takes the run over (_handed): it ends when the rows are read or closed
    with ExitStack() as run:
        ctx = run.enter_context(RunContext(db, live=live, timed=timed, created=[] if created is None else created,
                                           progress=progress, restricted=analysis.policy is None))
        store = run.enter_context(_storing(into, analysis, ctx))
        ctx.timings["parse+analyze"] = front
        if analysis.policy is None:
            with ctx.in_stage("passthrough"):
                # the statement as parsed, not as qualified: qualification names unaliased
                # columns _col_0, … where the database would name them itself
                columns, rows = _answer(ctx, parsed.tree, stream)
            report = Report(table=None, method="none", rule="no protected table",
                            statements=len(ctx.statements), seconds=dict(ctx.timings))
            return _handed(columns, rows, report, run, stream), ctx, None
        req = _requirement(analysis, overrides)
        with ctx.in_stage("plan"):
            chosen = plan(analysis, req, db, lambda: _count(analysis, ctx))
        if chosen.method == "dp":
            assert req.dp is not None
            if into is not None:
                raise QueryRejected("stored release under differential privacy", "a stored release is of rows")
            columns, dp_rows, report = respond(analysis, req.dp, chosen.rule, ctx, spend)
            return _handed(columns, dp_rows, report, run, stream), ctx, chosen
        method = REGISTRY[chosen.method](req)
        recoder = store.into.recoder if store is not None else None
        # what a recoder or the differencing check reads before the method must be what it reads
        must_copy = recoder is not None or guard is not None
        with ctx.in_stage("pushdown"):
            frag = fragment(analysis, db)
            if recoder is not None:
                frag = recoder.prepare(frag, chosen.method, ctx)
            src, viewed = _selection(method, frag, ctx, must_copy)
            linked: list[str] = []
            if frag.persons:
                req, linked = per_person(frag, src, req, ctx)
                method = REGISTRY[chosen.method](req)
        if stream is None and into is None:  # numpy for the answer's order, imported while the database works
            prepare(analysis.tree, ctx.created_rows(src))
        remember = None
        if guard is not None:
            with ctx.in_stage("guard"):
                remember = guard(frag, req, ctx)
        # the planner's fallbacks apply to a release of the whole selection, one row per row
        fallback = list(chosen.fallback) if recoder is None and not frag.persons else []
        pushed: list[str] | None = None  # the pushed-down columns of a method that fell back
        risky = _risk_asked(frag, overrides)
        while True:
            if pushed is not None and (pushed != _pushdown(method, frag, ctx)
                                       or viewed and not reads_rows_once(method, frag, ctx)):
                with ctx.in_stage("pushdown"):  # the fallback reads other columns of the rows, or reads them again
                    ctx.drop(src)
                    src, viewed = _selection(method, frag, ctx, must_copy)
            with ctx.in_stage("anonymize"):
                release = method.run(frag, src if recoder is None else recoder.narrow(frag, src, ctx), ctx)
                if recoder is not None:
                    release.table = recoder.pin(frag, src, release.table, ctx)
            with ctx.in_stage("verify"):
                # the method's counts describe the selection only when it ran on all of it
                counts = release.counts if recoder is None else None
                try:
                    measured = verify(frag, src, release.table, req, ctx, release.aggregated, release.slices,
                                      release.bucket, counts, risk=risky and _risk_measurable(frag, release.slices))
                except SelectionChanged:
                    if not viewed:
                        raise
                    # another connection wrote to the table between the view's two reads: the
                    # selection is read once more, into a copy, whose count is the database's own
                    ctx.drop(release.table, src, *([release.counts] if release.counts is not None else []))
                    src, viewed = _selection(method, frag, ctx, must_copy=True)
                    continue
                if release.counts is not None:
                    ctx.drop(release.counts)
                if not live:
                    break
                try:
                    enforce(measured, req, exact=not method.suppresses)
                except SuppressionExceeded:
                    if not fallback:
                        raise
                    ctx.drop(release.table)
                    tried, method = method, REGISTRY[fallback.pop(0)](req)
                    pushed = _pushdown(tried, frag, ctx)
                    how = " (compared with noise)" if tried.suppresses else ""
                    chosen = replace(chosen, method=method.name, rule=f"{chosen.rule}: {_name(tried)} suppressed "
                                     f"more{how}, {_name(method)} instead")
                    continue
                except ReleaseRefused as e:
                    if recoder is None:
                        raise
                    raise ReleaseRefused(f"{e.message} (rows released before keep their earlier classes: rows "
                                         "removed since, or a selection that cuts through earlier classes, can leave "
                                         "one too small; see privacy.across_releases)") from None
                if recoder is not None:
                    measured.notes.extend(recoder.check(frag, release.table, req, ctx, release.aggregated))
                break
        if viewed and stream is None and into is None:  # a view tells its rows only when counted
            prepare(analysis.tree, measured.rows_in)
        with ctx.in_stage("finish"):
            if remember is not None:
                remember(ctx)
            if into is None:
                finish = remainder(analysis, release.table, req.k, release.aggregated)
                # the finish query reads the release alone; every other pipeline table (the
                # selection's copy among them) goes first: SQLite, MariaDB and Spark let a session
                # read its own temp tables whatever its identity, so the rewriter would be the only wall
                ctx.drop(*[t for t in ctx.temp_tables if t != release.table])
                ctx.relinquish([release.table])
                columns, rows = _answer(ctx, finish, stream, shuffle=True, released=measured.rows_released)
            else:
                assert store is not None
                store.write(frag, release.table, ctx)
                columns, rows = [], []
        # an answer counts exactly only what it releases: where the method withheld rows, the
        # selection's size is read with noise (a materialized release is the administrator's)
        exact = into is not None or not method.suppresses
        rows_in = measured.rows_in if exact else measured.rows_released + noisy(measured.rows_withheld)
        if not exact:
            release.notes.append(f"rows selected and suppressed are noisy (discrete Laplace, scale {NOISE_SCALE:g}): "
                                 "an answer counts exactly only the rows it releases")
        report = Report(
            table=frag.policy.table, method=chosen.method, rule=chosen.rule,
            requirement=_describe(req, frag), predicate=_predicate(frag, db),
            selections={t: db.backend.render(c) if c is not None else None for t, c, _ in frag.selections()}
            if frag.link is not None else {},
            rows_in=rows_in,
            rows_released=measured.rows_released,
            rows_withheld=rows_in - measured.rows_released, rows_generalized=measured.rows_generalized,
            rows_suppressed=rows_in - measured.rows_released + measured.rows_generalized, classes=measured.classes,
            checks=[{"criterion": v.criterion, "ok": v.ok, "measured": v.measured} for v in measured.verdicts],
            kl_divergence=measured.kl, kl_sum=measured.kl_sum, discernibility=measured.discernibility,
            information_loss=measured.information_loss,
            arx_loss=measured.arx_loss, nu_entropy=measured.nu_entropy,
            avg_class_size=(measured.rows_released / measured.classes / req.k) if measured.classes else None,
            levels=_levels(frag, release.levels, release.aggregated), statements=len(ctx.statements),
            buckets=measured.buckets.listed if measured.buckets else [],
            seconds=dict(ctx.timings),
            notes=linked + release.notes + measured.notes,
            risk=_risk(frag, measured, overrides) if risky else {},
        )
        if risky and measured.class_sizes is None and live:
            report.notes.append(_NOT_MEASURED)
        if store is not None:
            with ctx.in_stage("commit"):
                store.commit(report, ctx)
            report.seconds = dict(ctx.timings)
        return _handed(columns, rows, report, run, stream), ctx, chosen


@contextmanager
def _storing(into: Target | None, analysis: Analysis, ctx: RunContext) -> Iterator[Store | None]:
    """A stored release's lock and names (finish/store.py), taken before anything is read; on
    a failure, what the run made is dropped before the run's temp tables are."""
    if into is None or analysis.policy is None or not ctx.live:
        yield None
        return
    store = Store(analysis.policy.table, into)
    with ctx.in_stage("lock"):
        store.open(ctx)
    try:
        yield store
    except BaseException:
        store.abandon(ctx)
        raise


@dataclass(frozen=True)
class Admission:
    """What a front-end may do with one statement, decided without running it."""

    #: the statement as the database should receive it, when it reads no protected table
    #: (rendered from the parse tree: what the parser saw is what runs); None otherwise
    passthrough: str | None
    #: the protected table it reads (run it with ``execute``), or None
    table: str | None
    #: the names of the columns ``execute`` will return, for a query over a protected table (a
    #: front-end describes a prepared statement before running it)
    columns: tuple[str, ...] = ()


def admit(db: Database, policy: Policy, sql: str) -> Admission:
    """Parse and analyze ``sql`` as ``run`` would, and say whether it passes through; raises
    QueryRejected exactly where ``run`` would."""
    parsed, analysis = _analyze(db, policy, sql)
    if analysis.policy is None:
        return Admission(db.backend.render(parsed.tree), None)
    return Admission(None, analysis.policy.table, tuple(e.alias_or_name for e in analysis.tree.selects))


def materialize(db: Database, policy: Policy, table: str, into: Target, *, where: str | None = None,
                overrides: Overrides = Overrides(),
                progress: Callable[[str], None] | None = None, guard: Guard | None = None) -> Report:
    """Anonymize a protected table (or the rows ``where`` selects) once, inside the database, into
    a new table in random order, and a view over it when asked. Never replaces a table, except
    that a refresh rewrites the rows of the release it names."""
    if policy.for_table(table) is None:
        raise PolicyError(f"no policy names table {table!r}: only a protected table is materialized")
    if into.refresh and into.view is not None:
        raise QueryRejected("refresh with a new view", "a refresh rewrites the release's table; its views stay")
    # the names are checked under the table's lock, when the run begins (finish/store.py)
    db.refresh_schema()
    query = exp.select(exp.Star()).from_(exp.Table(this=exp.to_identifier(db.spelling.get(table.lower(), table),
                                                                          quoted=True)))
    if where is not None:
        try:
            query = query.where(sqlglot.condition(where, dialect=db.backend.dialect))
        except sqlglot.errors.ParseError as e:
            raise QueryRejected("unparsable SQL", f"--where: {e}") from None
    result, ctx, _ = run(db, policy, db.backend.render(query), overrides=overrides, progress=progress, into=into,
                         guard=guard)
    try:
        db.refresh_schema()
    except KeyboardInterrupt:
        raise Interrupted(ctx.interrupted()) from None  # the release is stored: say so
    return result.report


def check(db: Database, policy: Policy, table: str, *, overrides: Overrides = Overrides()) -> Measurement:
    """Measure an existing table, anonymized by anyone, against its policy's requirement: classes
    over the policy's quasi-identifiers as stored, every model's verdict (``sqlanon check``);
    with ``overrides.risk`` (or the policy's ``report.risk``) its re-identification risk too."""
    tp = policy.for_table(table)
    if tp is None:
        raise PolicyError(f"no policy names table {table!r}")
    info = db.columns(tp.table)
    columns = tuple(q.column for q in tp.quasi_identifiers) + tuple(s.column for s in tp.sensitive)
    frag = Fragment(tp, db.spelling.get(tp.table.lower(), tp.table), tp.table, columns, tp.quasi_identifiers, None,
                    frozenset(c for c in columns if info[c].family in ("text", "other")))
    numbers = tuple(q.column for q in tp.quasi_identifiers if info[q.column].family not in ("text", "other"))
    with RunContext(db) as ctx, ctx.in_stage("verify"):
        m = measure_table(frag, tp.requirement, ctx, numbers, risk=_risk_asked(frag, overrides))
    if m.class_sizes is not None:
        m.risk = _risk(frag, m, overrides)
    return m


#: the report's note where risk was asked of a release whose classes are no records' classes
_NOT_MEASURED = ("re-identification risk not measured: a sliced release or one with several rows per person has "
                 "classes that are not one record each")


def _risk_asked(frag: Fragment, overrides: Overrides) -> bool:
    report = frag.policy.report
    return bool(overrides.risk or overrides.population is not None or report.risk) and bool(frag.qis)


def _risk_measurable(frag: Fragment, slices: tuple[tuple[str, ...], ...]) -> bool:
    """The released classes are classes of records (not a sliced release's column groups, not
    several rows of one person)."""
    return not slices and not frag.persons and frag.link is None


def _risk(frag: Fragment, m: Measurement, overrides: Overrides) -> dict[str, Any]:
    """The report's re-identification risk headline (risk/headline.py) from the released classes'
    sizes; empty when they were not measured."""
    if m.class_sizes is None:
        return {}
    population = overrides.population if overrides.population is not None else frag.policy.report.population
    return headline([q.column for q in frag.qis], m.class_sizes, population=population,
                    suppressed=m.rows_released - sum(size * n for size, n in m.class_sizes.items()))


def choose(db: Database, policy: Policy, sql: str, *, overrides: Overrides = Overrides()) -> Plan | None:
    """The method the query would be anonymized with, and why (None: it passes through); runs
    nothing but the selection's COUNT(*) that the decision algorithm reads."""
    _, analysis = _analyze(db, policy, sql)
    if analysis.policy is None:
        return None
    req = _requirement(analysis, overrides)
    with RunContext(db) as ctx:
        return plan(analysis, req, db, lambda: _count(analysis, ctx))


def _count(analysis: Analysis, ctx: RunContext) -> int | None:
    """Rows the query selects, with noise (None in a static explain, where nothing is sent)."""
    found = ctx.scalar(count_statement(analysis))
    # the decision (and explain, which shows it) must not tell the selection's exact size
    return noisy(int(found)) if found is not None else None


def _predicate(frag: Fragment, db: Database) -> str | None:
    where = frag.canonical_where()
    return db.backend.render(where) if where is not None else None


def _levels(frag: Fragment, histogram: dict[str, dict[int, int]],
            aggregated: tuple[str, ...]) -> dict[str, dict[str, int]]:
    """Rows released per generalization level, each level named by its hierarchy (group means
    have no level)."""
    out = {}
    for q in frag.qis:
        if q.column in aggregated:
            continue
        out[q.column] = {f"{lv} ({q.hierarchy.describe(lv)})": n for lv, n in sorted(histogram.get(q.column, {}).items())}
    return out


@dataclass(frozen=True)
class Streaming:
    """An answer read ``size`` rows at a time as its reader asks. ``answered`` (the caller's
    release log) is given the report before the answer's statement runs: a cursor open on
    SQLite would hold a read lock that another connection's write waits for."""
    size: int
    answered: Callable[[Report], None] | None = None


def _answer(ctx: RunContext, statement: exp.Expression, stream: Streaming | None,
            shuffle: bool = False, released: int = 0) -> tuple[list[str], list[Row] | Rows]:
    """The answer's columns and rows: all of them read now, or rows whose statement runs when
    the answer is handed over (``_handed``), to be read as the reader asks. ``shuffle``: the
    finish query over ``released`` rows, read as its rows arrive where the backend can
    (RunContext.read_whole); a random order alone the client makes instead, having every row
    (finish/shuffle.py)."""
    if stream is None:
        if not shuffle:
            return _fetch(ctx.execute(statement))
        bare = unordered(statement)
        query = statement if bare is None else bare
        whole = ctx.read_whole(query, released)
        if whole is None:
            columns, rows = _fetch(ctx.execute(query))
        else:
            named, rows = whole
            # an empty answer read as it came tells no columns: the statement's, without a row
            assert isinstance(query, exp.Query)
            columns = named if named is not None else _fetch(ctx.execute(query.limit(0)))[0]
        return columns, rows if bare is None else shuffled(rows)
    return [], Rows(None, ctx.backend, stream.size, abandon=ctx.abandon_stream,
                    start=lambda: ctx.stream(statement, stream.size))


def _handed(columns: list[str], rows: list[Row] | Rows, report: Report, run: ExitStack,
            stream: Streaming | None) -> Result | Streamed:
    """The answer; a streamed one takes the run over from ``run``: its rows end it."""
    if stream is None:
        assert isinstance(rows, list)
        return Result(columns, rows, report)
    if stream.answered is not None:
        stream.answered(report)
    if isinstance(rows, list):  # read already (a differentially private answer): the run ends now
        return Streamed(columns, Rows.of(rows), report)
    columns = rows.begin()
    report.statements += 1  # the answer's own, sent after the report was written
    rows.hold(run.pop_all())
    return Streamed(columns, rows, report)


def _fetch(cur: Any) -> tuple[list[str], list[tuple[Any, ...]]]:
    if cur is None:
        return [], []
    try:
        columns = [d[0] for d in cur.description] if cur.description else []
        rows = cur.fetchall()
        # psycopg's and sqlite3's are a list of tuples already (a copy of 1 M: 0.17 s); PyMySQL's a tuple
        if type(rows) is not list:
            rows = list(rows)
        if rows and type(rows[0]) is not tuple:
            rows = [tuple(r) for r in rows]
        return columns, rows
    finally:
        cur.close()


def _person(name: str, frag: Fragment) -> str:
    """A column that recognises persons, as the policy names it: a joined release carries the
    links' identifier columns under internal names."""
    column = frag.link.columns.get(name) if frag.link is not None else None
    return f"{column.table}.{column.name}" if column is not None else f"{frag.policy.table}.{name}"


def _describe(req: Requirement, frag: Fragment) -> dict[str, Any]:
    d: dict[str, Any] = {"k": req.k}
    if req.alpha is not None:
        protect = "all" if req.alpha.protect is None else list(req.alpha.protect)
        d["alpha"] = {"value": req.alpha.value, "attribute": req.alpha.attribute, "protect": protect}
    if req.l is not None:
        d["l"] = {"value": req.l.value, "attribute": req.l.attribute, "variant": req.l.variant}
        if req.l.c is not None:
            d["l"]["c"] = req.l.c
    if req.t is not None:
        d["t"] = {"value": req.t.value, "attribute": req.t.attribute, "distance": req.t.distance}
    if req.persons:
        d["persons"] = {"k": req.persons[0].value, "columns": [_person(p.attribute, frag) for p in req.persons]}
    d["max_suppression"] = req.max_suppression
    return d
