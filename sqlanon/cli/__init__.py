"""The ``sqlanon`` command: thin click commands over ``sqlanon.api``; no logic lives here.

Every failure ends the command with one line on stderr, ``error: <cause>``, and an exit code:
2 for a refusal, a rejection or any other error, 3 when the database failed the command for
now (the connection was lost, another connection holds a lock: the same command may succeed
later), 130 on an interrupt (Ctrl-C, SIGINT), 143 on SIGTERM, 141 when the reader of the rows
went away (a pipe into ``head``: the rows stop, the run ends as after close). No traceback, no
class of a library: ``SQLANON_DEBUG=1`` shows the traceback of an unexpected error.
"""
from __future__ import annotations

import csv
import gc
import getpass
import io
import json
import logging
import os
import re
import signal
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import click

from sqlanon import api, interrupts
from sqlanon.access import DEFAULT_READER
from sqlanon.backends.faults import fault
from sqlanon.errors import ConnectionLost, DatabaseLocked, Interrupted, QueryRejected, SqlanonError
from sqlanon.policy.model import METHODS
from sqlanon.risk.headline import headline_lines
from sqlanon.risk.population import REGIONS

#: exit codes besides 0 (success) and 1 (``check``: a model fails)
REFUSED, TRANSIENT, INTERRUPTED, TERMINATED, PIPE_CLOSED = 2, 3, 130, 143, 141


def access() -> dict[str, Any]:
    """The group's options on who reads protected tables (``--reader-role``, ``--unrestricted``),
    as ``api.connect`` takes them."""
    ctx = click.get_current_context(silent=True)
    return dict(ctx.find_root().obj or {}) if ctx is not None else {}


def _connect(url: str, policy: str | None, catalog: str | None = None) -> api.Session:
    """A library session for a CLI command: the caller's OS user names it in the catalog's logs;
    ``catalog``: the URL of the catalog's own database (``--catalog``, Spark SQL)."""
    return api.connect(url, policy, catalog=catalog, client=getpass.getuser(), front_end="cli", **access())


def _connect_query(url: str | dict[str, str], policy: str | None, catalog: str | None = None) -> Any:
    """A session for ``query`` and ``explain``: one database's, or several databases' (a
    Federation, sqlanon.distributed) when they are named."""
    if isinstance(url, str):
        return _connect(url, policy, catalog)
    return api.connect(url, policy, catalog=catalog, client=getpass.getuser(), front_end="cli", **access())


def _fail(e: SqlanonError) -> None:
    _exit(e.message, TRANSIENT if isinstance(e, (ConnectionLost, DatabaseLocked)) else REFUSED)


def _exit(message: str, code: int) -> None:
    """One line on stderr (a driver's message may hold several), then the exit code."""
    click.echo("error: " + re.sub(r"\s*\n\s*", " ", message.strip()), err=True)
    sys.exit(code)


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command is, so that it cleans up as after Ctrl-C."""


#: the handler that keeps SQLAlchemy's records from Python's last resort (added once)
_QUIET = logging.NullHandler()

#: SIGTERM's handler: raises _Terminated where the command is, and notes it (sqlanon.interrupts)
_terminate = interrupts.raising(_Terminated)


class Command(click.Group):
    """The group that ends every command's failure in one line and an exit code (see above)."""

    def main(self, args: Any = None, *rest: Any, **options: Any) -> Any:
        if args is None:
            # The process's own command (its arguments from sys.argv; not a call inside another
            # program, such as click's test runner): what the imports made (sqlglot, SQLAlchemy,
            # the drivers, ~100,000 objects) lives as long as the process, so it is put out of the
            # cyclic collector's reach and a collection walks only what the command makes, whose
            # sqlglot trees are cycles (a Mondrian query on Adult: 0.93 -> 0.63 s of the process's CPU)
            gc.freeze()
            if not os.environ.get("SQLANON_DEBUG"):
                # SIGTERM cleans up as Ctrl-C does (the proxy installs its own shutdown); both are
                # noted where they land, so that one SQLite swallowed inside a function is still
                # told as such. Only here: a program that runs a command inside itself keeps its own
                signal.signal(signal.SIGTERM, _terminate)
                if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                    signal.signal(signal.SIGINT, interrupts.raising(KeyboardInterrupt))
        return super().main(args, *rest, **options)

    def invoke(self, ctx: click.Context) -> Any:
        if os.environ.get("SQLANON_DEBUG"):
            return super().invoke(ctx)
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort, SystemExit):
            raise
        except KeyboardInterrupt as e:
            # a run says what became of it (Interrupted); the signal may be under it
            what = e.message if isinstance(e, Interrupted) else "interrupted"
            if isinstance(e, _Terminated) or isinstance(e.__context__, _Terminated):
                _exit(what.replace("interrupted", "terminated (SIGTERM)", 1), TERMINATED)
            _exit(what, INTERRUPTED)
        except SqlanonError as e:
            _fail(e)
        except Exception as e:  # noqa: BLE001 - a front-end ends in one line, whatever failed
            mapped = fault(e)
            if mapped is not None:
                _fail(mapped)
            text = str(e).splitlines()[0] if str(e).strip() else ""
            _exit(f"sqlanon failed unexpectedly ({type(e).__name__}{': ' + text if text else ''}); "
                  "SQLANON_DEBUG=1 shows where", REFUSED)


