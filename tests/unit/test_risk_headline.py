"""The report's risk headline from a class-size table, and the policy's ``report`` key."""
from __future__ import annotations

import pytest

from sqlanon.errors import PolicyError
from sqlanon.policy import load_policy
from sqlanon.risk.headline import headline, headline_lines

TABLE = {"quasi_identifiers": {"age": {"type": "suppress"}}, "privacy": {"k": 2}}


def test_the_figures_of_a_known_histogram():
    # classes of 1, 1, 2, 3, 5 records: 12 records, 5 classes, 2 sample uniques
    h = headline(["age", "sex"], {1: 2, 2: 1, 3: 1, 5: 1}, suppressed=4)
    assert (h["records"], h["classes"], h["sample_uniques"], h["suppressed_records"]) == (12, 5, 2, 4)
    assert h["prosecutor"] == h["journalist"] == {"highest": 1.0, "average": 5 / 12}
    assert h["marketer"] == {"average": 5 / 12} and h["sample_unique_share"] == 2 / 12
    assert "population_uniqueness" not in h
    lines = headline_lines(h)
    assert "4 fully suppressed records left out" in lines[0]
    assert any(line.startswith("  prosecutor      highest 100.00 %, average 41.67 %") for line in lines)
    with_population = headline(["age"], {1: 2, 2: 1, 3: 1, 5: 1}, population=1200)
    assert with_population["population_uniqueness"]["population"] == 1200


def test_the_policy_report_key():
    p = load_policy({"tables": {"t": {**TABLE, "report": {"risk": True, "population": "usa"}}}})
    assert p.tables["t"].report.risk and p.tables["t"].report.population == "usa"
    assert not load_policy({"tables": {"t": TABLE}}).tables["t"].report.risk
    for bad, match in (({"risk": "yes"}, "report.risk"), ({"population": "atlantis"}, "report.population"),
                       ({"population": 0}, "at least one"), ({"risks": True}, "'report' must be")):
        with pytest.raises(PolicyError, match=match):
            load_policy({"tables": {"t": {**TABLE, "report": bad}}})
