"""Test helpers: load tables portably, and judge released rows in plain Python.

The checker is independent of sqlanon's SQL: it groups the returned rows by their released
quasi-identifier values, exactly as an attacker reads them (byte for byte), and counts.
"""
from __future__ import annotations

import time
from collections import Counter, defaultdict
from fractions import Fraction
from typing import Any, Callable, Iterable, Sequence

import sqlalchemy as sa

TYPES = {"int": sa.Integer, "text": lambda: sa.String(100), "float": sa.Float, "date": sa.Date}


def load_table(url: str, name: str, columns: Sequence[tuple[str, str]], rows: Iterable[Sequence[Any]]) -> None:
    engine = sa.create_engine(url)
    md = sa.MetaData()
    table = sa.Table(name, md, *[sa.Column(c, TYPES[t]()) for c, t in columns])
    md.create_all(engine)
    names = [c for c, _ in columns]
    batch = [dict(zip(names, r)) for r in rows]
    with engine.begin() as conn:
        for i in range(0, len(batch), 5000):
            conn.execute(table.insert(), batch[i:i + 5000])
    engine.dispose()


def classes(rows: Sequence[Sequence[Any]], qi: Sequence[int]) -> dict[tuple, list[Sequence[Any]]]:
    out: dict[tuple, list] = defaultdict(list)
    for r in rows:
        out[tuple(r[i] for i in qi)].append(r)
    return out


def min_class(rows: Sequence[Sequence[Any]], qi: Sequence[int]) -> int:
    return min((len(v) for v in classes(rows, qi).values()), default=0)


def max_share(rows: Sequence[Sequence[Any]], qi: Sequence[int], sens: int, protect: Sequence[Any] | None) -> Fraction:
    worst = Fraction(0)
    for members in classes(rows, qi).values():
        counts = Counter(r[sens] for r in members)
        for value, n in counts.items():
            if protect is None or value in protect:
                worst = max(worst, Fraction(n, len(members)))
    return worst


def assert_alpha_k(rows, qi, sens, k: int, alpha: float | None, protect=None) -> None:
    assert min_class(rows, qi) >= k or not rows, f"a class smaller than k={k}"
    if alpha is not None and rows:
        a = Fraction(alpha).limit_denominator(10**6)
        assert max_share(rows, qi, sens, protect) <= a, f"a protected value above alpha={alpha}"


ADULT_COLUMNS = [("age", "int"), ("workclass", "text"), ("fnlwgt", "int"), ("education", "text"),
                 ("education_num", "int"), ("marital_status", "text"), ("occupation", "text"),
                 ("relationship", "text"), ("race", "text"), ("sex", "text"), ("capital_gain", "int"),
                 ("capital_loss", "int"), ("hours_per_week", "int"), ("native_country", "text"), ("income", "text")]


def read_adult(path) -> list[tuple]:
    """UCI adult.data: ', '-separated, no header, '?' for missing (loaded as NULL)."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) != 15:
                continue
            rows.append(tuple(None if p == "?" else (int(p) if t == "int" else p)
                              for p, (_, t) in zip(parts, ADULT_COLUMNS)))
    return rows


PASSWORD = "app-pw"


def restricted(admin_url: str, policy: Any = None) -> tuple[str, str]:
    """A login of the test database that cannot read ``policy``'s tables nor the catalog, and
    the reader role the pipeline takes on: made and granted as ``sqlanon db grants`` does it,
    through the admin's URL. Returns (the login's URL, the reader role). SQLite needs neither."""
    import sqlanon
    from sqlanon.access import apply_grants, grant_statements
    from sqlanon.backends.connect import open_database
    from sqlanon.policy import load_policy

    u = sa.engine.make_url(admin_url)
    if u.get_backend_name() in ("sqlite", "spark"):  # no logins: an authorizer, a guard (spark_guard)
        return admin_url, "sqlanon_reader"
    login, reader = f"{u.database}_app", f"{u.database}_reader"
    if policy is None:
        with sqlanon.connect(admin_url, None, unrestricted=True) as s:
            pol = s.policy
    else:
        pol = load_policy(policy)
    db = open_database(admin_url)
    try:
        if u.get_backend_name() == "postgresql":
            create = (f"DO $$BEGIN CREATE ROLE \"{login}\" LOGIN PASSWORD '{PASSWORD}'; "
                      "EXCEPTION WHEN duplicate_object THEN NULL; END$$")
        else:
            create = f"CREATE USER IF NOT EXISTS `{login}`@`%` IDENTIFIED BY '{PASSWORD}'"
        apply_grants(db, [create, *grant_statements(db, pol, login, reader)])
    finally:
        db.dispose()
    return u.set(username=login, password=PASSWORD).render_as_string(hide_password=False), reader


def drop_logins(admin_url: str, database: str) -> None:
    """Drop what ``restricted`` made for ``database`` (roles outlive a dropped database)."""
    u = sa.engine.make_url(admin_url)
    engine = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as c:
            if u.get_backend_name() == "postgresql":
                c.exec_driver_sql(f'DROP ROLE IF EXISTS "{database}_app", "{database}_reader"')
            else:
                c.exec_driver_sql(f"DROP USER IF EXISTS `{database}_app`@`%%`")
                c.exec_driver_sql(f"DROP ROLE IF EXISTS `{database}_reader`")
    finally:
        engine.dispose()


def connect(url: str, policy: Any = None, **kw: Any) -> Any:
    """``sqlanon.connect`` as a deployment does it: as a login the database keeps from the
    protected tables, the pipeline under its reader role (the test database's URL is the
    administrator's)."""
    import sqlanon

    login_url, reader = restricted(url, policy)
    return sqlanon.connect(login_url, policy, reader_role=reader, **kw)


#: where a method withholds rows, an answer reports the selection's size with discrete Laplace
#: noise of scale 2 (sqlanon/verify/noise.py): off by more than this with probability e^-20
NOISE = 40


def about(reported: int, exact: int) -> bool:
    """A noisy count as an answer reports it: within NOISE of the exact one."""
    return abs(reported - exact) <= NOISE


def wait_for(condition: Callable[[], object], what: str = "the condition", timeout: float = 60.0) -> None:
    """Poll until `condition` holds: servers end sessions and drop temp tables in the background."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
