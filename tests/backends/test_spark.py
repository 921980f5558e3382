"""What only the Spark backend does: the guard that stands in for privileges (Spark has none), a
session handed in by the application, Parquet for stored releases, and what it refuses by name
(the catalog, the proxies)."""
from __future__ import annotations

import pytest
import sqlalchemy as sa

import sqlanon
from tests.backends.test_worked_examples import PATIENT_COLS, PATIENT_POLICY, PATIENTS
from tests.helpers import assert_alpha_k, connect, load_table

pytestmark = pytest.mark.backends("spark")


def _session():
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


def _restricted(db_url: str, denied: set[str]):
    """A pool connection of ``db_url`` restricted as a finish query's is (SparkBackend.restrict)."""
    from sqlanon.backends.spark import SparkBackend

    engine = sa.create_engine(db_url)
    raw = engine.raw_connection()
    SparkBackend().restrict(raw, frozenset(denied))
    return engine, raw


def test_the_guard_refuses_every_way_to_a_protected_table(db_url):
    from sqlanon.backends.spark_dbapi import PermissionDenied

    load_table(db_url, "patients", PATIENT_COLS, PATIENTS)
    load_table(db_url, "wards", [("ward", "text")], [("a",), ("b",)])
    database = sa.engine.make_url(db_url).database
    spark = _session()
    spark.sql(f"CREATE VIEW `{database}`.`patients_v` AS SELECT name, age FROM `{database}`.`patients`")
    location = spark.sql(f"DESCRIBE TABLE EXTENDED `{database}`.`patients`").where("col_name = 'Location'") \
        .collect()[0].data_type
    engine, raw = _restricted(db_url, {"patients"})
    try:
        cur = raw.cursor()
        cur.execute("SELECT ward FROM wards ORDER BY ward")
        assert cur.fetchall() == [("a",), ("b",)]  # an unprotected table is read
        for sql in ["SELECT * FROM patients", f"SELECT name FROM `{database}`.patients",
                    f"SELECT name FROM spark_catalog.`{database}`.patients",
                    "SELECT ward FROM wards WHERE EXISTS (SELECT 1 FROM patients WHERE name = 'x')",
                    "SELECT (SELECT MAX(name) FROM patients)", "SELECT * FROM patients_v",
                    "WITH p AS (SELECT * FROM patients) SELECT COUNT(*) FROM p",
                    f"SELECT * FROM parquet.`{location}`",
                    "SELECT reflect('java.lang.System', 'getProperty', 'user.home')",
                    "CREATE TABLE stolen AS SELECT * FROM wards", "DROP TABLE wards", "INSERT INTO wards VALUES ('c')",
                    "CACHE TABLE c AS SELECT * FROM wards", "SET spark.sql.ansi.enabled = true"]:
            with pytest.raises(PermissionDenied):
                cur.execute(sql)
        assert not spark.catalog.tableExists("stolen", database)
        assert spark.table(f"`{database}`.wards").count() == 2
    finally:
        raw.close()
        engine.dispose()



def test_a_finish_query_reads_the_release_and_no_other_pipeline_table(db_url):
    """The connection's own computed tables (the selection's copy among them) are readable by the
    finish query only when handed over by name (relinquish), however the query names them."""
    from sqlanon.backends.spark import SparkBackend
    from sqlanon.backends.spark_dbapi import PermissionDenied

    engine = sa.create_engine(db_url)
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        cur.execute("CACHE TABLE sel AS SELECT 1 AS id, 'Alice' AS name")
        cur.execute("CACHE TABLE rel AS SELECT 1 AS id, '*' AS name")
        SparkBackend().relinquish(raw, frozenset({"patients"}), ["rel"])
        cur.execute("SELECT name FROM rel AS sel")
        assert cur.fetchall() == [("*",)]
        for sql in ["SELECT * FROM sel", "SELECT * FROM (SELECT * FROM sel) AS rel",
                    "WITH rel AS (SELECT * FROM sel) SELECT * FROM rel",
                    "SELECT * FROM rel WHERE id IN (SELECT id FROM sel)"]:
            with pytest.raises(PermissionDenied):
                cur.execute(sql)
        SparkBackend().restrict(raw, frozenset({"patients"}))  # a pass-through: nothing handed over
        with pytest.raises(PermissionDenied):
            cur.execute("SELECT * FROM rel")
    finally:
        raw.close()
        engine.dispose()

