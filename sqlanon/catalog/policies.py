"""Policies in the catalog: applied from a file, versioned per table, read back self-contained.

A stored policy carries its taxonomies inline (``rows:``), so that a session on another machine
reads the same hierarchies without the files; every change of a table's policy is a new version,
and older versions stay in the catalog.
"""
from __future__ import annotations

import copy
import datetime as dt
import difflib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import yaml

from sqlanon.catalog.store import Catalog
from sqlanon.errors import PolicyError
from sqlanon.policy import Policy, load_policy
from sqlanon.policy.load import parse_policy


@dataclass(frozen=True)
class Applied:
    table: str
    version: int
    changed: bool


def document(path: str | Path) -> dict[str, dict[str, Any]]:
    """The policy file's tables, validated, with every taxonomy file replaced by its rows."""
    policy = load_policy(path)
    raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    out: dict[str, dict[str, Any]] = {}
    for name, spec in raw["tables"].items():
        tp = policy.for_table(str(name))
        assert tp is not None
        spec = copy.deepcopy(spec)
        for column, h in (spec.get("quasi_identifiers") or {}).items():
            if h.get("type") == "taxonomy" and "file" in h:
                h.pop("file")
                h.pop("sep", None)
                h["rows"] = tp.qi(str(column)).hierarchy.rows  # type: ignore[union-attr]
        for s in tp.sensitive:
            sspec = (spec.get("sensitive") or {}).get(s.column)
            if isinstance(sspec, dict) and isinstance(sspec.get("hierarchy"), str):
                sspec["hierarchy"] = s.hierarchy.rows  # type: ignore[union-attr]
                sspec.pop("sep", None)
        out[tp.table] = spec
    return out


def _digest(spec: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode("utf-8")).hexdigest()


def latest(catalog: Catalog) -> dict[str, tuple[int, dict[str, Any]]]:
    """Each table's newest policy: table → (version, spec)."""
    p = catalog.t.policies
    newest = sa.select(p.c.table_name, sa.func.max(p.c.version).label("v")).group_by(p.c.table_name).subquery()
    q = sa.select(p.c.table_name, p.c.version, p.c.body).join(
        newest, sa.and_(p.c.table_name == newest.c.table_name, p.c.version == newest.c.v))
    with catalog.db.engine.connect() as c:
        return {t: (v, json.loads(b)) for t, v, b in c.execute(q)}


def apply(catalog: Catalog, path: str | Path, applied_by: str) -> list[Applied]:
    """Store the file's policy: a new version for each table whose policy changed."""
    doc = document(path)
    current = latest(catalog)
    out = []
    with catalog.db.engine.begin() as c:
        for table, spec in doc.items():
            version, old = current.get(table, (0, None))
            if old is not None and _digest(old) == _digest(spec):
                out.append(Applied(table, version, False))
                continue
            c.execute(catalog.t.policies.insert().values(
                table_name=table, version=version + 1, body=json.dumps(spec, sort_keys=True), digest=_digest(spec),
                applied_at=dt.datetime.now(dt.timezone.utc).replace(tzinfo=None), applied_by=applied_by))
            out.append(Applied(table, version + 1, True))
    return out


def stored_policy(catalog: Catalog) -> Policy:
    current = latest(catalog)
    if not current:
        raise PolicyError("the catalog holds no policy: run 'sqlanon policy apply POLICY.yml'")
    return parse_policy({"tables": {t: spec for t, (_, spec) in current.items()}}, base=Path.cwd(), origin="catalog")


def show(catalog: Catalog, table: str | None = None) -> str:
    current = latest(catalog)
    if table is not None:
        current = {t: v for t, v in current.items() if t.lower() == table.lower()}
        if not current:
            raise PolicyError("the catalog holds no policy for this table", table=table)
    return "\n".join(f"# {t}: version {v}\n" + _yaml({t: spec}) for t, (v, spec) in sorted(current.items()))


def diff(catalog: Catalog, path: str | Path) -> str:
    """What applying the file would change, as a unified diff per table ('' when nothing)."""
    stored = {t: spec for t, (_, spec) in latest(catalog).items()}
    out = []
    for table, spec in document(path).items():
        old = _yaml({table: stored[table]}).splitlines(keepends=True) if table in stored else []
        out.extend(difflib.unified_diff(old, _yaml({table: spec}).splitlines(keepends=True),
                                        fromfile=f"catalog:{table}", tofile=f"{path}:{table}"))
    return "".join(out)


def _yaml(tables: dict[str, Any]) -> str:
    return yaml.safe_dump(tables, sort_keys=True, default_flow_style=None, width=100)
