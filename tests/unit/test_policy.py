"""Policy files: every fault is reported with the table, the column and what is wrong."""
from __future__ import annotations

import pytest

from sqlanon import PolicyError, load_policy
from sqlanon.hierarchy import TaxonomyHierarchy
from sqlanon.policy.model import Overrides

GOOD = {"tables": {"patients": {
    "identifiers": ["name"],
    "quasi_identifiers": {"age": {"type": "interval", "levels": [5, 10]}, "zip": {"type": "mask", "levels": [1, 2]}},
    "sensitive": {"disease": {}},
    "privacy": {"k": 3, "alpha": {"value": 0.5, "protect": ["HIV"]}},
}}}


def broken(**changes):
    import copy

    p = copy.deepcopy(GOOD)
    t = p["tables"]["patients"]
    for path, value in changes.items():
        keys = path.split("__")
        node = t
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
    return p


@pytest.mark.parametrize("changes,table,column,words", [
    ({"privacy__k": 1}, "patients", None, "k must be an integer >= 2"),
    ({"privacy__alpha": {"value": 1.5}}, "patients", None, "alpha must be in (0, 1]"),
    ({"privacy__alpha": {"value": 0.5, "protect": "some"}}, "patients", "disease", "protect"),
    ({"privacy__max_suppression": 2}, "patients", None, "max_suppression"),
    ({"privacy__method": "magic"}, "patients", None, "method 'magic'"),
    ({"privacy__epsilon": 1.0}, "patients", None, "missing: privacy.epsilon.budget"),
    ({"privacy__l": {"value": 2, "variant": "recursive"}}, "patients", None, "privacy.l.c must be a positive"),
    ({"privacy__t": {"value": 0.2, "distance": "hierarchical"}}, "patients", "disease", "needs a 'hierarchy'"),
    ({"privacy__t": {"value": 0.2, "distance": "manhattan"}}, "patients", "disease", "ordered, equal, hierarchical"),
    ({"privacy__method": "mdav", "privacy__l": 0}, "patients", None, "privacy.l must be an integer >= 2"),
    ({"quasi_identifiers__age": {"type": "interval", "levels": [10, 5]}}, "patients", "age", "rising"),
    ({"quasi_identifiers__age": {"type": "interval", "levels": [5, 20, 50]}}, "patients", "age",
     "50 is not a multiple of 20"),
    ({"quasi_identifiers__age": {"type": "colour"}}, "patients", "age", "unknown hierarchy type"),
    ({"quasi_identifiers__zip": {"type": "taxonomy", "file": "nope.csv"}}, "patients", "zip", "not found"),
    ({"quasi_identifiers__zip": {"type": "date", "levels": ["year", "month"]}}, "patients", "zip", "rising subset"),
    ({"insensitive": ["age"]}, "patients", "age", "named as quasi-identifier and as insensitive"),
    ({"colour": 1}, "patients", None, "unknown keys"),
])
def test_policy_errors_name_table_and_column(changes, table, column, words):
    with pytest.raises(PolicyError) as e:
        load_policy(broken(**changes))
    assert e.value.table == table and e.value.column == column
    assert words in str(e.value)


def test_good_policy_loads():
    p = load_policy(GOOD).for_table("patients")
    assert p.releasable == ("age", "zip", "disease")
    assert p.requirement.alpha.protect == ("HIV",)


def test_variational_distance_is_the_equal_ground_distance():
    p = load_policy(broken(privacy__t={"value": 0.2, "distance": "variational"})).for_table("patients")
    assert p.requirement.t.distance == "equal"


def test_methods_of_issue_3_are_named_in_policies():
    for method in ("sabre", "mdav", "vmdav", "mondrian", "alpha_k"):
        assert load_policy(broken(privacy__method=method)).for_table("patients").requirement.method == method


def test_policy_file_paths_are_relative_to_the_file(tmp_path):
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "c.csv").write_text("a;x;*\nb;x;*\nc;y;*\n")
    (tmp_path / "p.yml").write_text(
        "tables:\n  t:\n    quasi_identifiers:\n      c: {type: taxonomy, file: h/c.csv}\n")
    h = load_policy(tmp_path / "p.yml").for_table("t").qi("c").hierarchy
    assert isinstance(h, TaxonomyHierarchy) and h.height == 2 and h.leaves == ["a", "b", "c"]


@pytest.mark.parametrize("rows,words", [
    ([["a", "x", "*"], ["b", "*"]], "different numbers of levels"),
    ([["a", "x", "*"], ["a", "y", "*"]], "listed twice"),
    ([["a", "x", "r"], ["b", "x", "s"]], "one root"),
    ([["a", "x", "p", "*"], ["b", "x", "q", "*"]], "two parents"),
])
def test_taxonomy_must_be_a_tree(rows, words):
    from sqlanon.hierarchy import TaxonomyError

    with pytest.raises(TaxonomyError, match=words):
        TaxonomyHierarchy(rows)


def test_arx_hierarchies_of_adult_load(datasets):
    for f in (datasets / "adult" / "hierarchies").glob("*.csv"):
        h = TaxonomyHierarchy.from_csv(f)
        assert h.height >= 1 and h.top_label == "*"


def test_overrides_only_tighten():
    tp = load_policy(GOOD).for_table("patients")
    req = tp.requirement
    assert req.tightened(Overrides(k=5)).k == 5
    with pytest.raises(PolicyError, match="weaker"):
        req.tightened(Overrides(k=2))
    with pytest.raises(PolicyError, match="weaker"):
        req.tightened(Overrides(alpha=0.9))
    # a model the policy does not ask for judges the first sensitive attribute; a method may change
    added = req.tightened(Overrides(l=3, t=0.3, method="mondrian"), tp.sensitive)
    assert (added.l.value, added.l.attribute, added.l.variant) == (3, tp.sensitive[0].column, "distinct")
    assert (added.t.value, added.t.attribute) == (0.3, tp.sensitive[0].column)
    assert added.method == "mondrian"
    assert added.tightened(Overrides(l=4, t=0.2), tp.sensitive).l.value == 4
    for weaker in (Overrides(l=2), Overrides(t=0.5)):
        with pytest.raises(PolicyError, match="weaker"):
            added.tightened(weaker, tp.sensitive)
    with pytest.raises(PolicyError, match="not available"):
        req.tightened(Overrides(method="magic"))
