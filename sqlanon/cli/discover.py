"""``sqlanon discover`` and ``sqlanon risk``: before and after the policy, measured in the database.

Both read the raw table, so they connect as the pipeline does: under the reader role
(``--reader-role``), never through the restricted login's own identity; only aggregates come
back. ``risk --query`` runs the query like ``sqlanon query`` and measures the rows it released.
"""
from __future__ import annotations

import json

import click

from sqlanon import api
from sqlanon.access import DEFAULT_READER
from sqlanon.cli import _fail, _names, access, db_option, main, policy_option, population
from sqlanon.errors import SqlanonError

#: a share of the rows: in (0, 1]
SHARE = click.FloatRange(0, 1, min_open=True)


@main.command("discover")
@click.argument("table")
@db_option
@click.option("--max-size", type=click.IntRange(1, 8), default=4, show_default=True,
              help="largest combination of columns searched")
@click.option("--threshold", type=SHARE, default=0.95, show_default=True,
              help="a combination qualifies when it singles out at least this share of the rows (1: every row)")
@click.option("--qi", default=None,
              help="comma-separated columns to measure together and propose as the quasi-identifiers")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "yaml"]), default="text",
              help="yaml: a policy skeleton to review (never applied by sqlanon)")
@click.option("--workers", type=click.IntRange(1, 32), default=2, show_default=True,
              help="whole-table measurements sent at a time, each on a connection of its own (server cores)")
def discover_cmd(table: str, url: str, max_size: int, threshold: float, qi: str | None, fmt: str,
                 workers: int) -> None:
    """Find the column combinations of TABLE that single people out, and identifier-like columns."""
    try:
        found = api.discover(url, table, max_size=max_size, threshold=threshold, qi=_names(qi) if qi else None,
                             reader_role=access().get("reader_role", DEFAULT_READER), workers=workers)
    except SqlanonError as e:
        _fail(e)
    if fmt == "json":
        click.echo(json.dumps(found.to_dict(), indent=2, default=str, ensure_ascii=False))
    elif fmt == "yaml":
        click.echo(found.policy_yaml, nl=False)
    else:
        click.echo(found.text())


@main.command("risk")
@click.argument("table", required=False)
@db_option
@policy_option
@click.option("--query", default=None, help="measure this query's anonymized answer instead of a table")
@click.option("--release-of", default=None,
              help="TABLE is a stored release of this protected table: its quasi-identifiers; suppressed rows left out")
@click.option("--qi", default=None, help="comma-separated quasi-identifiers instead of the policy's")
@click.option("--population", default=None, callback=population,
              help="the population's size, or an ARX region (usa, uk, germany, …); default: 100 × the rows")
@click.option("--population-table", default=None,
              help="a table of the database that TABLE is a sample of (same columns): journalist risk counts "
                   "each class there, and its rows are the population unless --population says")
@click.option("--threshold", type=SHARE, default=None, help="also count the records whose risk is above this")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def risk_cmd(table: str | None, url: str, policy: str | None, query: str | None, release_of: str | None,
             qi: str | None, population: int | str | None, population_table: str | None, threshold: float | None,
             fmt: str) -> None:
    """Re-identification risk of TABLE (raw or a release) or of --query's answer, as ARX measures it."""
    if (table is None) == (query is None):
        raise click.UsageError("name a TABLE or give --query, not both")
    try:
        report = api.risk(url, table, policy, query=query, release_of=release_of, qi=_names(qi) if qi else None,
                          population=population, threshold=threshold, population_table=population_table, **access())
    except SqlanonError as e:
        _fail(e)
    if fmt == "json":
        click.echo(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        click.echo(report.text())
