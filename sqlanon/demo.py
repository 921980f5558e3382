"""The demo database: the patient table of John's thesis (Table 1), a synthetic clinic table, and the
clinic patients' hospital stays (one to four each): a join of two protected tables.

Everything is generated here, so ``sqlanon demo`` needs no server and no download. It writes
the database and its policy into one folder (``POLICY_YAML`` is the policy, written as it is:
the demo reads the file it wrote), runs a few queries raw and anonymized, and names the
commands to try next on the same files. The raw rows it shows are its own synthetic data, read
as the database's owner: an illustration of what sqlanon keeps in the database, never a way
around it.
"""
from __future__ import annotations

import random
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa
import yaml
from sqlglot import exp

from sqlanon.api import Session
from sqlanon.errors import SqlanonError
from sqlanon.flow import Result

PATIENTS = [
    ("Hans Spargel", 14, "männlich", "18528", "deutsch", "Hodenkrebs"),
    ("Anna Schmidt", 7, "weiblich", "18528", "deutsch", "Keuchhusten"),
    ("Karl Einfalt", 15, "männlich", "18528", "deutsch", "Bronchitis"),
    ("Hilde Wilde", 65, "weiblich", "18540", "deutsch", "Grippe"),
    ("Susanne Müller", 71, "weiblich", "18540", "deutsch", "Herzinfarkt"),
    ("Maria Mauer", 88, "weiblich", "18546", "deutsch", "Darmkrebs"),
    ("Klaus Kur", 16, "männlich", "18528", "deutsch", "Grippe"),
    ("Anne Haber", 9, "weiblich", "18528", "deutsch", "Magersucht"),
    ("Diana Will", 8, "weiblich", "18528", "deutsch", "Grippe"),
    ("Johann Kraus", 69, "männlich", "18546", "deutsch", "Lungenkrebs"),
    ("Max Interesse", 66, "männlich", "18551", "deutsch", "Gehirnerschütterung"),
    ("Mustafar Jamir", 68, "männlich", "18551", "amerikanisch", "Gehirnerschütterung"),
    ("Sylvia Sauer", 65, "weiblich", "18546", "deutsch", "Diabetes"),
]

DIAGNOSES = ["Grippe", "Bronchitis", "Diabetes", "Herzinfarkt", "Migräne", "Asthma", "Gastritis", "HIV"]
WARDS = ["A", "B", "C", "D"]

#: the demo's policy, written to ``policy.yaml`` as it stands here
POLICY_YAML = """\
# The policy of sqlanon's demo database (see README.md, "Policy", for every key).
tables:
  patients:                      # the example table of John's thesis (Table 1)
    identifiers: [name]          # never released, never usable
    quasi_identifiers:
      age: {type: interval, levels: [5, 10, 20, 40]}   # [5,10), [0,10), [0,20), [0,40), then *
      sex: {type: suppress}                            # the value or *
      zip: {type: mask, levels: [1, 2, 3]}             # 1852*, 185**, 18***
    sensitive:
      disease: {type: categorical}
    insensitive: [nationality]   # released as it is
    privacy:
      k: 2
      alpha: {value: 0.5, protect: all}
      max_suppression: 0.2
  clinic:                        # synthetic
    identifiers: [patient_id, name]
    quasi_identifiers:
      age: {type: interval, levels: [5, 10, 20, 40]}
      zip: {type: mask, levels: [1, 2, 3, 5]}
      sex: {type: suppress}
    sensitive:
      diagnosis: {type: categorical}
    insensitive: [ward]
    privacy:
      k: 5
      alpha: {value: 0.3, protect: [HIV, Herzinfarkt]}
      max_suppression: 0.05
  stays:                         # one to four per clinic patient, linked by patient_id
    identifiers: [patient_id]
    insensitive: [days, cost]
    privacy:
      k: 5
"""
POLICY = yaml.safe_load(POLICY_YAML)

#: the small table's query: its released rows are shown class by class beside the raw rows
CLASSES_QUERY = "SELECT age, sex, zip, disease FROM patients"

QUERIES = [
    CLASSES_QUERY,
    "SELECT age, zip, diagnosis FROM clinic WHERE age BETWEEN 30 AND 50",
    "SELECT sex, COUNT(*) AS n FROM clinic WHERE ward = 'B' GROUP BY sex",
    # classes count persons: one patient's stays are several joined rows (analyze/linked.py)
    "SELECT c.age, c.zip, c.diagnosis, s.days FROM clinic c JOIN stays s ON s.patient_id = c.patient_id "
    "WHERE s.days >= 7",
]