def _table(columns: list[str], rows: list[tuple], limit: int | None = None) -> str:
    shown = rows if limit is None else rows[:limit]
    cells = [[("NULL" if v is None else str(v)) for v in r] for r in shown]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    line = lambda vals: " | ".join(v.ljust(w) for v, w in zip(vals, widths))  # noqa: E731
    out = [line(columns), "-+-".join("-" * w for w in widths), *[line(r) for r in cells]]
    if limit is not None and len(rows) > limit:
        out.append(f"… {len(rows) - limit} more rows")
    return "\n".join(out)


db_option = click.option("--db", "url", required=True, envvar="SQLANON_DB", help="SQLAlchemy database URL")


def _databases(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> str | dict[str, str]:
    """One URL, or several databases each under a name (``--db clinic=URL --db lab=URL``)."""
    named = [v.partition("=") for v in values]
    if len(values) == 1 and (not named[0][1] or "://" in named[0][0]):
        return values[0]
    if any(not sep or "://" in name or not name.isidentifier() for name, sep, _ in named):
        raise click.BadParameter("several databases are given as NAME=URL, each under its own name")
    return {name: url for name, _, url in named}


#: the database of a query: one URL, or NAME=URL repeated for a join over several (sqlanon.distributed)
dbs_option = click.option("--db", "url", required=True, multiple=True, envvar="SQLANON_DB", callback=_databases,
                          help="SQLAlchemy database URL; or NAME=URL, repeated, for a query over several databases "
                               "(tables named NAME.table)")
#: the catalog's own database where the tables' cannot keep it (Spark SQL)
catalog_option = click.option("--catalog", default=None, envvar="SQLANON_CATALOG",
                              help="SQLAlchemy URL of a database that keeps sqlanon's catalog (the ε ledger of "
                                   "differential privacy, the audit log) for a --db that cannot (Spark SQL); "
                                   "made by 'sqlanon db upgrade --catalog URL'")
policy_option = click.option("--policy", default=None, type=click.Path(exists=True, dir_okay=False),
                             envvar="SQLANON_POLICY",
                             help="policy YAML file (default: the policies applied to the database's catalog)")
k_option = click.option("--k", type=int, default=None, help="raise k above the policy's")
#: α and t are shares and distances: in (0, 1]
UNIT = click.FloatRange(0, 1, min_open=True)
alpha_option = click.option("--alpha", type=UNIT, default=None, help="lower α below the policy's")
l_option = click.option("--l", "l_value", type=int, default=None,
                        help="raise l (distinct l-diversity where the policy has none)")
t_option = click.option("--t", "t_value", type=UNIT, default=None,
                        help="lower t (t-closeness where the policy has none)")
method_option = click.option("--method", type=click.Choice(list(METHODS)), default=None,
                             help="another method than the policy's (every release is verified the same)")


def population(_ctx: click.Context, _param: click.Parameter, value: str | None) -> int | str | None:
    """``--population``: a number of people or one of ARX's regions (usa, uk, …)."""
    if value is None:
        return None
    text = value.strip().lower().replace(" ", "_").replace("-", "_")
    if text in REGIONS:
        return text
    try:
        n = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise click.BadParameter(f"a number or one of {', '.join(sorted(REGIONS))}") from None
    if n < 1:
        raise click.BadParameter("a population of at least one person")
    return n


risk_option = click.option("--risk", is_flag=True,
                           help="the report shows the released rows' re-identification risk (prosecutor, journalist, "
                                "marketer, sample uniques), as the policy's report.risk does")
population_option = click.option("--population", default=None, callback=population,
                                 help="with --risk: the population the rows are a sample of (a number or an ARX "
                                      "region: usa, uk, germany, …), for the estimate of population uniqueness")


@click.group(cls=Command)
@click.version_option(package_name="sqlanon")
@click.option("--reader-role", default=DEFAULT_READER, envvar="SQLANON_READER_ROLE", show_default=True,
              help="the role the anonymization pipeline takes on to read protected tables (PostgreSQL, MariaDB)")
@click.option("--unrestricted", is_flag=True, envvar="SQLANON_UNRESTRICTED",
              help="serve a login that can read protected tables itself: for development only")
@click.pass_context
def main(ctx: click.Context, reader_role: str, unrestricted: bool) -> None:
    """SQL-pushdown anonymizer: anonymized answers computed inside the database."""
    ctx.obj = {"reader_role": reader_role, "unrestricted": unrestricted}
    if not os.environ.get("SQLANON_DEBUG"):
        # SQLAlchemy logs what it swallows (a connection's close cut by a signal) with a
        # traceback, which Python's last-resort handler would print under the command's one line
        logging.getLogger("sqlalchemy").addHandler(_QUIET)


def query_options(f):  # noqa: ANN001, ANN201 - a click decorator
    """The options every command that takes a query has."""
    for option in (method_option, t_option, l_option, alpha_option, k_option, catalog_option, policy_option,
                   dbs_option,
                   click.argument("sql")):
        f = option(f)
    return f


@main.command()
@query_options
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json", "jsonl"]), default="table",
              help="csv, json and jsonl (one JSON object per row) are written as the rows arrive")