def test_a_session_handed_in_serves_its_tables_and_the_release_holds(db_url):
    load_table(db_url, "patients", PATIENT_COLS, PATIENTS)
    load_table(db_url, "wards", [("ward", "text")], [("a",)])
    spark = _session()
    spark.catalog.setCurrentDatabase(sa.engine.make_url(db_url).database)
    try:
        with sqlanon.connect(spark=spark, policy=PATIENT_POLICY) as db:
            assert db.execute("SELECT ward FROM wards").rows == [("a",)]
            res = db.execute("SELECT age, sex, zip, disease FROM patients")
    finally:
        from sqlanon.backends.spark_session import use

        spark.catalog.setCurrentDatabase("default")
        use(None)
    assert res.report.method in ("alpha_k", "mondrian", "sabre")
    assert_alpha_k(res.rows, qi=[0, 1, 2], sens=3, k=2, alpha=0.5)
    # the note says what is missing without advice that cannot work on Spark
    assert [n for n in res.report.notes if n.startswith("no catalog")] == [
        "no catalog: nothing defends across queries (differencing, repeated or complementary releases); "
        "Spark SQL cannot keep one"]


def test_a_stored_release_is_a_parquet_table(db_url):
    load_table(db_url, "patients", PATIENT_COLS, PATIENTS)
    with sqlanon.connect(db_url, PATIENT_POLICY) as db:
        report = db.materialize("patients", "patients_anon")
    database = sa.engine.make_url(db_url).database
    spark = _session()
    provider = spark.sql(f"DESCRIBE TABLE EXTENDED `{database}`.`patients_anon`").where("col_name = 'Provider'") \
        .collect()[0].data_type
    rows = [tuple(r) for r in spark.table(f"`{database}`.`patients_anon`").collect()]
    assert provider.lower() == "parquet" and len(rows) == report.rows_released
    assert_alpha_k(rows, qi=[0, 1, 2], sens=3, k=2, alpha=0.5)


def test_a_checkpoint_directory_keeps_the_tables_in_files_and_the_release(db_url, tmp_path):
    """Where the session has a checkpoint directory, a pipeline table is files there (they
    outlive an executor lost), deleted when the table is; an (α,k) run releases the very rows
    it releases from the executors' memory, and leaves no table's files behind."""
    load_table(db_url, "patients", PATIENT_COLS, PATIENTS)
    table = PATIENT_POLICY["tables"]["patients"]
    policy = {"tables": {"patients": {  # one quasi-identifier: few rounds, every loop of the search
        **table, "quasi_identifiers": {"age": table["quasi_identifiers"]["age"]},
        "privacy": {**table["privacy"], "method": "alpha_k"}}}}
    query = "SELECT age, disease FROM patients"
    with sqlanon.connect(db_url, policy) as db:
        in_memory = sorted(db.execute(query).rows, key=repr)
    context = _session().sparkContext
    context.setCheckpointDir(str(tmp_path))
    written = lambda: sorted(p.name for p in tmp_path.glob("*/rdd-*") if any(p.glob("part-*")))  # noqa: E731
    try:
        engine = sa.create_engine(db_url)
        raw = engine.raw_connection()
        try:
            cur = raw.cursor()
            cur.execute("CACHE TABLE t AS SELECT 1 AS id")
            assert len(written()) == 1
            cur.execute("INSERT INTO t SELECT 2")  # the table's new rows: new files, the old ones gone
            cur.execute("SELECT id FROM t ORDER BY id")
            assert cur.fetchall() == [(1,), (2,)] and len(written()) == 1
            cur.execute("DROP TABLE IF EXISTS t")
            assert written() == []
        finally:
            raw.close()
            engine.dispose()
        with sqlanon.connect(db_url, policy) as db:
            res = db.execute(query)
        assert res.report.method == "alpha_k" and sorted(res.rows, key=repr) == in_memory
        assert written() == []
    finally:
        getattr(context._jsc.sc(), "checkpointDir_$eq")(context._jvm.scala.Option.empty())  # none again


def test_the_catalog_and_the_proxy_are_refused_by_name(db_url, tmp_path):
    import yaml

    from sqlanon.proxy.server import Proxy, ProxyConfig, ProxyError

    load_table(db_url, "patients", PATIENT_COLS, PATIENTS)
    with pytest.raises(sqlanon.BackendError, match="Spark SQL cannot keep sqlanon's catalog"):
        sqlanon.connect(db_url, PATIENT_POLICY, catalog=True)
    # differential privacy spends a budget the catalog's ledger keeps
    dp = {"tables": {"patients": {**PATIENT_POLICY["tables"]["patients"], "privacy": {
        **PATIENT_POLICY["tables"]["patients"]["privacy"],
        "epsilon": {"per_query": 1.0, "budget": 10.0, "per": "client", "window": "30d"}}}}}
    with sqlanon.connect(db_url, dp) as db:
        with pytest.raises(sqlanon.QueryRejected, match="differential privacy without a catalog") as refused:
            db.execute("SELECT COUNT(*) FROM patients")
        assert "Spark SQL cannot keep the catalog" in str(refused.value)
        # the advice that works there: a ledger of its own (tests/backends/test_spark_dp.py follows it)
        assert "'sqlanon db upgrade --catalog URL'" in str(refused.value)
    policy, users = tmp_path / "policy.yml", tmp_path / "users.yml"
    policy.write_text(yaml.safe_dump(PATIENT_POLICY, allow_unicode=True), encoding="utf-8")
    users.write_text("users: {}\n", encoding="utf-8")
    with pytest.raises(ProxyError, match="does not serve Spark SQL"):
        Proxy(ProxyConfig(url=db_url, policy=policy, users=users, listen_pg=("127.0.0.1", 0), without_catalog=True))


