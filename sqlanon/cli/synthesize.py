"""``sqlanon synthesize``: a synthetic table by MWEM (differential privacy)."""
from __future__ import annotations

import json

import click
import yaml

from sqlanon.cli import _connect, _fail, catalog_option, db_option, main, policy_option
from sqlanon.errors import SqlanonError


@main.command()
@click.argument("table")
@click.option("--into", required=True, help="the new table that holds the synthetic rows")
@click.option("--epsilon", type=click.FloatRange(0, min_open=True), required=True,
              help="the ε the synthesis spends of the table's budget")
@click.option("--workload", type=click.Path(exists=True, dir_okay=False), default=None,
              help="YAML list of column lists, the marginals to fit (default: every 1- and 2-way marginal of the "
                   "quasi-identifiers with a known domain)")
@click.option("--rounds", type=int, default=None, help="MWEM rounds (default: 30, five per marginal where there are fewer than six)")
@click.option("--bins", type=int, default=10, show_default=True, help="bins of a numeric column's bounds")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@db_option
@policy_option
@catalog_option
def synthesize(table: str, into: str, epsilon: float, workload: str | None, rounds: int | None, bins: int, fmt: str,
               url: str, policy: str | None, catalog: str | None) -> None:
    """Draw a synthetic table from TABLE by MWEM, fitted to a workload of marginals with ε of its budget."""
    marginals = None
    if workload is not None:
        with open(workload, encoding="utf-8") as f:
            marginals = yaml.safe_load(f)
        if not isinstance(marginals, list) or not all(isinstance(m, list) and m and all(isinstance(c, str) for c in m)
                                                      for m in marginals):
            click.echo("error: --workload must be a YAML list of column lists", err=True)
            raise SystemExit(2)
    try:
        with _connect(url, policy, catalog) as session:
            made = session.synthesize(table, into, epsilon=epsilon, workload=marginals, rounds=rounds, bins=bins)
    except SqlanonError as e:
        _fail(e)
    if fmt == "json":
        click.echo(json.dumps(made.to_dict(), indent=2))
        return
    click.echo(f"{made.into}: {made.rows} synthetic rows of {made.table} ({', '.join(made.columns)}); "
               f"ε {made.epsilon:g} spent, {made.budget_left:g} left; {made.rounds} MWEM rounds")
