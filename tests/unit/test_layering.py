"""Imports point one way (STYLE.md): what must hold and how good never depend on how it was made,
and no module outside backends/ asks which database it talks to."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "sqlanon"


def imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


@pytest.mark.parametrize("package", ["criteria", "metrics", "verify"])
def test_judges_never_import_methods(package):
    for f in (PKG / package).rglob("*.py"):
        assert not any(m.startswith("sqlanon.anonymize") for m in imports(f)), f


def test_core_never_imports_front_ends():
    for f in PKG.rglob("*.py"):
        if f.parent.name == "cli" or f.name in ("__main__.py", "demo.py"):
            continue
        assert not any(m.startswith("sqlanon.cli") for m in imports(f)), f


def test_no_dialect_checks_outside_backends():
    for f in PKG.rglob("*.py"):
        if f.parent.name == "backends":
            continue
        text = f.read_text(encoding="utf-8")
        for word in ('== "mysql"', '== "postgres', '== "sqlite"', "is_mariadb"):
            assert word not in text, f"{f}: {word}"
