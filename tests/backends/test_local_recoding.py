"""Iterative local recoding over the lattice (method ``local``, issue 23): k holds on the released
rows, nothing is withheld or left at the root, the classes are the ones the node order gives,
and on Adult's complete rows the KL divergence, computed here from the released rows alone,
beats ARX's local recoding (0.026) and halves Mondrian's."""
from __future__ import annotations

import csv
import math
from collections import Counter, defaultdict

import pytest

import sqlanon
from sqlanon.anonymize.local_recoding import LocalRecoding
from sqlanon.policy.model import Alpha, Closeness, Requirement
from tests.backends.test_sabre import ADULT_QIS, equal_emd
from tests.backends.test_sabre import by_class as classes_of
from tests.helpers import assert_alpha_k, connect, load_table, read_adult


def policy(privacy: dict, table: str = "l8") -> dict:
    return {"tables": {table: {"quasi_identifiers": {"age": {"type": "interval", "levels": [2, 4, 8]}},
                               "sensitive": {"s": {}},
                               "privacy": {"method": "local", "max_suppression": 0, **privacy}}}}


def test_each_row_at_the_first_node_where_k_rows_are_left(db_url):
    # k=2: the two 0s at the values; 2,3 and 6,7 at width 2; 1 and 5 alone until width 8
    load_table(db_url, "l8", [("age", "int"), ("s", "text")], [(a, "x") for a in (0, 0, 1, 2, 3, 5, 6, 7)])
    with connect(db_url, policy=policy({"k": 2})) as db:
        res = db.execute("SELECT age FROM l8")
    found = Counter(r[0] for r in res.rows)
    assert sorted(found.values()) == [2, 2, 2, 2] and found["0"] == 2
    assert res.report.method == "local" and res.report.rows_withheld == 0
    assert res.report.levels["age"] == {"0 (raw)": 2, "1 (width 2)": 4, "3 (width 8)": 2}
    assert found == {"0": 2, "[2,4)": 2, "[6,8)": 2, "[0,8)": 2}, found


def test_what_the_root_leaves_joins_the_nearest_class(db_url):
    # k=2: the two 0s are a class at the values; 5 alone is left at the root and joins them
    load_table(db_url, "l3", [("age", "int"), ("s", "text")], [(0, "x"), (0, "x"), (5, "x")])
    with connect(db_url, policy=policy({"k": 2}, "l3")) as db:
        res = db.execute("SELECT age FROM l3")
    assert len(res.rows) == 3 and len({r[0] for r in res.rows}) == 1 and res.rows[0][0] != "*"
    assert res.report.rows_withheld == 0 and res.report.rows_generalized == 0


def test_a_selection_smaller_than_k_is_refused(db_url):
    load_table(db_url, "l2", [("age", "int"), ("s", "text")], [(0, "x"), (5, "x")])
    with connect(db_url, policy=policy({"k": 3}, "l2")) as db:
        with pytest.raises(sqlanon.ReleaseRefused):
            db.execute("SELECT age FROM l2")


@pytest.mark.parametrize("model,name", [({"l": 2}, "l-diversity"), ({"t": {"value": 0.3, "distance": "ordered"}},
                                                                       "t-closeness with the ordered distance")])
def test_other_models_are_refused_by_name(db_url, model, name):
    load_table(db_url, "l1", [("age", "int"), ("s", "text")], [(a, "x") for a in range(4)])
    with connect(db_url, policy=policy({"k": 2, **model}, "l1")) as db:
        with pytest.raises(sqlanon.PolicyError, match=name):
            db.execute("SELECT age, s FROM l1")


@pytest.mark.parametrize("requirement,name", [
    (Requirement(k=2, t=Closeness(0.3, "s", "hierarchical")), "t-closeness with the hierarchical distance"),
    (Requirement(k=2, t=Closeness(0.3, "s", "equal"), alpha=Alpha(0.5, "u", ("y",))),
     "one sensitive attribute per release; the requirement names s, u")])
def test_t_closeness_it_does_not_build_is_refused(requirement, name):
    with pytest.raises(sqlanon.PolicyError, match=name):
        LocalRecoding(requirement)


#: k=2, t on s: the lattice's classes and the join rounds leave 7 rows that no class keeps
#: within t=0.05 with them; the one class left gathers them (the selection: distance 0)
T_ROWS = [(0, "x"), (1, "x"), (1, "x"), (1, "y"), (2, "y"), (2, "z"), (3, "x"), (3, "x"), (3, "z"), (4, "y"),
          (4, "y"), (4, "z"), (5, "w"), (5, "x"), (5, "x"), (5, "x"), (5, "y"), (6, "x"), (6, "z"), (7, "x"),
          (7, "x"), (7, "x")]