@click.option("--no-report", is_flag=True, help="print only the rows")
@risk_option
@population_option
def query(sql: str, url: str, policy: str | None, catalog: str | None, k: int | None, alpha: float | None,
          l_value: int | None, t_value: float | None, method: str | None, fmt: str, no_report: bool, risk: bool,
          population: int | str | None) -> None:
    """Run SQL; protected tables are anonymized in the database first."""
    asked: dict[str, Any] = dict(k=k, alpha=alpha, l=l_value, t=t_value, method=method, risk=risk,
                                 population=population)
    try:
        with _connect_query(url, policy, catalog) as s:
            if fmt != "table":
                # the release is verified (or refused) before the first row; then the rows are
                # written as the database hands them over, a batch at a time
                with _progress() as progress:
                    streamed = s.stream(sql, progress=progress, **asked)
                try:
                    with streamed:
                        _write(fmt, streamed, no_report)
                except BrokenPipeError:
                    # nobody reads stdout any more: no more rows, and nothing left to flush at exit
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                    sys.exit(PIPE_CLOSED)
                return
            with _progress() as progress:  # a table's widths need every row
                res = s.execute(sql, progress=progress, **asked)
    except SqlanonError as e:
        _fail(e)
    click.echo(_table(res.columns, res.rows))
    if not no_report:
        click.echo(str(res.report))


def _write(fmt: str, res: api.Streamed, no_report: bool) -> None:
    """Rows to stdout as they arrive: CSV, one JSON document (columns and report first, rows
    last), or JSON lines; the report of CSV and JSON lines goes to stderr."""
    out = click.get_text_stream("stdout")
    if fmt == "jsonl" and len(set(res.columns)) < len(res.columns):
        raise QueryRejected("--format jsonl with columns of the same name", "give each column its own alias")
    if fmt == "json":
        out.write(f'{{"columns": {json.dumps(res.columns)}, "report": '
                  f'{json.dumps(res.report.to_dict(), default=str, indent=2)}, "rows": [')
    elif fmt == "csv":
        csv.writer(out).writerow(res.columns)
    first = True
    while batch := res.fetchmany():
        buf = io.StringIO()
        if fmt == "csv":
            csv.writer(buf).writerows(batch)
        elif fmt == "jsonl":
            buf.writelines(json.dumps(dict(zip(res.columns, r)), default=str) + "\n" for r in batch)
        else:
            buf.write(("\n" if first else ",\n") + ",\n".join(json.dumps(list(r), default=str) for r in batch))
        first = False
        out.write(buf.getvalue())
        out.flush()
    if fmt == "json":
        out.write("]}\n")
    elif not no_report:
        click.echo(str(res.report), err=True)


