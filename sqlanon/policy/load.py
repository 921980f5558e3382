"""Read a policy from YAML (or a dict) with errors that name the table, the column and the fault."""
from __future__ import annotations

from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import Any

import yaml

from sqlanon.errors import PolicyError
from sqlanon.hierarchy import (
    DATE_STEPS,
    KINDS,
    DateHierarchy,
    Hierarchy,
    IntervalError,
    IntervalHierarchy,
    MaskHierarchy,
    SuppressHierarchy,
    TaxonomyError,
    TaxonomyHierarchy,
)
from sqlanon.policy.model import (
    METHODS,
    METRICS,
    Alpha,
    Budget,
    Closeness,
    Differential,
    Diversity,
    Policy,
    QuasiIdentifier,
    ReportOptions,
    Requirement,
    Sensitive,
    Slicing,
    TablePolicy,
)
from sqlanon.risk.population import REGIONS, population_size

TABLE_KEYS = {"identifiers", "person", "quasi_identifiers", "sensitive", "insensitive", "privacy", "report"}
PRIVACY_KEYS = {"k", "alpha", "max_suppression", "method", "l", "t", "epsilon", "slicing", "few_rows", "min_rows",
                "sensitive_predicates",
                "difference_window", "across_releases", "consistent", "metric", "refine", "delta", "contributions", "bounds", "groups"}
#: rounds of ``refine: kmeans`` unless the policy says: on the CASC data the gain has levelled off by then
REFINE_ROUNDS = 30
#: keys of the format that later versions implement; refused loudly rather than ignored
NOT_YET: dict[str, str] = {}
#: keys that only mean something for differentially private answers
DP_KEYS = ("delta", "contributions", "bounds", "groups")
#: units of ``privacy.epsilon.window``
WINDOW_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}


def load_policy(source: str | Path | dict | Policy) -> Policy:
    if isinstance(source, Policy):
        return source
    if isinstance(source, dict):
        return parse_policy(source, base=Path.cwd(), origin="<dict>")
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise PolicyError(f"cannot read policy file {path}: {e.strerror}") from None
    try:
        # libyaml's parser where PyYAML has it: the same documents, ~10x faster (1.5 ms of a CLI start)
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as e:
        raise PolicyError(f"{path} is not valid YAML: {e}") from None
    return parse_policy(data, base=path.parent, origin=str(path))


def parse_policy(data: Any, *, base: Path, origin: str) -> Policy:
    if not isinstance(data, dict) or not isinstance(data.get("tables"), dict) or not data["tables"]:
        raise PolicyError(f"{origin}: expected a mapping with a non-empty 'tables' mapping")
    extra = set(data) - {"tables"}
    if extra:
        raise PolicyError(f"{origin}: unknown top-level keys {sorted(extra)}")
    tables = {}
    for name, spec in data["tables"].items():
        tp = _table(str(name), spec, base)
        tables[tp.table.lower()] = tp
    return Policy(tables=tables, source=origin)


