"""Properties of every release: byte-exact classes, random order, no leftovers."""
from __future__ import annotations

import pytest

import sqlanon
from tests.helpers import assert_alpha_k, connect, load_table


def test_classes_are_formed_byte_for_byte(db_url):
    """MariaDB's default collation merges 'ABC', 'abc' and 'abc '; an attacker does not."""
    values = ["ABC", "abc", "abc "] * 2 + ["Abc"]
    load_table(db_url, "t", [("code", "text"), ("d", "text")], [(v, f"d{i % 2}") for i, v in enumerate(values)])
    policy = {"tables": {"t": {"quasi_identifiers": {"code": {"type": "suppress"}}, "sensitive": {"d": {}},
                               "privacy": {"k": 2, "max_suppression": 1.0}}}}
    with connect(db_url, policy=policy) as db:
        res = db.execute("SELECT code, d FROM t")
    released = [r[0] for r in res.rows]
    # the lone 'Abc' must never be released as itself: merged into 'abc' it would be
    # a class of one for anyone who reads the bytes
    assert "Abc" not in released and len(released) == 7
    assert all(released.count(v) in (0, 2) for v in ("ABC", "abc", "abc "))
    assert_alpha_k(res.rows, qi=[0], sens=1, k=2, alpha=None)


def test_release_order_is_random(db_url):
    rows = [(i // 5 * 5, f"v{i}") for i in range(300)]
    load_table(db_url, "s", [("a", "int"), ("v", "text")], rows)
    policy = {"tables": {"s": {"quasi_identifiers": {"a": {"type": "interval", "levels": [10]}},
                               "insensitive": ["v"], "privacy": {"k": 5}}}}
    with connect(db_url, policy=policy) as db:
        first = [r[1] for r in db.execute("SELECT a, v FROM s").rows]
        second = [r[1] for r in db.execute("SELECT a, v FROM s").rows]
    source = [v for _, v in rows]
    assert sorted(first) == sorted(source)
    assert first != source and sorted(first, key=source.index) != first and first != second


def test_limit_without_order_is_a_random_sample(db_url):
    """The released table may be stored in source order: LIMIT must not read its first rows."""
    rows = [(i // 5 * 5, f"v{i:03d}") for i in range(300)]
    load_table(db_url, "s", [("a", "int"), ("v", "text")], rows)
    policy = {"tables": {"s": {"quasi_identifiers": {"a": {"type": "interval", "levels": [10]}},
                               "insensitive": ["v"], "privacy": {"k": 5}}}}
    with connect(db_url, policy=policy) as db:
        samples = [sorted(r[1] for r in db.execute("SELECT a, v FROM s LIMIT 20").rows) for _ in range(3)]
    assert all(len(s) == 20 for s in samples)
    first_twenty = sorted(v for _, v in rows[:20])
    assert first_twenty not in samples and samples[0] != samples[1] != samples[2]
    # spread over the table, not a contiguous run of storage order
    assert max(max(s) for s in samples) > "v100"


def test_user_order_is_kept(db_url):
    load_table(db_url, "s", [("a", "int"), ("v", "text")], [(i, f"v{i}") for i in range(40)])
    policy = {"tables": {"s": {"quasi_identifiers": {"a": {"type": "interval", "levels": [10]}},
                               "insensitive": ["v"], "privacy": {"k": 5}}}}
    with connect(db_url, policy=policy) as db:
        res = db.execute("SELECT a, COUNT(*) AS n FROM s WHERE a >= 10 GROUP BY a ORDER BY a LIMIT 2")
    assert res.columns == ["a", "n"] and len(res.rows) == 2
    assert [r[0] for r in res.rows] == sorted(r[0] for r in res.rows)
    assert sum(r[1] for r in res.rows) == 20  # [10,20) and [20,30), ten rows each


def test_a_latin1_column_is_classed_and_released_as_stored(db_url, backend):
    """MariaDB/MySQL: text is compared after conversion to the session's utf8mb4; a latin1 column
    must neither fail (collation mix) nor change its values. Elsewhere the column is plain text."""
    import sqlalchemy as sa
    from sqlalchemy.dialects import mysql

    text = mysql.VARCHAR(10, charset="latin1") if backend == "mysql" else sa.String(10)
    rows = [("10115", "a"), ("10115", "b"), ("M\u00fcn", "a"), ("M\u00fcn", "b"), ("m\u00fcn", "a"), ("m\u00fcn", "b")]
    engine = sa.create_engine(db_url)
    l1 = sa.Table("l1", sa.MetaData(), sa.Column("zip", text), sa.Column("d", text))
    l1.create(engine)
    with engine.begin() as c:
        c.execute(l1.insert(), [{"zip": z, "d": d} for z, d in rows])
    engine.dispose()
    policy = {"tables": {"l1": {"quasi_identifiers": {"zip": {"type": "mask", "levels": [1, 2]}},
                                "sensitive": {"d": {}}, "privacy": {"k": 2, "max_suppression": 0}}}}
    with connect(db_url, policy=policy) as db:
        res = db.execute("SELECT zip, d FROM l1")
    # 'Mün' and 'mün' are two classes of two, byte for byte, released as stored
    assert sorted(map(tuple, res.rows)) == sorted(rows)


def test_groups_of_fewer_than_k_released_rows_are_withheld(db_url):
    """A GROUP BY over the release must not single out the few rows behind a rare value."""
    rows = [(20 + i % 10, "flu" if i < 12 else "cold" if i < 19 else "hiv") for i in range(20)]
    load_table(db_url, "g", [("age", "int"), ("d", "text")], rows)
    policy = {"tables": {"g": {"quasi_identifiers": {"age": {"type": "interval", "levels": [10]}},
                               "sensitive": {"d": {}}, "privacy": {"k": 3, "method": "alpha_k"}}}}
    with connect(db_url, policy=policy) as db:
        grouped = dict(db.execute("SELECT d, COUNT(*) FROM g GROUP BY d").rows)
        having = dict(db.execute("SELECT d, COUNT(*) FROM g GROUP BY d HAVING COUNT(*) < 10").rows)
    assert grouped == {"flu": 12, "cold": 7}  # the one 'hiv' row is released, but not as a group
    assert having == {"cold": 7}


def test_progress_is_told_every_stage(db_url):
    load_table(db_url, "g", [("age", "int"), ("d", "text")], [(20 + i % 10, "flu" if i % 3 else "cold") for i in range(30)])
    policy = {"tables": {"g": {"quasi_identifiers": {"age": {"type": "interval", "levels": [10]}},
                               "sensitive": {"d": {}}, "privacy": {"k": 3}}}}
    seen: list[str] = []
    with connect(db_url, policy=policy) as db:
        res = db.execute("SELECT age, d FROM g", progress=seen.append)
    stages = [m.split(":")[0] for m in seen]
    assert stages[0] == "plan" and stages[-1] == "finish"
    assert {"pushdown", "anonymize", "verify"} <= set(stages)
    assert len(seen) == res.report.statements


def test_a_narrow_selection_is_refused_without_saying_how_narrow(db_url):
    load_table(db_url, "g", [("age", "int"), ("d", "text")], [(20 + i % 40, "flu" if i % 3 else "cold") for i in range(80)])
    policy = {"tables": {"g": {"quasi_identifiers": {"age": {"type": "interval", "levels": [10, 40]}},
                               "sensitive": {"d": {}}, "privacy": {"k": 2, "min_rows": 20}}}}
    with connect(db_url, policy=policy) as db:
        assert len(db.execute("SELECT age, d FROM g WHERE age < 40").rows) == 40
        messages = set()
        for where in ("age = 25", "age > 100"):  # two rows, and none: refused alike
            try:
                db.execute(f"SELECT age, d FROM g WHERE {where}")
            except sqlanon.ReleaseRefused as e:
                messages.add(str(e))
        assert len(messages) == 1 and "min_rows=20" in messages.pop()


def test_the_search_is_a_fixed_number_of_statements_whatever_the_rounds(db_url):
    """Where the database runs a loop itself, the (α,k) search sends as many statements for a
    selection that needs one round as for one that needs every level of every hierarchy."""
    rows = [(20 + i % 60, f"z{i % 97:03d}", "flu" if i % 3 else "hiv") for i in range(600)]
    load_table(db_url, "g", [("age", "int"), ("zip", "text"), ("d", "text")], rows)
    policy = {"tables": {"g": {"quasi_identifiers": {"age": {"type": "interval", "levels": [5, 20, 60]},
                                                     "zip": {"type": "mask", "levels": [1, 2, 3]}},
                               "sensitive": {"d": {}},
                               "privacy": {"k": 4, "alpha": {"value": 0.5, "protect": ["hiv"]}, "method": "alpha_k"}}}}
    with connect(db_url, policy=policy) as db:
        few = db.execute("SELECT age, zip, d FROM g WHERE age = 20 AND zip = 'z020'").report
        many = db.execute("SELECT age, zip, d FROM g").report
        server_loop = db.db.backend.loop("SELECT 1", []) is not None
    rounds = [int(n.split()[0]) for r in (few, many) for n in r.notes if "search round" in n]
    assert rounds[0] < rounds[1]
    assert (few.statements == many.statements) == server_loop


def test_verification_reads_text_byte_for_byte_whatever_its_collation(db_url, backend):
    """verify/reading.py leaves a column unconverted only where the backend finds it already
    compares byte for byte: a table of the server's default collation is converted (three
    classes, not one), a column written as the pipelines write text is read as it is."""
    from sqlglot import exp

    from sqlanon.backends.connect import open_database
    from sqlanon.context import RunContext
    from sqlanon.sql.templates import col, table
    from sqlanon.verify.reading import reader

    load_table(db_url, "t", [("a", "text")], [("abc",), ("ABC",), ("abc ",)])
    db = open_database(db_url)
    try:
        with RunContext(db) as ctx:
            be = ctx.backend
            stored = reader("t", ["a"], ctx)
            assert stored.exact == frozenset()
            classes = ctx.query(exp.select(exp.Count(this=exp.Star())).from_(
                exp.select(stored.text("a")).from_(table("t")).group_by(stored.text("a")).subquery("g")))
            assert classes[0][0] == 3
            written = ctx.create_temp("w", exp.select(exp.alias_(be.binary_text(col("a")), "a")).from_(table("t")))
            assert reader(written, ["a"], ctx).exact == (frozenset({"a"}) if backend == "mysql" else frozenset())
    finally:
        db.dispose()


def test_cell_keys_tell_apart_what_an_encoding_could_merge(db_url):
    """The cell key (Backend.cell_key) joins each row to its cell: tuples that a careless
    encoding of the values would make alike (a shifted boundary, a quote or backslash, NULL
    against the text 'NULL', case and trailing spaces under a lax collation) get keys of their own."""
    from sqlglot import exp

    from sqlanon.backends.connect import open_database
    from sqlanon.context import RunContext
    from sqlanon.sql.templates import col, table

    tuples = [("a", "bc"), ("ab", "c"), ("a'", "b"), ("a", "'b"), ("a\\", "'b"), ("a\\'", "b"), (None, "x"),
              ("NULL", "x"), ("'NULL'", "x"), ("", None), (None, ""), ("abc", ""), ("ABC", ""), ("abc ", ""),
              ("a','b", ""), ("a", "','b"), ("a:b", "1,1"), ("a", "b:1,1")]
    load_table(db_url, "t", [("u", "text"), ("v", "text")], tuples * 2)
    db = open_database(db_url)
    try:
        with RunContext(db) as ctx:
            key = ctx.backend.cell_key([col("u"), col("v")])
            keyed = exp.select(exp.alias_(key, "k")).from_(table("t")).subquery("x")
            found = ctx.query(exp.select(exp.Count(this=exp.Distinct(expressions=[col("k")])),
                                         exp.Count(this=exp.Star())).from_(keyed))
    finally:
        db.dispose()
    assert tuple(found[0]) == (len(tuples), 2 * len(tuples))


@pytest.mark.backends("mysql")
def test_session_caps_are_set_from_the_connection_url(db_url):
    """MariaDB's session caps (join buffer, in-memory internal tables) are sqlanon's defaults
    unless the connection URL sets them, for a busy server; a value that is not a number of
    bytes is refused before any connection."""
    from sqlanon.backends.connect import open_database
    from sqlanon.errors import BackendError

    def caps(url: str) -> tuple:
        db = open_database(url)
        try:
            with db.engine.connect() as c:
                return tuple(c.exec_driver_sql("SELECT @@session.tmp_table_size, @@session.join_buffer_size").one())
        finally:
            db.dispose()

    sep = "&" if "?" in db_url else "?"
    assert caps(db_url) == (1 << 30, 1 << 28)
    assert caps(f"{db_url}{sep}tmp_table_size=268435456&join_buffer_size=8388608") == (1 << 28, 1 << 23)
    with pytest.raises(BackendError, match="tmp_table_size"):
        open_database(f"{db_url}{sep}tmp_table_size=1;SET")


@pytest.mark.backends("mysql")
def test_session_caps_are_built_as_statements_of_known_names(db_url):
    """A session cap is written as a sqlglot statement whose name is one of SESSION_CAPS, quoted,
    and whose value is an integer literal: the server reads the quoted name, and anything else
    is refused before it could reach the server as text."""
    from sqlanon.backends.connect import open_database
    from sqlanon.backends.mysql import set_cap
    from sqlanon.errors import BackendError

    db = open_database(db_url)
    try:
        with db.engine.connect() as c:
            c.exec_driver_sql(db.backend.render(set_cap("sort_buffer_size", 3 << 20)))
            assert c.exec_driver_sql("SELECT @@session.sort_buffer_size").scalar() == 3 << 20
    finally:
        db.dispose()
    assert db.backend.render(set_cap("tmp_table_size", 1 << 30)) == "SET SESSION `tmp_table_size` = 1073741824"
    for name, value in (("sql_mode", 0), ("tmp_table_size` = 1, sql_mode = `", 1), ("tmp_table_size", "1;SET"),
                        ("tmp_table_size", -1), ("tmp_table_size", True)):
        with pytest.raises(BackendError):
            set_cap(name, value)  # type: ignore[arg-type]


@pytest.mark.backends("mysql")
def test_a_server_that_asks_for_full_group_by_still_releases(db_url):
    """The frequency tables read each value their cell key fixes without an aggregate
    (Backend.fixed_value), which ONLY_FULL_GROUP_BY refuses: the session turns it off whatever
    the server's own mode, and the release is what it would be."""
    import sqlalchemy as sa

    rows = [(20 + i % 7, f"z{i % 3}", "yes" if i % 4 == 0 else "no") for i in range(200)]
    load_table(db_url, "g", [("age", "int"), ("zone", "text"), ("answer", "text")], rows)
    policy = {"tables": {"g": {
        "quasi_identifiers": {"age": {"type": "interval", "levels": [5, 10]}, "zone": {"type": "suppress"}},
        "sensitive": {"answer": {}},
        "privacy": {"k": 4, "alpha": {"value": 0.5, "protect": ["yes"]}, "method": "alpha_k", "max_suppression": 1}}}}
    engine = sa.create_engine(db_url)
    with engine.connect() as c:
        before = c.exec_driver_sql("SELECT @@GLOBAL.sql_mode").scalar()
        c.execute(sa.text("SET GLOBAL sql_mode = :m"), {"m": f"{before},ONLY_FULL_GROUP_BY".lstrip(",")})
    try:
        with connect(db_url, policy=policy) as db:
            res = db.execute("SELECT age, zone, answer FROM g")
    finally:
        with engine.connect() as c:
            c.execute(sa.text("SET GLOBAL sql_mode = :m"), {"m": before})
        engine.dispose()
    assert len(res.rows) == len(rows)
    assert_alpha_k(res.rows, qi=[0, 1], sens=2, k=4, alpha=0.5, protect=["yes"])