@pytest.mark.parametrize("t,labels", [(0.05, {"[0,8)"}), (0.1, {"[0,4)", "[4,8)"}), (0.25, None)])
def test_t_closeness_holds_on_the_released_rows(db_url, t, labels):
    name = f"lt{int(t * 100)}"
    load_table(db_url, name, [("age", "int"), ("s", "text")], T_ROWS)
    with connect(db_url, policy=policy({"k": 2, "t": {"value": t, "distance": "equal"}}, name)) as db:
        res = db.execute(f"SELECT age, s FROM {name}")
    assert sorted(r[1] for r in res.rows) == sorted(r[1] for r in T_ROWS) and res.report.rows_withheld == 0
    by_class = classes_of(res.rows, qi=[0], sens=1)
    whole = Counter(r[1] for r in T_ROWS)
    assert max(equal_emd(c, whole) for c in by_class.values()) <= t + 1e-9
    assert min(sum(c.values()) for c in by_class.values()) >= 2
    assert labels is None and len(by_class) > 2 or {c for c, in by_class} == labels, by_class


def test_alpha_the_root_leaves_joins_classes_that_stay_compliant(db_url):
    # k=2, α=0.5 on 'y': 0,0 and 2,3 are classes at the first nodes; 1 ('y') and 5 ('y') are
    # left at the root (together all 'y') and both join 0,0 (nearest for 1, a tie for 5 that the
    # smaller id takes), which they keep at half 'y'; 2,3 stays as it was
    rows = [(0, "n"), (0, "n"), (1, "y"), (2, "n"), (3, "n"), (5, "y")]
    load_table(db_url, "l6", [("age", "int"), ("s", "text")], rows)
    with connect(db_url, policy=policy({"k": 2, "alpha": {"value": 0.5, "protect": ["y"]}}, "l6")) as db:
        res = db.execute("SELECT age, s FROM l6")
    assert len(res.rows) == 6 and res.report.rows_generalized == 0
    assert_alpha_k(res.rows, qi=[0], sens=1, k=2, alpha=0.5, protect=["y"])
    assert Counter(r[0] for r in res.rows) == {"[0,8)": 4, "[2,4)": 2}


def kl_sum(selected: list[tuple], released: list[tuple], hierarchies: list[dict[str, list[str]]]) -> float:
    """Σ over the QIs of the normalized KL divergence (John's thesis §6.1), from the rows alone:
    p = the selection's share of each value, q = each released label's rows spread evenly over
    the values of the selection it covers (at any level of the value's hierarchy row)."""
    n, total = len(selected), 0.0
    for j, tax in enumerate(hierarchies):
        p = Counter(r[j] for r in selected)
        covers: dict[str, set] = defaultdict(set)
        for v in p:
            for label in tax[str(v)]:
                covers[label].add(v)
        mass: Counter = Counter()
        for label, rows in Counter(r[j] for r in released).items():
            for v in covers[label]:
                mass[v] += rows / len(covers[label])
        d = sum(c / n * math.log2(c / mass[v]) for v, c in p.items())
        h = -sum(c / n * math.log2(c / n) for c in p.values())
        total += d / h
    return total


def _adult_files(datasets) -> list:
    h = datasets / "adult" / "hierarchies"
    return [h / f"adult_hierarchy_{q.replace('_', '-')}.csv" for q in ADULT_QIS]


def _adult_policy(datasets, privacy: dict, sensitive: str | None = None) -> dict:
    """Adult's six QIs with ARX's hierarchies, method local; ``sensitive`` leaves the insensitive."""
    return {"tables": {"adult": {
        "quasi_identifiers": {q: {"type": "taxonomy", "file": str(f)} for q, f in zip(ADULT_QIS, _adult_files(datasets))},
        **({"sensitive": {sensitive: {}}} if sensitive else {}),
        "insensitive": [c for c in ("workclass", "occupation") if c != sensitive],
        "privacy": {"method": "local", "k": 5, **privacy}}}}


def _adult_sql(sensitive: str | None = None) -> str:
    """The complete rows (no '?'), the six QIs and ``sensitive``."""
    return (f"SELECT {', '.join([*ADULT_QIS, *([sensitive] if sensitive else [])])} FROM adult "
            "WHERE native_country IS NOT NULL AND workclass IS NOT NULL AND occupation IS NOT NULL")


def _complete_adult(datasets, sensitive: int | None = None) -> list[tuple]:
    """The same rows read from the file, independently of the database: QIs, then column ``sensitive``."""
    return [(r[0], r[3], r[5], r[8], r[9], r[13], *([r[sensitive]] if sensitive is not None else []))
            for r in read_adult(datasets / "adult" / "adult.data")
            if r[13] is not None and r[1] is not None and r[6] is not None]