def _names(value: Any, table: str, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise PolicyError(f"'{key}' must be a list of column names", table=table)
    return tuple(value)


def _table(table: str, spec: Any, base: Path) -> TablePolicy:
    if not isinstance(spec, dict):
        raise PolicyError("expected a mapping", table=table)
    unknown = set(spec) - TABLE_KEYS
    if unknown:
        raise PolicyError(f"unknown keys {sorted(unknown)}", table=table)
    identifiers = _names(spec.get("identifiers"), table, "identifiers")
    insensitive = _names(spec.get("insensitive"), table, "insensitive")
    qspec = spec.get("quasi_identifiers") or {}
    if not isinstance(qspec, dict):
        raise PolicyError("'quasi_identifiers' must map columns to hierarchies", table=table)
    qis = tuple(QuasiIdentifier(str(c), _hierarchy(table, str(c), h, base)) for c, h in qspec.items())
    sspec = spec.get("sensitive") or {}
    if not isinstance(sspec, dict):
        raise PolicyError("'sensitive' must map columns to their kind", table=table)
    sensitive = tuple(_sensitive(table, str(c), s, base) for c, s in sspec.items())

    seen: dict[str, str] = {}
    for role, cols in (("identifier", identifiers), ("quasi-identifier", [q.column for q in qis]),
                       ("sensitive", [s.column for s in sensitive]), ("insensitive", insensitive)):
        for c in cols:
            if c in seen:
                raise PolicyError(f"named as {seen[c]} and as {role}", table=table, column=c)
            seen[c] = role
    person = spec.get("person")
    if person is not None and (not isinstance(person, str) or person not in identifiers):
        raise PolicyError("'person' must name one of the identifier columns (the one whose value is one person)",
                          table=table)
    requirement = _requirement(table, spec.get("privacy"), sensitive, qis)
    privacy = spec.get("privacy") or {}
    if "epsilon" in privacy:
        releasable = [q.column for q in qis] + [s.column for s in sensitive] + list(insensitive)
        requirement = replace(requirement, dp=_differential(table, privacy, person, releasable))
    else:
        for key in DP_KEYS:
            if key in privacy:
                raise PolicyError(f"privacy.{key} is a setting of differential privacy: it needs privacy.epsilon",
                                  table=table)
        if requirement.method == "dp":
            raise PolicyError("privacy.method dp needs privacy.epsilon (with its budget)", table=table)
    return TablePolicy(table, identifiers, qis, sensitive, insensitive, requirement, person,
                       _report(table, spec.get("report")))


def _report(table: str, spec: Any) -> ReportOptions:
    """``report: {risk: true, population: usa}``: what every release's report adds."""
    if spec is None:
        return ReportOptions()
    if not isinstance(spec, dict) or set(spec) - {"risk", "population"}:
        raise PolicyError("'report' must be a mapping of risk (true or false) and population", table=table)
    risk = spec.get("risk", False)
    if not isinstance(risk, bool):
        raise PolicyError(f"report.risk must be true or false, got {risk!r}", table=table)
    population = spec.get("population")
    if population is not None:
        try:
            population_size(1, population)
        except (ValueError, TypeError):
            raise PolicyError(f"report.population must be a number of people or one of {', '.join(sorted(REGIONS))}, "
                              f"got {population!r}", table=table) from None
        if isinstance(population, bool) or (isinstance(population, int) and population < 1):
            raise PolicyError(f"report.population must be at least one person, got {population!r}", table=table)
    return ReportOptions(risk, population)


def _hierarchy(table: str, column: str, spec: Any, base: Path) -> Hierarchy:
    if not isinstance(spec, dict) or "type" not in spec:
        raise PolicyError(f"expected {{type: one of {', '.join(KINDS)}, ...}}", table=table, column=column)
    kind = spec["type"]
    levels = spec.get("levels")

    def rising_numbers(kind_msg: str, integer: bool) -> list:
        ok = isinstance(levels, list) and levels and all(
            isinstance(v, int if integer else (int, float)) and not isinstance(v, bool) and v > 0 for v in levels)
        if not ok or any(b <= a for a, b in pairwise(levels)):
            raise PolicyError(f"'levels' must be a rising list of positive {kind_msg}", table=table, column=column)
        return list(levels)

    try:
        if kind == "interval":
            return IntervalHierarchy(rising_numbers("widths", integer=False))
        if kind == "mask":
            return MaskHierarchy(rising_numbers("character counts", integer=True))
        if kind == "suppress":
            return SuppressHierarchy()
        if kind == "date":
            if (not isinstance(levels, list) or not levels or any(v not in DATE_STEPS for v in levels)
                    or levels != sorted(levels, key=DATE_STEPS.index) or len(set(levels)) != len(levels)):
                raise PolicyError(f"'levels' must be a rising subset of {list(DATE_STEPS)}", table=table, column=column)
            return DateHierarchy(list(levels))
        if kind == "taxonomy":
            return _taxonomy(spec.get("file"), spec.get("rows"), str(spec.get("sep", ";")), base, table, column)
    except TaxonomyError as e:
        raise PolicyError(f"taxonomy {spec.get('file') or '(inline rows)'}: {e}", table=table, column=column) from None
    except IntervalError as e:
        raise PolicyError(str(e), table=table, column=column) from None
    raise PolicyError(f"unknown hierarchy type {kind!r} (one of {', '.join(KINDS)})", table=table, column=column)


def _taxonomy(file: Any, rows: Any, sep: str, base: Path, table: str, column: str) -> TaxonomyHierarchy:
    """An ARX taxonomy from a CSV file, or inline as a list of rows (how the catalog stores it)."""
    if rows is not None:
        if file is not None or not isinstance(rows, list) or not all(
                isinstance(r, list) and all(isinstance(v, str) for v in r) for r in rows):
            raise PolicyError("a taxonomy takes either 'file' (ARX CSV) or 'rows' (a list of lists of strings)",
                              table=table, column=column)
        return TaxonomyHierarchy([list(r) for r in rows], source="(inline rows)")
    if not isinstance(file, str):
        raise PolicyError("a taxonomy needs 'file' (ARX CSV) or 'rows'", table=table, column=column)
    path = (base / file).resolve()
    if not path.is_file():
        raise PolicyError(f"taxonomy file not found: {path}", table=table, column=column)
    return TaxonomyHierarchy.from_csv(path, sep=sep)


def _sensitive(table: str, column: str, spec: Any, base: Path) -> Sensitive:
    spec = spec or {"type": "categorical"}
    if not isinstance(spec, dict) or spec.get("type", "categorical") not in ("categorical", "numeric"):
        raise PolicyError("expected {type: categorical | numeric}", table=table, column=column)
    h = spec.get("hierarchy")
    if h is None:
        return Sensitive(column, spec.get("type", "categorical"))
    try:
        taxonomy = _taxonomy(h if isinstance(h, str) else None, h if isinstance(h, list) else None,
                             str(spec.get("sep", ";")), base, table, column)
    except TaxonomyError as e:
        raise PolicyError(f"sensitive hierarchy: {e}", table=table, column=column) from None
    return Sensitive(column, spec.get("type", "categorical"), taxonomy)


def _requirement(table: str, spec: Any, sensitive: tuple[Sensitive, ...],
                 qis: tuple[QuasiIdentifier, ...]) -> Requirement:
    spec = spec or {}
    if not isinstance(spec, dict):
        raise PolicyError("'privacy' must be a mapping", table=table)
    unknown = set(spec) - PRIVACY_KEYS
    if unknown:
        raise PolicyError(f"unknown privacy keys {sorted(unknown)}", table=table)
    for key, what in NOT_YET.items():
        if key in spec:
            raise PolicyError(f"privacy.{key}: {what} is not available in this version of sqlanon; "
                              "remove the key rather than rely on a guarantee that is not enforced", table=table)
    k = spec.get("k", 2)
    if not isinstance(k, int) or isinstance(k, bool) or k < 2:
        raise PolicyError(f"privacy.k must be an integer >= 2, got {k!r}", table=table)
    ms = spec.get("max_suppression", 0.05)
    if not isinstance(ms, (int, float)) or isinstance(ms, bool) or not 0 <= ms <= 1:
        raise PolicyError(f"privacy.max_suppression must be a share in [0, 1], got {ms!r}", table=table)
    method = spec.get("method", "auto")
    if method not in METHODS:
        raise PolicyError(f"privacy.method {method!r} is not available (one of {', '.join(METHODS)})", table=table)
    alpha = None
    if "alpha" in spec:
        alpha = _alpha(table, spec["alpha"], sensitive)
    div = _diversity(table, spec["l"], sensitive) if "l" in spec else None
    close = _closeness(table, spec["t"], sensitive) if "t" in spec else None
    slicing = _slicing(table, spec.get("slicing"), qis, sensitive)
    few = spec.get("few_rows", 10_000)
    if not isinstance(few, int) or isinstance(few, bool) or few < 1:
        raise PolicyError(f"privacy.few_rows must be a positive integer, got {few!r}", table=table)
    min_rows = spec.get("min_rows", 0)
    if not isinstance(min_rows, int) or isinstance(min_rows, bool) or min_rows < 0:
        raise PolicyError(f"privacy.min_rows must be a non-negative integer, got {min_rows!r}", table=table)
    window = spec.get("difference_window", 86_400)
    if not isinstance(window, int) or isinstance(window, bool) or window < 0:
        raise PolicyError(f"privacy.difference_window must be a non-negative number of seconds, got {window!r}",
                          table=table)
    across = spec.get("across_releases", "reuse")
    if across not in ("reuse", "refuse", "off"):
        raise PolicyError(f"privacy.across_releases must be reuse, refuse or off, got {across!r}", table=table)
    where = spec.get("sensitive_predicates", "released")
    if where not in ("released", "stored"):
        raise PolicyError(f"privacy.sensitive_predicates must be released or stored, got {where!r}", table=table)
    consistent = spec.get("consistent", False)
    if not isinstance(consistent, bool):
        raise PolicyError(f"privacy.consistent must be true or false, got {consistent!r}", table=table)
    metric = spec.get("metric", "loss")
    if metric not in METRICS:
        raise PolicyError(f"privacy.metric must be one of {', '.join(METRICS)}, got {metric!r}", table=table)
    return Requirement(k=k, alpha=alpha, l=div, t=close, max_suppression=float(ms), method=method, slicing=slicing,
                       few_rows=few, min_rows=min_rows, difference_window=window, across_releases=across,
                       sensitive_predicates=where, consistent=consistent, metric=metric,
                       refine=_refine(table, spec.get("refine"), method))


def _refine(table: str, spec: Any, method: str) -> int:
    """``refine: kmeans`` or ``{method: kmeans, rounds: N}``: rounds of kAnonyMeans after MDAV."""
    if spec is None:
        return 0
    if isinstance(spec, str):
        spec = {"method": spec}
    if not isinstance(spec, dict) or set(spec) - {"method", "rounds"} or spec.get("method") != "kmeans":
        raise PolicyError(f"privacy.refine must be kmeans or {{method: kmeans, rounds: N}}, got {spec!r}", table=table)
    rounds = spec.get("rounds", REFINE_ROUNDS)
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
        raise PolicyError(f"privacy.refine.rounds must be a positive integer, got {rounds!r}", table=table)
    if method != "mdav":
        raise PolicyError(f"privacy.refine refines the groups of method mdav; the policy names method {method}",
                          table=table)
    return rounds


def _slicing(table: str, spec: Any, qis: tuple[QuasiIdentifier, ...], sensitive: tuple[Sensitive, ...]) -> Slicing:
    if spec is None:
        return Slicing()
    if not isinstance(spec, dict) or set(spec) - {"columns", "threshold", "buckets_by", "seed"}:
        raise PolicyError("privacy.slicing must be a mapping of columns, threshold, buckets_by, seed", table=table)
    names = [q.column for q in qis] + [s.column for s in sensitive]
    columns = spec.get("columns")
    if columns is not None:
        ok = isinstance(columns, list) and columns and all(
            isinstance(g, list) and g and all(isinstance(c, str) for c in g) for g in columns)
        if not ok:
            raise PolicyError("privacy.slicing.columns must be a list of column groups (lists of names)", table=table)
        flat = [c for g in columns for c in g]
        for c in flat:
            if c not in names:
                raise PolicyError("privacy.slicing.columns names a column that is no quasi-identifier or sensitive "
                                  "attribute", table=table, column=c)
        if len(set(flat)) != len(flat) or set(flat) != set(names):
            raise PolicyError(f"privacy.slicing.columns must name every quasi-identifier and sensitive column "
                              f"exactly once ({', '.join(names)})", table=table)
        columns = tuple(tuple(g) for g in columns)
    threshold = spec.get("threshold", 0.3)
    if not isinstance(threshold, (int, float)) or isinstance(threshold, bool) or not 0 < threshold <= 1:
        raise PolicyError(f"privacy.slicing.threshold must be in (0, 1], got {threshold!r}", table=table)
    by = spec.get("buckets_by")
    if by is not None and by not in [q.column for q in qis]:
        raise PolicyError("privacy.slicing.buckets_by must name a quasi-identifier", table=table, column=str(by))
    seed = spec.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**31):
        raise PolicyError(f"privacy.slicing.seed must be an integer in [0, 2^31), got {seed!r}", table=table)
    return Slicing(columns, float(threshold), by, seed)


