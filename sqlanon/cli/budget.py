"""``sqlanon budget``: what each analyst has spent of the ε budgets (differential privacy)."""
from __future__ import annotations

import json

import click

from sqlanon.cli import _connect, _fail, _table, catalog_option, db_option, main, policy_option
from sqlanon.errors import SqlanonError


@main.command()
@db_option
@policy_option
@catalog_option
@click.option("--client", default=None, help="only this client (analyst)")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
def budget(url: str, policy: str | None, catalog: str | None, client: str | None, fmt: str) -> None:
    """ε spent per client and table within the policy's window, of each table's budget (the catalog's ledger)."""
    try:
        with _connect(url, policy, catalog) as session:
            rows = session.budget(client)
    except SqlanonError as e:
        _fail(e)
    if fmt == "json":
        click.echo(json.dumps(rows, default=str, indent=2))
        return
    cols = ["client", "table", "queries", "epsilon", "budget", "per", "window_seconds", "last"]
    click.echo(_table(cols, [tuple(r[c] for c in cols) for r in rows]))