def _adult_hierarchies(datasets) -> list[dict[str, list[str]]]:
    out = []
    for f in _adult_files(datasets):
        with open(f, encoding="utf-8") as fh:
            out.append({row[0].strip(): [v.strip() for v in row] for row in csv.reader(fh, delimiter=";")})
    return out


@pytest.mark.slow
def test_adult_k5_beats_arx_local_recoding(adult_url, datasets):
    """Adult's 30,162 complete rows, QIs as issue 23 measures them: KL ≤ 0.026 (ARX 3.9.2's
    local recoding) with nothing suppressed, at most half of Mondrian's on the same rows."""
    sql = _adult_sql()
    with connect(adult_url, policy=_adult_policy(datasets, {"max_suppression": 0})) as db:
        res = db.execute(sql)
        mondrian = db.execute(sql, method="mondrian")
    selected = _complete_adult(datasets)
    assert len(selected) == 30162 == len(res.rows)
    sizes = Counter(tuple(r) for r in res.rows)
    assert min(sizes.values()) >= 5 and res.report.classes == len(sizes)
    assert not any(all(v == "*" for v in r) for r in res.rows) and res.report.rows_suppressed == 0
    hierarchies = _adult_hierarchies(datasets)
    for j, tax in enumerate(hierarchies):
        # every released value is a node of its hierarchy
        assert {r[j] for r in res.rows} <= {v for row in tax.values() for v in row}
    # each QI's released labels cover the selection's values as often as they occur
    for j, tax in enumerate(hierarchies):
        need = Counter(r[j] for r in selected)
        for label, rows in Counter(r[j] for r in res.rows).items():
            assert rows <= sum(c for v, c in need.items() if label in tax[str(v)])
    kl = kl_sum(selected, res.rows, hierarchies)
    assert kl <= 0.026 and kl <= kl_sum(selected, mondrian.rows, hierarchies) / 2
    assert res.report.kl_sum == pytest.approx(kl, abs=1e-6)


@pytest.mark.slow
def test_adult_alpha_k_nothing_at_the_root(adult_url, datasets):
    """(α,k) with k=5, α=0.5 on income '>50K', Adult's complete rows: (α,k) local recoding
    leaves 7.8 % of them at the root; here none, α and k hold on the released rows, and the KL
    divergence is at most half of (α,k)'s and Mondrian's (0.26 both)."""
    pol = _adult_policy(datasets, {"alpha": {"value": 0.5, "protect": [">50K"]}, "max_suppression": 0}, "income")
    with connect(adult_url, policy=pol) as db:
        res = db.execute(_adult_sql("income"))
    selected = _complete_adult(datasets, 14)
    assert len(res.rows) == len(selected) == 30162
    assert Counter(r[6] for r in res.rows) == Counter(r[6] for r in selected)
    assert_alpha_k(res.rows, qi=list(range(6)), sens=6, k=5, alpha=0.5, protect=[">50K"])
    assert not any(all(v == "*" for v in r[:6]) for r in res.rows)
    kl = kl_sum(selected, res.rows, _adult_hierarchies(datasets))
    assert kl <= 0.13 and res.report.kl_sum == pytest.approx(kl, abs=1e-6)


@pytest.mark.slow
@pytest.mark.backends("postgresql")  # about a minute; the t statements run on every backend above
def test_adult_t_closeness_few_rows_at_the_root(adult_url, datasets):
    """k=5, t=0.2 (equal distance) on occupation, Adult's complete rows: SABRE leaves 21.6 % of
    them with every QI at the root at KL 2.656; here at most 4 %, at a lower KL, and t and k hold
    on the released rows, measured here."""
    pol = _adult_policy(datasets, {"t": {"value": 0.2, "distance": "equal"}, "max_suppression": 0.04}, "occupation")
    with connect(adult_url, policy=pol) as db:
        res = db.execute(_adult_sql("occupation"))
    selected = _complete_adult(datasets, 6)
    assert len(res.rows) == len(selected) == 30162
    assert Counter(r[6] for r in res.rows) == Counter(r[6] for r in selected)
    by_class = classes_of(res.rows, qi=list(range(6)), sens=6)
    whole = Counter(r[6] for r in selected)
    assert max(equal_emd(c, whole) for c in by_class.values()) <= 0.2 + 1e-9
    assert min(sum(c.values()) for c in by_class.values()) >= 5
    assert sum(all(v == "*" for v in r[:6]) for r in res.rows) <= 0.04 * len(selected)
    assert kl_sum(selected, res.rows, _adult_hierarchies(datasets)) <= 2.656