def _attribute(table: str, key: str, spec: dict, sensitive: tuple[Sensitive, ...]) -> Sensitive:
    names = [s.column for s in sensitive]
    attribute = spec.get("attribute")
    if attribute is None:
        if len(names) != 1:
            raise PolicyError(f"privacy.{key} needs 'attribute' naming one sensitive column "
                              f"(the table has {len(names)})", table=table)
        attribute = names[0]
    if attribute not in names:
        raise PolicyError(f"privacy.{key}.attribute {attribute!r} is not a sensitive column", table=table)
    return next(s for s in sensitive if s.column == attribute)


def _diversity(table: str, spec: Any, sensitive: tuple[Sensitive, ...]) -> Diversity:
    if isinstance(spec, int) and not isinstance(spec, bool):
        spec = {"value": spec}
    if not isinstance(spec, dict) or "value" not in spec:
        raise PolicyError("privacy.l must be an integer or {value, variant, c, attribute}", table=table)
    value = spec["value"]
    if not isinstance(value, int) or isinstance(value, bool) or value < 2:
        raise PolicyError(f"privacy.l must be an integer >= 2, got {value!r}", table=table)
    variant = spec.get("variant", "distinct")
    if variant not in ("distinct", "entropy", "recursive"):
        raise PolicyError(f"privacy.l.variant must be distinct, entropy or recursive, got {variant!r}", table=table)
    c = spec.get("c")
    if variant == "recursive":
        if not isinstance(c, (int, float)) or isinstance(c, bool) or c <= 0:
            raise PolicyError(f"privacy.l.c must be a positive number for recursive (c,l)-diversity, got {c!r}",
                              table=table)
    elif c is not None:
        raise PolicyError("privacy.l.c applies to variant: recursive only", table=table)
    attribute = _attribute(table, "l", spec, sensitive).column
    return Diversity(value, attribute, variant, float(c) if c is not None else None)


