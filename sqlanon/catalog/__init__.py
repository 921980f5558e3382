"""sqlanon's own tables inside the target database: policies (versioned), the release log and the
audit log, created and upgraded by the Alembic migrations in ``migrations/``.

Imports the core (backends, policy, errors) and nothing of the front-ends.
"""
from sqlanon.catalog.store import Catalog, open_catalog

__all__ = ["Catalog", "open_catalog"]
