"""Where the top-level ``sql_templates/`` and ``migrations/`` are: inside the installed package
(a wheel: pyproject.toml and setup.py copy them there), else beside the package (a checkout,
installed editable or not)."""
from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    inside = _PACKAGE / name
    return inside if inside.is_dir() else _PACKAGE.parent / name
