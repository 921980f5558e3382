"""The corpus of queries that must never leak (tests/fixtures/never_pass.sql) and the judge of
an answer: plain Python over what a client receives, independent of sqlanon's analyzer."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import sqlglot

from sqlanon.demo import PATIENTS

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "never_pass.sql"
NAMES = {p[0] for p in PATIENTS}
_ages = [p[1] for p in PATIENTS]
#: people whose age is theirs alone: a row with their age, ZIP and disease as stored is their raw row
UNIQUE = [p for p in PATIENTS if _ages.count(p[1]) == 1]


def corpus(other: str, dialect: str) -> list[str]:
    """The statements, with ``other`` as the unprotected table, in ``dialect``."""
    text = "\n".join(line for line in FIXTURE.read_text(encoding="utf-8").splitlines()
                     if not line.lstrip().startswith("--"))
    out = []
    for raw in text.split("\n;"):
        sql = raw.strip().replace("{other}", other)
        if sql:
            out.append(sqlglot.transpile(sql, read="postgres", write=dialect)[0] if dialect != "postgres" else sql)
    return out


def leaks(rows: Iterable[Sequence[Any]]) -> list[str]:
    """What in ``rows`` shows a raw identifier value or a raw row of ``patients``."""
    found = []
    for row in rows:
        cells = {str(c) for c in row if c is not None}
        if any(n in c for c in cells for n in NAMES):
            found.append(f"identifier value in {row!r}")
        for p in UNIQUE:
            if {str(p[1]), p[3], p[5]} <= cells:
                found.append(f"raw row of {p[0]} in {row!r}")
    return found


def check_corpus(answer: Callable[[str], list], statements: list[str]) -> None:
    """Every statement's answer (``answer`` returns no rows where it is refused) leaks nothing,
    and the accepted ones at the end of the corpus do come back."""
    answered = 0
    for sql in statements:
        rows = answer(sql)
        assert not leaks(rows), sql
        answered += bool(rows)
    assert answered >= 3
