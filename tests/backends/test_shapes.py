"""Every accepted query shape returns what the same query returns when run directly on the
released rows: the release is stored once with ``materialize`` (Mondrian is deterministic, so
the stored release and the one each query makes are the same), and both answers are compared."""
from __future__ import annotations

import random
from collections import Counter

import pytest
import sqlalchemy as sa

from tests.helpers import connect, load_table

K = 3
ZIPS = ["10115", "10117", "10119", "20095", "20097", "80331", "80333"]
DISTRICTS = {"10": "Berlin", "20": "Hamburg", "80": "München"}
POLICY = {"tables": {"people": {
    "identifiers": ["pid"],
    "quasi_identifiers": {"zip": {"type": "mask", "levels": [1, 2, 3, 5]}},
    "sensitive": {"disease": {}},
    "insensitive": ["visits"],
    "privacy": {"k": K, "method": "mondrian", "max_suppression": 0}}}}

# (query through sqlanon, the same query over the stored release `rel` and the lookup `districts`)
SHAPES = [
    ("SELECT zip, disease FROM people", "SELECT zip, disease FROM rel"),
    ("SELECT DISTINCT zip FROM people", "SELECT DISTINCT zip FROM rel"),
    ("SELECT COUNT(*) FROM people", "SELECT COUNT(*) FROM rel"),
    ("SELECT zip, COUNT(*), SUM(visits), MAX(disease) FROM people GROUP BY zip",
     f"SELECT zip, COUNT(*), SUM(visits), MAX(disease) FROM rel GROUP BY zip HAVING COUNT(*) >= {K}"),
    ("SELECT zip, disease, COUNT(*) FROM people GROUP BY zip, disease HAVING COUNT(*) > 1",
     f"SELECT zip, disease, COUNT(*) FROM rel GROUP BY zip, disease HAVING COUNT(*) > 1 AND COUNT(*) >= {K}"),
    ("SELECT UPPER(zip), CASE WHEN disease = 'flu' THEN 1 ELSE 0 END AS f, visits * 2 FROM people ORDER BY f",
     "SELECT UPPER(zip), CASE WHEN disease = 'flu' THEN 1 ELSE 0 END AS f, visits * 2 FROM rel ORDER BY f"),
    ("SELECT d.district, p.zip, p.disease FROM people p JOIN districts d ON d.zip = p.zip",
     "SELECT d.district, p.zip, p.disease FROM rel p JOIN districts d ON d.zip = p.zip"),
    ("SELECT d.district, COUNT(*) FROM districts d JOIN people p ON p.zip = d.zip WHERE d.district <> 'Hamburg' "
     "GROUP BY d.district",
     f"SELECT d.district, COUNT(*) FROM districts d JOIN rel p ON p.zip = d.zip WHERE d.district <> 'Hamburg' "
     f"GROUP BY d.district HAVING COUNT(*) >= {K}"),
    # CTEs and derived tables that only project the protected rows are merged into the query
    ("WITH x AS (SELECT zip, disease FROM people) SELECT disease, COUNT(*) AS n FROM x GROUP BY disease",
     f"SELECT disease, COUNT(*) AS n FROM rel GROUP BY disease HAVING COUNT(*) >= {K}"),
    ("SELECT s.z, s.v + 1 FROM (SELECT zip AS z, visits AS v FROM people) AS s", "SELECT zip, visits + 1 FROM rel"),
    ("WITH x AS (SELECT * FROM people) SELECT d.district, x.disease FROM x JOIN districts d ON d.zip = x.zip",
     "SELECT d.district, x.disease FROM rel x JOIN districts d ON d.zip = x.zip"),
    # outer joins run on the released rows: labels without a district, districts without a row
    ("SELECT p.zip, p.disease, d.district FROM people p LEFT JOIN districts d ON d.zip = p.zip "
     "AND d.district = 'Berlin'",
     "SELECT p.zip, p.disease, d.district FROM rel p LEFT JOIN districts d ON d.zip = p.zip "
     "AND d.district = 'Berlin'"),
    ("SELECT d.zip, p.disease FROM people p RIGHT OUTER JOIN districts d ON d.zip = p.zip",
     "SELECT d.zip, p.disease FROM rel p RIGHT OUTER JOIN districts d ON d.zip = p.zip"),
    ("SELECT d.zip FROM districts d LEFT JOIN people p ON p.zip = d.zip WHERE p.zip IS NULL",
     "SELECT d.zip FROM districts d LEFT JOIN rel p ON p.zip = d.zip WHERE p.zip IS NULL"),
    ("SELECT DISTINCT d.district, p.disease FROM districts d LEFT JOIN people p ON p.zip = d.zip",
     "SELECT DISTINCT d.district, p.disease FROM districts d LEFT JOIN rel p ON p.zip = d.zip"),
    ("SELECT d.district, COUNT(p.zip), SUM(p.visits) FROM districts d LEFT JOIN people p ON p.zip = d.zip "
     "GROUP BY d.district",
     f"SELECT d.district, COUNT(p.zip), SUM(p.visits) FROM districts d LEFT JOIN rel p ON p.zip = d.zip "
     f"GROUP BY d.district HAVING COUNT(p.zip) >= {K}"),
]


def normal(rows) -> Counter:
    return Counter(tuple(str(v) if v is not None else None for v in r) for r in rows)


def load(db_url: str) -> None:
    rng = random.Random(11)
    rows = [(i, rng.choice(ZIPS), rng.choice(["flu", "cold", "gout"]), rng.randint(0, 9)) for i in range(150)]
    load_table(db_url, "people", [("pid", "int"), ("zip", "text"), ("disease", "text"), ("visits", "int")], rows)
    # the lookup holds every label a zip may be released as, down to the masked prefixes
    labels = sorted({z[:n] + "*" * (5 - n) for z in ZIPS for n in range(6)})
    load_table(db_url, "districts", [("zip", "text"), ("district", "text")],
               [(z, DISTRICTS.get(z[:2], "?")) for z in labels])


@pytest.fixture
def release(db_url):
    load(db_url)
    with connect(db_url, policy=POLICY) as db:
        db.materialize("people", "rel")
        yield db


@pytest.mark.parametrize("through,direct", SHAPES, ids=[s[0][:60] for s in SHAPES])
def test_a_query_equals_itself_over_the_stored_release(db_url, release, through, direct):
    answer = release.execute(through)
    assert normal(answer.rows) == normal(direct_rows(db_url, direct))
    assert len(answer.rows) > 0


def direct_rows(db_url: str, sql: str) -> list:
    """``sql`` run on the database itself, not through sqlanon."""
    engine = sa.create_engine(db_url)
    with engine.connect() as c:
        rows = c.execute(sa.text(sql)).fetchall()
    engine.dispose()
    return rows
