"""``discover``: the columns that single people out, found inside the database."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from sqlanon.backends.connect import Database
from sqlanon.discover.lattice import Combination, Measure, all_combinations, needed, search
from sqlanon.discover.profile import ColumnProfile, Combinations, patterns, profile, take_sample
from sqlanon.discover.skeleton import skeleton
from sqlanon.errors import PolicyError
from sqlanon.sql.reading import Reading

#: tables with more rows are searched on a random sample first (the whole table confirms)
SAMPLE_ROWS = 100_000
#: values of each text column tested against the identifier patterns
PATTERN_SAMPLE = 1_000
#: a column is identifier-like when its distinct values number at least this share of the rows
IDENTIFIER_SHARE = 0.5
#: share of sampled values that must match a pattern for the column to be flagged
PATTERN_SHARE = 0.8
#: exact measurements of one level sent side by side, each on a connection of its own
WORKERS = 2


@dataclass(frozen=True)
class Identifier:
    column: str
    #: why it is flagged: "unique", "nearly unique", "distinct values for N % of rows", "e-mail addresses", …
    reasons: tuple[str, ...]
    distinct: int
    #: rows it singles out alone (exact)
    uniques: int
    #: rows it singles out with each other column measured by the search: {column: (uniques, exact)}
    partners: dict[str, tuple[int, bool]] = field(default_factory=dict)


@dataclass(frozen=True)
class Discovery:
    table: str
    rows: int
    threshold: float
    max_size: int
    #: rows of the random sample searched first (None: the whole table was searched)
    sample_rows: int | None
    #: minimal unique / nearly unique combinations, exact figures
    found: tuple[tuple[Combination, Measure], ...]
    identifiers: tuple[Identifier, ...]
    #: the quasi-identifiers proposed (or given), and what they single out together (exact)
    quasi_identifiers: tuple[str, ...]
    together: Measure | None
    #: pattern matches per text column: (values sampled, {pattern: matches})
    patterns: dict[str, tuple[int, dict[str, int]]]
    lattice: int
    measured: int
    bounded: int
    #: combinations measured on the sample, and on the whole table
    on_sample: int
    on_table: int
    statements: int
    seconds: float
    policy_yaml: str
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table, "rows": self.rows, "threshold": self.threshold, "max_size": self.max_size,
            "sample_rows": self.sample_rows,
            "combinations": [{"columns": list(c), "classes": m.classes, "uniques": m.uniques,
                              "unique": m.uniques == self.rows} for c, m in self.found],
            "identifiers": [{"column": i.column, "reasons": list(i.reasons), "distinct": i.distinct,
                             "uniques": i.uniques,
                             "with": {c: {"uniques": u, "exact": e} for c, (u, e) in i.partners.items()}}
                            for i in self.identifiers],
            "quasi_identifiers": list(self.quasi_identifiers),
            "together": None if self.together is None else {"classes": self.together.classes,
                                                            "uniques": self.together.uniques},
            "patterns": {c: {"sampled": n, **m} for c, (n, m) in self.patterns.items()},
            "search": {"lattice": self.lattice, "measured": self.measured, "settled_by_bound": self.bounded,
                       "on_sample": self.on_sample, "on_table": self.on_table,
                       "statements": self.statements, "seconds": round(self.seconds, 3)},
            "policy": self.policy_yaml, "notes": list(self.notes),
        }

    def text(self) -> str:
        pct = lambda n: f"{100 * n / self.rows:.1f} %" if self.rows else "-"  # noqa: E731
        out = [f"table {self.table}: {self.rows:,} rows; combinations of up to {self.max_size} columns that single out "
               f"at least {self.threshold:g} of the rows" + (f" (searched on a random sample of {self.sample_rows:,} "
                                                              "rows first, confirmed on the whole table)"
                                                              if self.sample_rows else "")]
        out.append("identifier-like columns:" if self.identifiers else "identifier-like columns: none")
        for i in self.identifiers:
            best = sorted(i.partners.items(), key=lambda kv: -kv[1][0])[:5]  # all of them in to_dict
            withs = ", ".join(f"with {c} {u:,}{'' if e else ' (in the sample)'}" for c, (u, e) in best)
            out.append(f"  {i.column}: {'; '.join(i.reasons)}; alone it singles out {i.uniques:,} rows "
                       f"({pct(i.uniques)})" + (f"; {withs}" if withs else ""))
        out.append("minimal combinations:" if self.found else "minimal combinations: none within the size searched")
        for c, m in self.found:
            kind = "unique" if m.uniques == self.rows else "nearly unique"
            out.append(f"  {', '.join(c)}: {kind}, singles out {m.uniques:,} rows ({pct(m.uniques)}), "
                       f"{m.classes:,} classes")
        if self.together is not None:
            out.append(f"quasi-identifiers {', '.join(self.quasi_identifiers)} together: single out "
                       f"{self.together.uniques:,} rows ({pct(self.together.uniques)}, sample uniques), "
                       f"{self.together.classes:,} classes")
        where = f" ({self.on_sample} on the sample, {self.on_table} on the whole table)" if self.sample_rows else ""
        out.append(f"search: {self.measured} of {self.lattice} combinations measured{where}, {self.bounded} settled "
                   f"by the bound on their classes; {self.statements} statements, {self.seconds:.2f} s")
        out += [f"note: {n}" for n in self.notes]
        out.append("only counts, lengths and the range of numeric columns left the database; "
                   "'--format yaml' proposes a policy")
        return "\n".join(out)


def discover(db: Database, table: str, *, max_size: int = 4, threshold: float = 0.95,
             qi: Sequence[str] | None = None, sample_rows: int = SAMPLE_ROWS, workers: int = WORKERS) -> Discovery:
    """Search ``table`` for minimal (nearly) unique column combinations and identifier-like
    columns; read as the pipeline's identity (the raw table), aggregates only. ``workers``:
    exact measurements sent at a time (profile.Combinations)."""
    if not 0 < threshold <= 1:
        raise PolicyError(f"threshold {threshold:g}: a share of the rows in (0, 1]")
    if max_size < 1:
        raise PolicyError("max-size must be at least 1")
    spelled = db.spelling.get(table.lower())
    if spelled is None:
        raise PolicyError(f"no table {table!r} in the database")
    every = db.tables[spelled.lower()]
    cols = [c for c in every if c.family in ("text", "numeric", "date")]
    notes = [f"left out (a type sqlanon does not group by): {c.name}" for c in every if c not in cols]
    given = list(qi or [])
    unknown = [q for q in given if q not in {c.name for c in cols}]
    if unknown:
        raise PolicyError(f"table {spelled} has no column {', '.join(unknown)}")
    t0 = time.perf_counter()
    with Reading(db) as r:
        rows, profiles = profile(r, spelled, cols)
        names = [c.name for c in cols]
        families = {c.name: c.family for c in cols}
        sample = None
        if rows > sample_rows:
            sample = take_sample(r, spelled, names, sample_rows)
        combos = Combinations(r, spelled, families, rows, threshold, sample, sample_rows if sample else 0, workers)
        lattice = search(names, rows, {c: profiles[c].distinct for c in names}, combos,
                         threshold=threshold, max_size=min(max_size, len(names)), prefetch=combos.prefetch) \
            if rows else None
        found = sorted(lattice.found.items(), key=lambda kv: (len(kv[0]), -kv[1].uniques)) if lattice else []
        seen = {c: patterns(r, sample or spelled, c, PATTERN_SAMPLE) for c in names if families[c] == "text"} \
            if rows else {}
        identifiers = _identifiers(names, rows, threshold, profiles, seen, lattice.measured if lattice else {}, combos)
        ids = [i.column for i in identifiers if i.column not in given]
        qis = given or _proposed(found, lattice.measured if lattice else {}, ids)
        together = combos.exact(tuple(qis)) if qis and rows else None
        statements = r.statements
    codes = {c for c, (n, m) in seen.items() if n and m["code"] == n}
    others = [c for c in names if c not in ids and c not in qis]
    yaml_text = skeleton(spelled, ids, qis, profiles, codes, others, [
        f"identifier-like: {i.column} ({'; '.join(i.reasons)})" for i in identifiers if i.column in ids])
    return Discovery(spelled, rows, threshold, max_size, sample_rows if sample else None, tuple(found),
                     tuple(identifiers), tuple(qis), together, seen,
                     all_combinations(names, max_size), len(lattice.measured) if lattice else 0,
                     lattice.bounded if lattice else 0, combos.on_sample, combos.on_table, statements,
                     time.perf_counter() - t0, yaml_text, tuple(notes))


_KINDS = {"email": "e-mail addresses", "phone": "phone numbers", "national_id": "national id numbers",
          "name": "names of persons"}


def _identifiers(names: list[str], rows: int, threshold: float, profiles: dict[str, ColumnProfile],
                 seen: dict[str, tuple[int, dict[str, int]]], measured: dict[Combination, Measure],
                 combos: Combinations) -> list[Identifier]:
    out = []
    for c in names:
        p = profiles[c]
        reasons = []
        if p.distinct >= IDENTIFIER_SHARE * rows and rows:
            reasons.append(f"{p.distinct:,} distinct values for {rows:,} rows")
        n, matches = seen.get(c, (0, {}))
        for kind, label in _KINDS.items():
            if n and matches.get(kind, 0) >= PATTERN_SHARE * n and (kind != "name" or p.distinct >= 0.05 * rows):
                reasons.append(f"{matches[kind]} of {n} sampled values look like {label}")
        if not reasons:
            continue
        alone = measured.get((c,))
        if alone is None or not alone.exact:
            alone = combos.exact((c,))
        if alone.uniques == rows:
            reasons.insert(0, "unique")
        elif alone.uniques >= needed(rows, threshold):
            reasons.insert(0, "nearly unique")
        partners = {next(x for x in combo if x != c): (m.uniques, m.exact)
                    for combo, m in measured.items() if len(combo) == 2 and c in combo}
        out.append(Identifier(c, tuple(reasons), p.distinct, alone.uniques, partners))
    return out


def _proposed(found: list[tuple[Combination, Measure]], measured: dict[Combination, Measure],
              identifiers: list[str]) -> list[str]:
    """Quasi-identifiers to propose: the columns of the minimal combinations found, identifiers
    left out; where none was found, those of the combination that singles out most rows."""
    cols: list[str] = []
    for combo, _ in found:
        cols += [c for c in combo if c not in identifiers and c not in cols]
    if not cols:
        rest = [(m.uniques, combo) for combo, m in measured.items() if not set(combo) & set(identifiers)]
        if rest:
            cols = list(max(rest)[1])
    return cols