def test_the_cli_reads_a_warehouse_and_materializes_parquet(db_url, tmp_path):
    """A new process has a catalog of its own: ``?parquet=DIR`` makes the warehouse's Parquet
    directories its tables, and a stored release is one more directory there."""
    import subprocess
    import sys

    import yaml

    load_table(db_url, "patients", PATIENT_COLS, PATIENTS)
    database = sa.engine.make_url(db_url).database
    warehouse = _session().conf.get("spark.sql.warehouse.dir").removeprefix("file:")
    url = (f"spark:///{database}?master=local[1]&parquet={warehouse}/{database}.db&spark.sql.warehouse.dir={warehouse}"
           "&spark.ui.enabled=false&spark.sql.shuffle.partitions=1")
    policy = tmp_path / "policy.yml"
    policy.write_text(yaml.safe_dump(PATIENT_POLICY, allow_unicode=True), encoding="utf-8")

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "sqlanon", *args, "--db", url, "--policy", str(policy)],
                              capture_output=True, text=True, timeout=600)

    out = cli("query", "SELECT age, sex, zip, disease FROM patients")
    assert out.returncode == 0, out.stderr
    assert "k-anonymity" in out.stdout
    out = cli("materialize", "patients", "--into", "released", "--k", "3")
    assert out.returncode == 0, out.stderr
    spark = _session()
    spark.sql(f"CREATE TABLE `{database}`.`released` USING PARQUET LOCATION '{warehouse}/{database}.db/released'")
    released = spark.table(f"`{database}`.`released`")
    assert released.columns == ["age", "sex", "zip", "disease", "nationality"]  # no identifier
    rows = [tuple(r) for r in released.collect()]
    assert_alpha_k(rows, qi=[0, 1, 2], sens=3, k=3, alpha=0.5)


def test_sabre_releases_k_l_and_t_on_spark(db_url):
    """SABRE on Spark, the released rows judged by plain Python (tests/backends/test_sabre.py's
    measures): every class has k rows, l values and an equal-distance EMD within t of the whole
    selection; the sensitive values travel unchanged."""
    from collections import Counter

    from tests.backends.test_sabre import by_class, equal_emd

    load_table(db_url, "patients", PATIENT_COLS, PATIENTS)
    k, l, t = 3, 2, 0.5  # noqa: E741
    table = PATIENT_POLICY["tables"]["patients"]
    policy = {"tables": {"patients": {**table, "privacy": {"method": "sabre", "k": k, "l": l, "t": t,
                                                           "max_suppression": 0}}}}
    with connect(db_url, policy=policy) as db:
        res = db.execute("SELECT age, sex, zip, disease FROM patients")
    whole = Counter(r[5] for r in PATIENTS)
    assert res.report.method == "sabre" and Counter(r[3] for r in res.rows) == whole
    for counts in by_class(res.rows, (0, 1, 2), 3).values():
        assert sum(counts.values()) >= k and len(counts) >= l
        assert equal_emd(counts, whole) <= t + 1e-9


def test_global_recoding_finds_the_optimum_on_spark(db_url, tmp_path):
    """Global recoding on Spark: k holds on the released rows and no node of the lattice, each
    tried here in Python (tests/backends/test_global.py), loses less."""
    import itertools
    from collections import Counter

    from tests.backends.test_global import SMALL, _loss, _node_outcome, _write, level_of

    rows = [(a[0], b[0], c[0], s) for a, b, c, s in zip(SMALL[0] * 4, SMALL[1] * 6, SMALL[2] * 12, "xyz" * 8)]
    load_table(db_url, "small", [("pid", "int"), ("a", "text"), ("b", "text"), ("c", "text"), ("s", "text")],
               [(i, *r) for i, r in enumerate(rows)])
    k = 3
    policy = {"tables": {"small": {
        "identifiers": ["pid"],
        "quasi_identifiers": {n: {"type": "taxonomy", "file": p} for n, p in zip("abc", _write(tmp_path))},
        "sensitive": {"s": {}}, "privacy": {"k": k, "max_suppression": 1.0, "method": "global"}}}}
    best = min(_loss(*_node_outcome(rows, node, k, None, None)[:1], node, len(rows))
               for node in itertools.product(*[range(len(h[0])) for h in SMALL]))
    with connect(db_url, policy=policy) as db:
        res = db.execute("SELECT a, b, c FROM small")
    released = [tuple(r) for r in res.rows]
    assert res.report.method == "global" and released
    assert min(Counter(released).values()) >= k
    node = tuple(level_of({r[i] for r in released}, SMALL[i]) for i in range(3))
    assert _loss(released, node, len(rows)) <= best + 1e-9