@main.command()
@query_options
@click.option("--analyze", is_flag=True, help="run the query (no rows are shown) and list every statement")
@click.option("--summary", is_flag=True, help="the plan and the number of statements per stage, without the SQL")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@risk_option
def explain(sql: str, url: str, policy: str | None, catalog: str | None, k: int | None, alpha: float | None,
            l_value: int | None, t_value: float | None, method: str | None, analyze: bool, summary: bool, fmt: str,
            risk: bool) -> None:
    """Show the plan and every SQL statement in the target dialect (--summary: statements per stage)."""
    try:
        with _connect_query(url, policy, catalog) as s:
            found = s.explanation(sql, k=k, alpha=alpha, l=l_value, t=t_value, method=method, analyze=analyze,
                                  risk=risk)
    except SqlanonError as e:
        _fail(e)
    if fmt == "json":
        click.echo(json.dumps(found.to_dict(statements=not summary), default=str, indent=2, ensure_ascii=False))
    else:
        click.echo(found.text(summary))


@contextmanager
def _progress() -> Iterator[Callable[[str], None] | None]:
    """A progress line on a terminal (stage, statements sent), at most ten updates a second,
    cleared at the end; None where stderr is no terminal (scripts see nothing)."""
    if not sys.stderr.isatty():
        yield None
        return
    last = [0.0]

    def show(message: str) -> None:
        now = time.monotonic()
        if now - last[0] >= 0.1:
            last[0] = now
            click.echo(f"\r\033[K{message}", err=True, nl=False)
    try:
        yield show
    finally:
        click.echo("\r\033[K", err=True, nl=False)


@main.command("materialize")
@click.argument("table")
@db_option
@policy_option
@click.option("--into", required=True, help="the new table that holds the release")
@click.option("--view", default=None, help="also create this view over it (grants are yours to give)")
@click.option("--where", default=None, help="anonymize only the rows this condition selects")
@click.option("--refresh", is_flag=True,
              help="rewrite the earlier release INTO from the current rows, consistent with it (needs the catalog)")
@k_option
@alpha_option
@l_option
@t_option
@method_option
@risk_option
@population_option
def materialize_cmd(table: str, url: str, policy: str | None, into: str, view: str | None, where: str | None,
                    refresh: bool, k: int | None, alpha: float | None, l_value: int | None, t_value: float | None,
                    method: str | None, risk: bool, population: int | str | None) -> None:
    """Anonymize a protected table once, inside the database, into a new table."""
    report = None
    try:
        with _progress() as progress, _connect(url, policy) as s:
            report = s.materialize(table, into, view=view, where=where, k=k, alpha=alpha, l=l_value, t=t_value,
                                   method=method, refresh=refresh, progress=progress, risk=risk,
                                   population=population)
        click.echo(f"{into}: {report.rows_released} rows released" + (f", view {view}" if view else ""))
        click.echo(str(report))
    except SqlanonError as e:
        _fail(e)
    except KeyboardInterrupt as e:
        if report is None or isinstance(e, Interrupted):
            raise
        # a signal after the release was stored: it stays, and the line says so
        raise Interrupted(f"interrupted; after the release {into} was stored ({report.rows_released} rows)") from None


def _names(text: str) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()]


@main.command()
@click.argument("table")
@db_option
@click.option("--qi", required=True, help="comma-separated quasi-identifier columns, as the table stores them")
@click.option("--sensitive", default="", help="comma-separated sensitive columns; the models judge the first")
@click.option("--k", type=int, default=2, show_default=True)
@click.option("--alpha", type=UNIT, default=None, help="α-deassociation bound (needs --sensitive)")
@click.option("--protect", default=None, help="comma-separated α-protected values (default: all)")
@click.option("--l", "l_value", type=int, default=None, help="l-diversity (needs --sensitive)")
@click.option("--l-variant", type=click.Choice(["distinct", "entropy", "recursive"]), default="distinct")
@click.option("--c", "c_value", type=float, default=None, help="c of recursive (c,l)-diversity")
@click.option("--t", "t_value", type=UNIT, default=None, help="t-closeness (needs --sensitive)")
@click.option("--t-distance", type=click.Choice(["ordered", "equal", "hierarchical", "variational"]), default=None)
@click.option("--t-hierarchy", type=click.Path(exists=True, dir_okay=False), default=None,
              help="taxonomy of the sensitive column (ARX CSV) for the hierarchical distance")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text")
