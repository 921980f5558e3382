"""Load UCI Adult (the repository's data/adult/adult.data) into a table ``adult``.

    python3 examples/adult/load.py adult.db                 # a SQLite file (created)
    python3 examples/adult/load.py postgresql+psycopg://…   # or any SQLAlchemy URL

Columns are adult.names' attributes with ``_`` for ``-`` (marital_status, native_country, …) and
``income`` for the class; ``?`` (missing workclass, occupation, native-country) is loaded as
NULL. The table must not exist yet. Values go to the database as bound parameters.
"""
from __future__ import annotations

import sys
from pathlib import Path

import sqlalchemy as sa

DATA = Path(__file__).resolve().parent.parent.parent / "data" / "adult" / "adult.data"
COLUMNS = [("age", "int"), ("workclass", "text"), ("fnlwgt", "int"), ("education", "text"),
           ("education_num", "int"), ("marital_status", "text"), ("occupation", "text"),
           ("relationship", "text"), ("race", "text"), ("sex", "text"), ("capital_gain", "int"),
           ("capital_loss", "int"), ("hours_per_week", "int"), ("native_country", "text"), ("income", "text")]


def rows(path: Path = DATA) -> list[dict]:
    """adult.data's records: ', '-separated, no header; the blank last line is skipped."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) != len(COLUMNS):
                continue
            out.append({name: None if p == "?" else int(p) if kind == "int" else p
                        for p, (name, kind) in zip(parts, COLUMNS)})
    return out


def load(url: str) -> int:
    """Create ``adult`` in the database at ``url`` and insert every record; returns the count."""
    engine = sa.create_engine(url)
    table = sa.Table("adult", sa.MetaData(),
                     *[sa.Column(n, sa.Integer if k == "int" else sa.String(40)) for n, k in COLUMNS])
    records = rows()
    try:
        with engine.begin() as conn:
            table.create(conn)
            for i in range(0, len(records), 5000):
                conn.execute(table.insert(), records[i:i + 5000])
    finally:
        engine.dispose()
    return len(records)


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        sys.exit(__doc__)
    target = argv[0]
    url = target if "://" in target else f"sqlite:///{Path(target).resolve()}"
    shown = sa.engine.make_url(url).render_as_string(hide_password=True)
    print(f"adult: {load(url)} rows loaded; query it with --db {shown}")


if __name__ == "__main__":
    main(sys.argv[1:])
