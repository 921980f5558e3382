"""The Spark session a ``spark://`` URL names: one per process, as Spark itself has one.

``spark:///db`` runs Spark in this process (``local[*]``, or ``?master=local[2]``);
``spark://host:7077/db`` connects to that standalone master. Other query parameters that start
with ``spark.`` are the session's settings (``?spark.sql.shuffle.partitions=8``). A session the
application made itself (``sqlanon.connect(spark=session)``) is used as it is: its settings are
the application's.
"""
from __future__ import annotations

from typing import Any

#: the session an application handed in (``use``); else the URL's is made on first use
_handed: list[Any] = []

#: settings that keep a session quiet and make generated SQL mean what sqlglot wrote: a table
#: made by CREATE TABLE is a data-source table (Parquet), not a Hive table needing Hive; ANSI
#: mode off is Spark's default and what the spark dialect writes for
DEFAULTS = {"spark.ui.showConsoleProgress": "false",
            "spark.sql.legacy.createHiveTableByDefault": "false"}


def use(session: Any) -> None:
    """Serve ``spark://`` URLs from ``session`` (an application's own SparkSession)."""
    _handed[:] = [session]


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
    builder = SparkSession.builder.master(master).appName("sqlanon")
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def _master(url: str) -> str:
    from sqlalchemy.engine import make_url

    u = make_url(url) if url else None
    if u is not None and u.host:
        return f"spark://{u.host}:{u.port or 7077}"
    return "local[*]"