#: what to try next on the demo's files: (command, query, options, what it shows)
NEXT = [
    ("query", "SELECT age, sex, zip, disease FROM patients", "", "the small table again"),
    ("query", "SELECT age, zip, diagnosis FROM clinic WHERE ward = 'A'", "--method mondrian",
     "another method, verified against the same policy"),
    ("query", "SELECT diagnosis, COUNT(*) AS n FROM clinic GROUP BY diagnosis", "--format json",
     "rows and report as JSON"),
    ("explain", "SELECT age, zip, diagnosis FROM clinic WHERE age BETWEEN 30 AND 50", "--summary",
     "the plan and its stages"),
    ("explain", "SELECT age, zip, diagnosis FROM clinic WHERE age BETWEEN 30 AND 50", "",
     "every SQL statement"),
    ("query", "SELECT name FROM patients", "", "refused: name is an identifier"),
]


def synthetic_clinic(n: int, seed: int = 7) -> list[tuple]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        age = max(0, min(99, int(rng.gauss(45, 18))))
        zip_ = f"18{rng.choice('5555567')}{rng.randint(0, 9)}{rng.randint(0, 9)}"
        sex = rng.choice(["m", "w"])
        weights = [30, 15, 12 + age // 10, 3 + age // 8, 10, 8, 8, 2]
        rows.append((i + 1, f"Person {i + 1}", age, zip_, sex, rng.choices(DIAGNOSES, weights)[0], rng.choice(WARDS)))
    return rows


def synthetic_stays(clinic: list[tuple], seed: int = 11) -> list[tuple]:
    rng = random.Random(seed)
    return [(row[0], days, days * rng.randint(400, 900)) for row in clinic
            for days in (rng.randint(1, 21) for _ in range(rng.randint(1, 4)))]


def create(path: Path, n: int = 5000) -> str:
    url = f"sqlite:///{path}"
    engine = sa.create_engine(url)
    md = sa.MetaData()
    patients = sa.Table("patients", md, sa.Column("name", sa.String(60)), sa.Column("age", sa.Integer),
                        sa.Column("sex", sa.String(10)), sa.Column("zip", sa.String(5)),
                        sa.Column("nationality", sa.String(20)), sa.Column("disease", sa.String(40)))
    clinic = sa.Table("clinic", md, sa.Column("patient_id", sa.Integer), sa.Column("name", sa.String(60)),
                      sa.Column("age", sa.Integer), sa.Column("zip", sa.String(5)), sa.Column("sex", sa.String(1)),
                      sa.Column("diagnosis", sa.String(40)), sa.Column("ward", sa.String(1)))
    stays = sa.Table("stays", md, sa.Column("patient_id", sa.Integer), sa.Column("days", sa.Integer),
                     sa.Column("cost", sa.Integer))
    md.drop_all(engine)
    md.create_all(engine)
    rows = synthetic_clinic(n)
    with engine.begin() as c:
        c.execute(patients.insert(), [dict(zip(patients.c.keys(), r)) for r in PATIENTS])
        c.execute(clinic.insert(), [dict(zip(clinic.c.keys(), r)) for r in rows])
        c.execute(stays.insert(), [dict(zip(stays.c.keys(), r)) for r in synthetic_stays(rows)])
    engine.dispose()
    return url


@dataclass(frozen=True)
class Files:
    """The demo's folder: its database, its policy, and the URL that opens the database."""

    directory: Path
    database: Path
    policy: Path

    @property
    def url(self) -> str:
        return f"sqlite:///{self.database}"


def prepare(directory: Path, n: int = 5000) -> Files:
    """Write (or rewrite) ``demo.db`` and ``policy.yaml`` in ``directory``; nothing else there
    is touched, and a rerun starts from the same fresh database."""
    directory = directory.expanduser().resolve()
    directory.mkdir(parents=True, exist_ok=True)
    files = Files(directory, directory / "demo.db", directory / "policy.yaml")
    files.database.unlink(missing_ok=True)  # a catalog or tables left by earlier experiments go too
    create(files.database, n)
    files.policy.write_text(POLICY_YAML, encoding="utf-8")
    return files


def next_commands(files: Files) -> list[tuple[str, str]]:
    """The commands to try next, as a shell reads them (paths quoted where they need it), each
    with what it shows."""
    out = []
    for command, sql, options, what in NEXT:
        assert not set(sql) & set('"$`\\!'), sql  # safe inside double quotes
        line = (f'sqlanon {command} "{sql}" --db {shlex.quote(files.url)} --policy {shlex.quote(str(files.policy))}'
                + (f" {options}" if options else ""))
        out.append((line, what))
    return out


@dataclass
class Member:
    """One raw row of the small table and where it went: the released row made from it (None:
    withheld) in class ``number``; ``also``: the other classes (0: withheld) it fits as well,
    where the release alone cannot tell which it is."""

    raw: tuple
    released: tuple | None
    number: int
    also: tuple[int, ...] = ()


@dataclass
class Classes:
    """The small table's released rows class by class, each beside its raw row."""

    raw_columns: list[str]
    columns: list[str]
    members: list[Member] = field(default_factory=list)

    @property
    def sizes(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for m in self.members:
            if m.released is not None:
                out[m.number] = out.get(m.number, 0) + 1
        return out

    @property
    def withheld(self) -> int:
        return sum(m.released is None for m in self.members)


@dataclass
class Shown:
    """One query of the demo: the raw answer (read as the owner), the anonymized one, and for
    the small table the classes."""

    sql: str
    raw_columns: list[str]
    raw_rows: list[tuple]
    #: None: sqlanon refused the query (``refused`` says why, as a user would read it)
    result: Result | None
    classes: Classes | None = None
    refused: str | None = None


def walk(session: Session, files: Files) -> list[Shown]:
    """Run every demo query raw (the owner's own engine) and through ``session``; a refusal is
    shown as such (the release limits compare counts with noise: a small selection may be
    refused in one run and answered in the next)."""
    engine = sa.create_engine(files.url)
    try:
        out = []
        with engine.connect() as c:
            for sql in QUERIES:
                cur = c.exec_driver_sql(sql)
                shown = Shown(sql, list(cur.keys()), [tuple(r) for r in cur], None)
                try:
                    shown.result = session.execute(sql)
                except SqlanonError as e:
                    shown.refused = e.message
                if sql == CLASSES_QUERY and shown.result is not None:
                    shown.classes = match(session, c, "patients", shown.result)
                out.append(shown)
        return out
    finally:
        engine.dispose()


def match(session: Session, conn: Any, table: str, result: Result) -> Classes | None:
    """The raw rows of ``table`` matched to the released rows they can have become: a raw row
    fits a released row when every released quasi-identifier is one of its hierarchy's labels
    of the raw value (computed by the database, with the policy's own expressions) and every
    other released column is equal. Some one-to-one assignment exists (the true one); a row is
    placed for certain when every assignment puts it in the same class. None where the rows do
    not fit (a method that releases means)."""
    tp = session.policy.for_table(table)
    assert tp is not None
    qis = {q.column: q.hierarchy for q in tp.quasi_identifiers}
    raw_columns = [*tp.identifiers, *result.columns]
    labels = [exp.alias_(h.expr(exp.column(c, quoted=True), lv), f"_l_{c}_{lv}", quoted=True)
              for c, h in qis.items() if c in result.columns for lv in range(h.height + 1)]
    query = exp.select(*[exp.column(c, quoted=True) for c in raw_columns], *labels).from_(
        exp.Table(this=exp.to_identifier(table, quoted=True)))
    rows = [tuple(r) for r in conn.exec_driver_sql(session.db.backend.render(query))]
    width = len(raw_columns)
    raw = [r[:width] for r in rows]
    fits: list[list[int]] = []
    for r in rows:
        values = dict(zip(raw_columns, r))
        levels: dict[str, set[str]] = {}
        i = width
        for c, h in qis.items():
            if c in result.columns:
                levels[c] = {str(v) for v in r[i:i + h.height + 1]}
                i += h.height + 1
        fits.append([j for j, x in enumerate(result.rows)
                     if all((str(v) in levels[c]) if c in levels else (str(v) == str(values[c]))
                            for c, v in zip(result.columns, x))])
    pairs = _assign(fits, len(result.rows), set(), set())
    if pairs is None:
        return None
    qi_at = [i for i, c in enumerate(result.columns) if c in qis]
    key = [tuple(x[i] for i in qi_at) for x in result.rows]
    # classes numbered in the order of their raw rows (as the table lists them)
    number: dict[tuple, int] = {}
    for i in sorted(pairs, key=lambda i: _order(raw[i][len(tp.identifiers):])):
        number.setdefault(key[pairs[i]], len(number) + 1)
    members = []
    for i, r in enumerate(raw):
        j = pairs.get(i)
        home = number[key[j]] if j is not None else 0
        elsewhere = {number[key[k]] for k in fits[i] if number[key[k]] != home
                     and _assign(fits, len(result.rows), {i}, {k}, forced=(i, k)) is not None}
        if j is not None and len(raw) > len(result.rows) and _assign(fits, len(result.rows), {i}, set()) is not None:
            elsewhere.add(0)
        members.append(Member(r, result.rows[j] if j is not None else None, home, tuple(sorted(elsewhere))))
    members.sort(key=lambda m: (m.number == 0, m.number, _order(m.raw[len(tp.identifiers):])))
    return Classes(raw_columns, list(result.columns), members)


def _order(values: tuple) -> tuple:
    """Numbers by value, everything else by its text (a sort key for rows of mixed columns)."""
    return tuple((0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v)) for v in values)


def _assign(fits: list[list[int]], released: int, no_rows: set[int], no_released: set[int],
            forced: tuple[int, int] | None = None) -> dict[int, int] | None:
    """A matching of raw rows to released rows (raw index → released index) that covers every
    released row, leaving out ``no_rows`` and ``no_released`` (plus ``forced``, paired); None
    when there is none. Augmenting paths (Kuhn): the demo's small table has a dozen rows."""
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in fits[i]:
            if j in no_released or j in seen:
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(fits)):
        if i not in no_rows:
            augment(i, set())
    if forced is not None:
        owner[forced[1]] = forced[0]
    if len(owner) < released:
        return None
    return {i: j for j, i in owner.items()}
