"""The Spark session a ``spark://`` URL names: one per process, as Spark itself has one.

``spark:///db`` runs Spark in this process (``local[*]``, or ``?master=local[2]``);
``spark://host:7077/db`` connects to that standalone master. Other query parameters that start
with ``spark.`` are the session's settings (``?spark.sql.shuffle.partitions=8``; a Hive metastore
with ``spark.sql.catalogImplementation=hive``). ``?parquet=DIR`` makes every Parquet directory
in DIR a table of ``db`` (what a new process needs to see a warehouse without a metastore: the
CLI). ``?checkpoint=DIR`` (a directory every executor reaches: HDFS, S3, a shared mount) makes
the pipeline's tables files there, which survive a lost executor, instead of blocks in the
executors' memory (spark_dbapi). A session the application made itself (``sqlanon.connect(spark=session)``) is used as it
is: its settings are the application's (its checkpoint directory too:
``spark.sparkContext.setCheckpointDir(DIR)``).
"""
from __future__ import annotations

from typing import Any

#: the session an application handed in (``use``); else the URL's is made on first use
_handed: list[Any] = []

#: settings that keep a session quiet and make generated SQL mean what sqlglot wrote: a table
#: made by CREATE TABLE is a data-source table (Parquet), not a Hive table needing Hive; ANSI
#: mode off is Spark's default and what the spark dialect writes for
DEFAULTS = {"spark.ui.showConsoleProgress": "false",
            "spark.sql.legacy.createHiveTableByDefault": "false",
            # a run sends hundreds of statements: the status of each kept for the UI adds up
            "spark.sql.ui.retainedExecutions": "20", "spark.ui.retainedJobs": "50", "spark.ui.retainedStages": "50"}


def use(session: Any | None) -> None:
    """Serve ``spark://`` URLs from ``session`` (an application's own SparkSession; None: no
    longer)."""
    _handed[:] = [] if session is None else [session]


def handed_in(session: Any) -> str:
    """The URL of an application's own ``session``, served from here on (its current database)."""
    use(session)
    return f"spark:///{session.catalog.currentDatabase()}"


def spark_session(url: str = "", conf: dict[str, str] | None = None) -> Any:
    """The process's session: the one handed in, the active one, or a new one for ``url``."""
    if _handed:
        return _handed[0]
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    settings = {**DEFAULTS, **(conf or {})}
    master = settings.pop("master", None) or _master(url)
    parquet = settings.pop("parquet", None)
    checkpoints = settings.pop("checkpoint", None)
    builder = SparkSession.builder.master(master).appName("sqlanon")
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    if checkpoints:
        session.sparkContext.setCheckpointDir(checkpoints)
    if parquet:
        _register(session, url, parquet)
    return session


def _register(session: Any, url: str, directory: str) -> None:
    """Every Parquet directory in ``directory`` as a table of the URL's database (made when missing)."""
    from pathlib import Path

    from sqlalchemy.engine import make_url
    from sqlglot import exp

    database = exp.to_identifier(make_url(url).database or "default", quoted=True)
    session.sql(exp.Create(this=database, kind="SCHEMA", exists=True).sql("spark"))
    for path in sorted(Path(directory).iterdir()):
        if path.is_dir() and any(path.glob("*.parquet")):
            session.sql(exp.Create(
                this=exp.Table(this=exp.to_identifier(path.name, quoted=True), db=database.copy()), kind="TABLE",
                exists=True, properties=exp.Properties(expressions=[
                    exp.FileFormatProperty(this=exp.Var(this="PARQUET")),
                    exp.LocationProperty(this=exp.Literal.string(str(path.resolve())))])).sql("spark"))


def _master(url: str) -> str:
    from sqlalchemy.engine import make_url

    u = make_url(url) if url else None
    if u is not None and u.host:
        return f"spark://{u.host}:{u.port or 7077}"
    return "local[*]"