def _closeness(table: str, spec: Any, sensitive: tuple[Sensitive, ...]) -> Closeness:
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        spec = {"value": spec}
    if not isinstance(spec, dict) or "value" not in spec:
        raise PolicyError("privacy.t must be a number or {value, distance, attribute}", table=table)
    value = spec["value"]
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value <= 1:
        raise PolicyError(f"privacy.t must be in (0, 1], got {value!r}", table=table)
    attr = _attribute(table, "t", spec, sensitive)
    distance = spec.get("distance", "ordered" if attr.kind == "numeric" else "equal")
    if distance not in ("ordered", "equal", "hierarchical", "variational"):
        raise PolicyError(f"privacy.t.distance must be ordered, equal, hierarchical or variational, got {distance!r}",
                          table=table, column=attr.column)
    # the variational distance (John's thesis, §2.3) ½ Σ |p − q| is the EMD under the equal ground distance
    distance = "equal" if distance == "variational" else distance
    if distance == "hierarchical" and attr.hierarchy is None:
        raise PolicyError("privacy.t.distance: hierarchical needs a 'hierarchy' (taxonomy file) on the "
                          "sensitive column", table=table, column=attr.column)
    return Closeness(float(value), attr.column, distance, attr.hierarchy)


def _alpha(table: str, spec: Any, sensitive: tuple[Sensitive, ...]) -> Alpha:
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        spec = {"value": spec}
    if not isinstance(spec, dict) or "value" not in spec:
        raise PolicyError("privacy.alpha must be a number or {value, protect, attribute}", table=table)
    value = spec["value"]
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value <= 1:
        raise PolicyError(f"privacy.alpha must be in (0, 1], got {value!r}", table=table)
    attribute = _attribute(table, "alpha", spec, sensitive).column
    protect = spec.get("protect", "all")
    if protect == "all":
        values = None
    elif isinstance(protect, list) and protect and all(isinstance(v, (str, int, float)) for v in protect):
        values = tuple(protect)
    else:
        raise PolicyError("privacy.alpha.protect must be 'all' or a non-empty list of values",
                          table=table, column=attribute)
    return Alpha(float(value), attribute, values)


