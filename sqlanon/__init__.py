"""sqlanon: SQL-pushdown anonymization inside SQLite, PostgreSQL and MariaDB/MySQL.

    import sqlanon
    db = sqlanon.connect("sqlite:///demo.db", policy="policy.yml")
    res = db.execute("SELECT age, zip, disease FROM patients WHERE age BETWEEN 30 AND 50")
    res.columns, res.rows, res.report
"""
import gc

# The imports below (sqlglot, SQLAlchemy, the drivers) make ~100,000 objects that live as long as
# the process and are no garbage: the cyclic collector ran 184 times while they loaded (50-60 ms
# of the ~0.4 s of CPU the CLI spends importing); off meanwhile. Then they go straight to its
# oldest generation (freeze, then unfreeze: nothing stays frozen), where only a full collection
# looks at them, instead of all into one young collection (30-37 ms at load 4). Then it is on
# again as it was.
_collecting = gc.isenabled()
gc.disable()
try:
    from sqlanon.api import Session, connect
    from sqlanon.errors import BackendError, PolicyError, QueryRejected, ReleaseRefused, SqlanonError
    from sqlanon.flow import Result
    from sqlanon.policy import Policy, load_policy
    if not gc.get_freeze_count():  # a program's own frozen objects stay frozen
        gc.freeze()
        gc.unfreeze()
finally:
    if _collecting:
        gc.enable()

__all__ = ["BackendError", "Policy", "PolicyError", "QueryRejected", "ReleaseRefused", "Result", "Session",
           "SqlanonError", "connect", "load_policy"]
__version__ = "0.1.0"
