"""sqlanon: SQL-pushdown anonymization inside SQLite, PostgreSQL and MariaDB/MySQL.

    import sqlanon
    db = sqlanon.connect("sqlite:///demo.db", policy="policy.yml")
    res = db.execute("SELECT age, zip, disease FROM patients WHERE age BETWEEN 30 AND 50")
    res.columns, res.rows, res.report
"""
from sqlanon.api import Session, connect
from sqlanon.errors import BackendError, PolicyError, QueryRejected, ReleaseRefused, SqlanonError
from sqlanon.flow import Result
from sqlanon.policy import Policy, load_policy

__all__ = ["BackendError", "Policy", "PolicyError", "QueryRejected", "ReleaseRefused", "Result", "Session",
           "SqlanonError", "connect", "load_policy"]
__version__ = "0.1.0"
