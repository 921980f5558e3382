"""Servers sqlanon cannot serve are refused at connect, with the reason (no database needed)."""
from __future__ import annotations

import pytest

from sqlanon import BackendError, connect
from sqlanon.backends.mysql import MySQLBackend


@pytest.mark.parametrize("version,reason", [("8.0.36", "MySQL is not supported yet"),
                                            ("10.5.23-MariaDB", "older than 10.6"),
                                            ("10.11.6-MariaDB-0+deb12u1", None)])
def test_mysql_and_old_mariadb_are_refused_by_name(version, reason):
    found = MySQLBackend(version).unsupported()
    assert found == reason if reason is None else reason in found


def test_a_missing_sqlite_file_is_refused_not_created(tmp_path):
    missing = tmp_path / "missing.db"
    with pytest.raises(BackendError, match="no SQLite database"):
        connect(f"sqlite:///{missing}", {"tables": {}})
    assert not missing.exists()
