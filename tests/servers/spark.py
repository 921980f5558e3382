"""A real Spark for the tests: pyspark's bundled Spark in local mode, in this process (Java 17 from
Debian's openjdk-17-jre-headless). One session for the whole test session: a JVM takes seconds to
start. Small and quiet: two cores, two shuffle partitions, no UI, a warehouse in a temp directory.
Each test database is a Spark database (namespace) of that session's catalog."""
from __future__ import annotations

import shutil
import tempfile

from tests.servers.local import Server

#: settings of the test session (the spark:// URL's own defaults are in sqlanon.backends.spark_session)
SETTINGS = {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2", "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false", "spark.sql.legacy.createHiveTableByDefault": "false",
            "spark.driver.memory": "1g", "spark.sql.adaptive.enabled": "false",
            # the tests' tables have a dozen rows: compiling each stage's code costs more than it
            # saves (the patients' (α,k) and SABRE, back to back: about a fifth less time)
            "spark.sql.codegen.wholeStage": "false",
            "spark.sql.ui.retainedExecutions": "20", "spark.ui.retainedJobs": "50", "spark.ui.retainedStages": "50"}


def start_spark() -> Server:
    if shutil.which("java") is None:
        raise RuntimeError("no java on PATH (Debian package openjdk-17-jre-headless)")
    from pyspark.sql import SparkSession

    base = tempfile.mkdtemp(prefix="sqlanon-spark-", dir="/tmp")
    builder = SparkSession.builder.master("local[2]").appName("sqlanon-tests")
    for key, value in {**SETTINGS, "spark.sql.warehouse.dir": f"{base}/warehouse",
                       "spark.local.dir": f"{base}/local"}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")

    def stop() -> None:
        session.stop()
        shutil.rmtree(base, ignore_errors=True)

    return Server("spark:///default", stop)
