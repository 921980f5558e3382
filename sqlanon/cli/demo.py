"""``sqlanon demo``: the demo database and its policy in a folder, a few queries raw and
anonymized, and the commands to try next on the same files (sqlanon/demo.py does the work)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sqlanon import api
from sqlanon.cli import _fail, _table, access, main
from sqlanon.errors import SqlanonError
from sqlanon.finish.text import MEANINGS

if TYPE_CHECKING:
    from sqlanon import demo as d

#: the folder ``sqlanon demo`` uses without ``--dir``, in the current directory
DEFAULT_DIR = "sqlanon-demo"


def _classes_text(c: d.Classes) -> str:
    sizes = c.sizes
    raw_head = "raw row: " + ", ".join(c.raw_columns)
    rows, shown = [], set()
    for m in c.members:
        first = m.number not in shown
        shown.add(m.number)
        cls = "withheld" if m.number == 0 else str(m.number) + ("?" if m.also else "")
        size = str(sizes.get(m.number, "")) if first and m.number else ""
        released = [str(v) for v in m.released] if m.released is not None else ["—"] * len(c.columns)
        rows.append((cls, size, *released, ", ".join(str(v) for v in m.raw)))
    out = [_table(["class", "rows", *c.columns, raw_head], rows)]
    unsure = [m for m in c.members if m.also]
    for m in unsure:
        where = ", ".join("withheld" if n == 0 else f"class {n}" for n in m.also)
        out.append(f"?: {m.raw[0]} fits {where} as well; the released rows alone do not tell which")
    out.append(f"{len(c.members)} raw rows: {len(c.members) - c.withheld} released in {len(sizes)} classes, "
               f"{c.withheld} withheld (exact counts; the report below counts selected and withheld rows with noise, "
               "as every answer does)")
    return "\n".join(out)


@main.command("demo")
@click.option("--dir", "directory", type=click.Path(file_okay=False), default=None,
              help=f"folder for demo.db and policy.yaml (default: ./{DEFAULT_DIR}); a rerun rewrites both")
@click.option("--rows", type=int, default=5000, show_default=True, help="rows of the synthetic clinic table")
@click.option("--show", type=int, default=8, show_default=True, help="rows shown per query (the small table: all)")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def demo_cmd(directory: str | None, rows: int, show: int, fmt: str) -> None:
    """Write a demo SQLite database and its policy, run queries raw and anonymized side by side,
    and print the commands to try next."""
    from sqlanon import demo as d  # here: every other command started 29 ms later (load 10) with it

    files = d.prepare(Path(directory or DEFAULT_DIR), rows)
    try:
        with api.connect(files.url, str(files.policy), client="demo", front_end="cli", **access()) as s:
            shown = d.walk(s, files)
    except SqlanonError as e:
        _fail(e)
    commands = d.next_commands(files)
    if fmt == "json":
        click.echo(json.dumps({
            "directory": str(files.directory), "database": str(files.database), "url": files.url,
            "policy": str(files.policy),
            "queries": [{
                "sql": q.sql,
                "raw": {"columns": q.raw_columns, "rows": [list(r) for r in q.raw_rows[:show]],
                        "total": len(q.raw_rows)},
                **({"released": {"columns": q.result.columns, "rows": [list(r) for r in q.result.rows[:show]],
                                 "total": len(q.result.rows)},
                    "report": q.result.report.to_dict()} if q.result is not None else {"refused": q.refused}),
                **({"classes": [{"class": m.number or None, "also": [n or None for n in m.also],
                                 "released": list(m.released) if m.released is not None else None,
                                 "raw": dict(zip(q.classes.raw_columns, m.raw))} for m in q.classes.members]}
                   if q.classes is not None else {})} for q in shown],
            "meanings": MEANINGS,
            "next": [{"command": c, "shows": what} for c, what in commands],
        }, default=str, indent=2, ensure_ascii=False))
        return
    click.echo(f"demo folder: {files.directory}\n  {files.database.name}: patients (John's thesis, Table 1), clinic "
               f"({rows} synthetic rows), stays (one to four per clinic patient)\n  {files.policy.name}: the policy "
               "this demo applies\n")
    for q in shown:
        click.echo(f"=== {q.sql}")
        if q.result is None:
            click.echo(f"--- refused: {q.refused}\n")
            continue
        if q.classes is not None:
            click.echo("--- released rows class by class, each beside the raw row it was made from (the demo reads "
                       "its own raw rows as the database's owner; sqlanon never returns them):")
            click.echo(_classes_text(q.classes))
        else:
            click.echo("--- raw (what sqlanon never lets out):")
            click.echo(_table(q.raw_columns, q.raw_rows, show))
            click.echo("--- anonymized:")
            click.echo(_table(q.result.columns, q.result.rows, show))
        click.echo("--- report:")
        click.echo(str(q.result.report) + "\n")
    click.echo(f"The database and its policy stay in {files.directory}. Try next (copy and paste):")
    for c, what in commands:
        click.echo(f"  {c}   # {what}")