def _positive(value: Any) -> float | None:
    """A positive number, also as YAML 1.1 reads ``1e-6`` (a string)."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value < float("inf"):
        return None
    return float(value)


def _window(table: str, value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str) and value[:-1].isdigit() and value[-1:] in WINDOW_UNITS and int(value[:-1]) > 0:
        return int(value[:-1]) * WINDOW_UNITS[value[-1]]
    raise PolicyError(f"privacy.epsilon.window must be a positive number of seconds or a duration such as 30d, "
                      f"12h, 90m, got {value!r}", table=table)


def _differential(table: str, spec: dict, person: str | None, releasable: list[str]) -> Differential:
    """``epsilon: {per_query, budget, per, window}``, ``delta``, ``contributions``, ``bounds``, ``groups``."""
    eps = spec["epsilon"]
    if not isinstance(eps, dict):
        raise PolicyError("privacy.epsilon must be a mapping {per_query, budget, per, window}: a number alone "
                          "names no budget, and answers without a budget can be asked again and averaged "
                          "(missing: privacy.epsilon.budget)", table=table)
    unknown = set(eps) - {"per_query", "budget", "per", "window"}
    if unknown:
        raise PolicyError(f"unknown keys {sorted(unknown)} in privacy.epsilon (per_query, budget, per, window)",
                          table=table)
    for key in ("per_query", "budget"):
        if key not in eps:
            why = " (answers without a budget can be asked again and averaged)" if key == "budget" else ""
            raise PolicyError(f"privacy.epsilon.{key} is missing{why}", table=table)
    per_query, budget = _positive(eps["per_query"]), _positive(eps["budget"])
    if per_query is None:
        raise PolicyError(f"privacy.epsilon.per_query must be a positive number, got {eps['per_query']!r}", table=table)
    if budget is None or budget < per_query:
        raise PolicyError(f"privacy.epsilon.budget must be a number of at least per_query ({per_query:g}), "
                          f"got {eps['budget']!r}", table=table)
    per = eps.get("per", "client")
    if per not in ("client", "table"):
        raise PolicyError(f"privacy.epsilon.per must be client or table, got {per!r}", table=table)
    window = _window(table, eps.get("window", "30d"))
    delta = None
    if "delta" in spec:
        delta = _positive(spec["delta"])
        if delta is None or delta >= 1:
            raise PolicyError(f"privacy.delta must be a probability in (0, 1), such as 1e-6, got {spec['delta']!r}",
                              table=table)
    rows = 1
    if "contributions" in spec:
        c = spec["contributions"]
        if not isinstance(c, dict) or set(c) != {"rows_per_person"}:
            raise PolicyError("privacy.contributions must be {rows_per_person: N}", table=table)
        rows = c["rows_per_person"]
        if not isinstance(rows, int) or isinstance(rows, bool) or rows < 1:
            raise PolicyError(f"privacy.contributions.rows_per_person must be a positive integer, got {rows!r}",
                              table=table)
        if person is None:
            raise PolicyError("privacy.contributions needs 'person' (the identifier column whose value is one "
                              "person): without it every row is one person", table=table)
    bounds = []
    bspec = spec.get("bounds") or {}
    if not isinstance(bspec, dict):
        raise PolicyError("privacy.bounds must map columns to [lowest, highest]", table=table)
    for column, pair in bspec.items():
        if column not in releasable:
            raise PolicyError("privacy.bounds names a column the policy does not release", table=table,
                              column=str(column))
        ok = isinstance(pair, list) and len(pair) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < float("inf") for v in pair)
        if not ok or pair[0] >= pair[1]:
            raise PolicyError(f"privacy.bounds: expected [lowest, highest] with lowest < highest, got {pair!r}",
                              table=table, column=str(column))
        bounds.append((str(column), pair[0], pair[1]))
    public = []
    gspec = spec.get("groups") or {}
    if not isinstance(gspec, dict) or set(gspec) - {"public"} or not isinstance(gspec.get("public") or {}, dict):
        raise PolicyError("privacy.groups must be {public: {column: [every value of its domain]}}", table=table)
    for column, values in (gspec.get("public") or {}).items():
        if column not in releasable:
            raise PolicyError("privacy.groups.public names a column the policy does not release", table=table,
                              column=str(column))
        if not isinstance(values, list) or not values or not all(
                isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in values) \
                or len(set(values)) != len(values):
            raise PolicyError("privacy.groups.public: expected a non-empty list of distinct values (the column's "
                              "whole public domain)", table=table, column=str(column))
        public.append((str(column), tuple(values)))
    return Differential(Budget(per_query, budget, per, window), delta, rows, tuple(bounds), tuple(public))