@risk_option
@population_option
def check(table: str, url: str, qi: str, sensitive: str, k: int, alpha: float | None, protect: str | None,
          l_value: int | None, l_variant: str, c_value: float | None, t_value: float | None,
          t_distance: str | None, t_hierarchy: str | None, fmt: str, risk: bool, population: int | str | None) -> None:
    """Measure a stored table, anonymized by anyone, against the models; exit 1 when one fails."""
    sens = _names(sensitive)
    models = [flag for flag, value in (("--alpha", alpha), ("--l", l_value), ("--t", t_value)) if value is not None]
    if models and not sens:
        _exit(f"{' and '.join(models)} {'needs' if len(models) == 1 else 'need'} --sensitive COLUMN: the column "
              f"{'its model judges' if len(models) == 1 else 'their models judge'}", REFUSED)
    privacy: dict = {"k": k}
    attribute = {"attribute": sens[0]} if sens else {}
    if alpha is not None:
        privacy["alpha"] = {"value": alpha, "protect": _names(protect) if protect else "all", **attribute}
    if l_value is not None:
        privacy["l"] = {"value": l_value, "variant": l_variant, **({"c": c_value} if c_value is not None else {}),
                        **attribute}
    if t_value is not None:
        privacy["t"] = {"value": t_value, **({"distance": t_distance} if t_distance else {}), **attribute}
    spec = {"quasi_identifiers": {q: {"type": "suppress"} for q in _names(qi)},
            "sensitive": {s: ({"hierarchy": str(Path(t_hierarchy).resolve())} if t_hierarchy and s == sens[0] else {})
                          for s in sens},
            "privacy": privacy}
    try:
        # a stored release is measured, not served: the login may read it (it is no protected table)
        with api.connect(url, {"tables": {table: spec}}, catalog=False, reader_role=access()["reader_role"],
                         unrestricted=True) as s:
            m = s.check(table, risk=risk, population=population)
    except SqlanonError as e:
        _fail(e)
    verdicts = [{"criterion": v.criterion, "ok": v.ok, "measured": v.measured} for v in m.verdicts]
    if fmt == "json":
        click.echo(json.dumps({"table": table, "rows": m.rows_released, "classes": m.classes,
                               "discernibility": m.discernibility, "ok": m.ok, "checks": verdicts,
                               **({"risk": m.risk} if m.risk else {})}, indent=2))
    elif fmt == "markdown":
        click.echo(f"**{table}**: {m.rows_released} rows, {m.classes} classes, discernibility {m.discernibility}\n")
        click.echo("| criterion | holds | measured |\n|---|---|---|")
        for v in verdicts:
            click.echo(f"| {v['criterion']} | {'yes' if v['ok'] else '**no**'} | {v['measured']} |")
        if m.risk:
            click.echo("\n```\n" + "\n".join(headline_lines(m.risk)) + "\n```")
    else:
        click.echo(f"table {table}: {m.rows_released} rows, {m.classes} classes, discernibility {m.discernibility}")
        for v in verdicts:
            click.echo(f"  {'ok  ' if v['ok'] else 'FAIL'} {v['criterion']}: {v['measured']}")
        if m.risk:
            click.echo("\n".join(headline_lines(m.risk)))
    sys.exit(0 if m.ok else 1)


# the commands of the other modules register themselves on ``main``
from sqlanon.cli import budget as _budget_commands  # noqa: E402,F401
from sqlanon.cli import catalog as _catalog_commands  # noqa: E402,F401
from sqlanon.cli import demo as _demo_commands  # noqa: E402,F401
from sqlanon.cli import discover as _discover_commands  # noqa: E402,F401
from sqlanon.cli import proxy as _proxy_commands  # noqa: E402,F401
from sqlanon.cli import synthesize as _synthesize_commands  # noqa: E402,F401
