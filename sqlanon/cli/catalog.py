"""``sqlanon db``, ``sqlanon policy`` and ``sqlanon releases``: sqlanon's catalog in the database."""
from __future__ import annotations

import getpass
import json
import sys
from contextlib import contextmanager
from typing import Iterator

import click

from sqlanon.access import DEFAULT_READER, apply_grants, grant_statements
from sqlanon.backends.connect import Database, open_database
from sqlanon.catalog import Catalog, migrate, open_catalog, policies
from sqlanon.cli import _connect, _fail, _table, access, db_option, main, policy_option
from sqlanon.errors import PolicyError, SqlanonError
from sqlanon.policy import load_policy
from sqlanon.policy.check import check_against_database


@main.group()
def db() -> None:
    """sqlanon's catalog in the database: create, upgrade, inspect (Alembic migrations)."""


@db.command("upgrade")
@click.option("--db", "url", default=None, envvar="SQLANON_DB", help="SQLAlchemy database URL")
@click.option("--catalog", default=None,
              help="instead: the URL of a database of its own for the catalog of a --db that cannot keep one "
                   "(Spark SQL); a new SQLite file is made")
@click.argument("revision", default="head")
def db_upgrade(url: str | None, catalog: str | None, revision: str) -> None:
    """Create the catalog or bring it to REVISION (default: the newest)."""
    if catalog is None and url is None:
        raise click.UsageError("Missing option '--db' (or '--catalog')")
    try:
        with _database(catalog or url or "", reader=None, new=catalog is not None) as d:
            click.echo(f"catalog at revision {migrate.upgrade(d, revision)}")
    except SqlanonError as e:
        _fail(e)


@db.command("downgrade")
@db_option
@click.argument("revision")
@click.option("--yes", is_flag=True, help="confirm: a downgrade drops catalog tables with their rows")
def db_downgrade(url: str, revision: str, yes: bool) -> None:
    """Take the catalog back to REVISION ('base' removes it): drops the logs it held."""
    if not yes:
        click.echo("error: a downgrade drops catalog tables and the releases and audit events they hold; "
                   "add --yes to confirm", err=True)
        sys.exit(2)
    try:
        with _database(url, reader=None) as d:
            click.echo(f"catalog at revision {migrate.downgrade(d, revision) or 'none'}")
    except SqlanonError as e:
        _fail(e)


@db.command("current")
@db_option
def db_current(url: str) -> None:
    """The catalog's revision ('none' where there is no catalog) and the newest one known."""
    try:
        with _database(url) as d:
            click.echo(f"{migrate.current(d) or 'none'} (head {migrate.head()})")
    except SqlanonError as e:
        _fail(e)


@db.command("grants")
@db_option
@click.option("--policy", "policy_file", required=True, type=click.Path(exists=True, dir_okay=False),
              help="the policy whose tables the login may not read")
@click.option("--login", required=True, help="the account sqlanon connects as (MySQL: name or name@host)")
@click.option("--reader", default=DEFAULT_READER, show_default=True, help="the role the pipeline takes on")
@click.option("--no-unprotected", is_flag=True, help="leave the login's grants on the other tables alone")
@click.option("--apply", "run", is_flag=True, help="run the statements (else they are printed)")
def db_grants(url: str, policy_file: str, login: str, reader: str, no_unprotected: bool, run: bool) -> None:
    """The administrator's grants that make the database refuse raw reads outside the pipeline:
    READER reads the policy's tables and keeps the catalog; LOGIN may take READER on and reads
    by itself only the other tables. Run with an administrator's --db."""
    try:
        with _database(url, reader=None) as d:
            statements = grant_statements(d, load_policy(policy_file), login, reader, unprotected=not no_unprotected)
            if run:
                apply_grants(d, statements)
    except SqlanonError as e:
        _fail(e)
    click.echo(";\n".join(statements) + ";")
    if run:
        click.echo(f"-- applied; check with: sqlanon --reader-role {reader} db access --db <{login}'s URL> "
                   f"--policy {policy_file}")


@db.command("access")
@db_option
@policy_option
def db_access(url: str, policy: str | None) -> None:
    """Check, as the login of --db, that the database refuses its raw reads of every protected
    table and of the catalog, and that the reader role reads them; exit 2 naming the fault."""
    try:
        with _connect(url, policy) as s:
            tables = ", ".join(sorted(t.table for t in s.policy.tables.values()))
            state = "refuses" if s.db.enforced else "does NOT refuse (--unrestricted)"
            click.echo(f"ok: the database {state} this login's raw reads of {tables} and of the catalog; "
                       f"the pipeline reads them as {s.db.reader or 'the authorizer allows'}")
    except SqlanonError as e:
        _fail(e)


@contextmanager
def _database(url: str, reader: str | None = "", new: bool = False) -> Iterator[Database]:
    """The database as the pipeline sees it (under the reader role; ``None``: the login's own;
    ``new``: a SQLite file is made where there is none)."""
    d = open_database(url, reader=access().get("reader_role") if reader == "" else reader, new=new)
    try:
        yield d
    finally:
        d.dispose()


@contextmanager
def _catalog(url: str) -> Iterator[Catalog]:
    """The catalog as the --db account itself reads it (an administrator's commands)."""
    with _database(url, reader=None) as d:
        catalog = open_catalog(d)
        if catalog is None:
            raise PolicyError("the database has no sqlanon catalog: run 'sqlanon db upgrade'")
        yield catalog


@main.group()
def policy() -> None:
    """Policies stored in the catalog (a policy file still works without one)."""


@policy.command("apply")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@db_option
def policy_apply(file: str, url: str) -> None:
    """Store FILE's policy in the catalog: a new version for each table whose policy changed."""
    try:
        # an administrator's command that reads no protected row: no pipeline, no reader role
        with _database(url, reader=None) as d:
            check_against_database(load_policy(file), d)
            catalog = open_catalog(d, create=True)
            assert catalog is not None
            for a in policies.apply(catalog, file, getpass.getuser()):
                click.echo(f"{a.table}: version {a.version}" + ("" if a.changed else " (unchanged)"))
    except SqlanonError as e:
        _fail(e)


@policy.command("show")
@click.argument("table", required=False)
@db_option
def policy_show(table: str | None, url: str) -> None:
    """The newest stored policy of TABLE (default: every table), as YAML."""
    try:
        with _catalog(url) as catalog:
            click.echo(policies.show(catalog, table), nl=False)
    except SqlanonError as e:
        _fail(e)


@policy.command("diff")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@db_option
def policy_diff(file: str, url: str) -> None:
    """What 'policy apply FILE' would change; exit 1 when it would change something."""
    try:
        with _catalog(url) as catalog:
            text = policies.diff(catalog, file)
    except SqlanonError as e:
        _fail(e)
    click.echo(text, nl=False)
    sys.exit(1 if text else 0)


@main.command()
@db_option
@click.option("--table", default=None, help="only releases of this table")
@click.option("--limit", type=int, default=50, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
def releases(url: str, table: str | None, limit: int, fmt: str) -> None:
    """The release log: every release, newest first (who, when, which rows, how)."""
    try:
        with _catalog(url) as catalog:
            rows = catalog.releases(table, limit)
    except SqlanonError as e:
        _fail(e)
    if fmt == "json":
        click.echo(json.dumps(rows, default=str, indent=2))
        return
    cols = ["id", "at", "client", "front_end", "table_name", "method", "rows_in", "rows_released", "rows_suppressed",
            "target", "predicate"]
    click.echo(_table(cols, [tuple(r[c] for c in cols) for r in rows]))
