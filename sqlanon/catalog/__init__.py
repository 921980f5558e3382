"""sqlanon's own tables inside the target database: policies (versioned), the release log and the
audit log, created and upgraded by the Alembic migrations in ``migrations/``. Where the tables'
database cannot keep it (Spark SQL), a database of its own keeps the ε ledger and the audit log
(``open_apart``).

Imports the core (backends, policy, errors) and nothing of the front-ends.
"""
from sqlanon.catalog.store import Catalog, open_apart, open_catalog

__all__ = ["Catalog", "open_apart", "open_catalog"]
