"""The report's text: every measure with its meaning, no Python reprs, no internal names."""
from __future__ import annotations

import json
import math

from sqlanon.finish.report import Report
from sqlanon.finish.text import MEANINGS


def joined() -> Report:
    """A report as the flow makes it for a join of two protected tables (names as it has them)."""
    return Report(
        table="clinic JOIN stays ON clinic.patient_id = stays.patient_id", method="alpha_k", rule="auto: …",
        requirement={"k": 17, "alpha": {"value": 0.3, "attribute": "diagnosis", "protect": ["HIV", "Herzinfarkt"]},
                     "l": {"value": 3, "attribute": "diagnosis", "variant": "recursive", "c": 2},
                     "t": {"value": 0.2, "attribute": "diagnosis", "distance": "hierarchical"},
                     "persons": {"k": 5, "columns": ["clinic.patient_id"]}, "max_suppression": 0.05},
        rows_in=100, rows_released=96, rows_withheld=4, rows_generalized=1, rows_suppressed=5, classes=4,
        checks=[{"criterion": "k-anonymity", "ok": True, "measured": "smallest class 17 (k=17)"}],
        kl_divergence={"age": 0.25, "zip": math.inf}, kl_sum=math.inf, discernibility=2700, avg_class_size=1.41,
        levels={"age": {"0 (raw)": 10, "5 (root)": 86}}, statements=12, seconds={"anonymize": 0.5},
        notes=["9 search round(s) on the frequency table"])


def test_every_measure_is_explained_in_words():
    text = str(joined())
    for name in ("KL divergence", "classes", "discernibility", "C_avg", "levels"):
        assert MEANINGS[name] in text
    assert "suppressed = 4 withheld (selected rows left out) + 1 released with every quasi-identifier" in text
    assert "rows: 100 selected, 96 released, 5 suppressed (5.00%)" in text
    assert "age 0.25, zip ∞; sum ∞" in text
    assert "age: level 0 (raw): 10, level 5 (root): 86" in text


def test_no_reprs_and_no_internal_names():
    text = str(joined())
    assert "{'" not in text and "['" not in text and "sqlanon_" not in text
    assert ("requirement k=17 (every class at least 17 rows); alpha=0.3 on diagnosis (no protected value above 30% "
            "of a class; protected: HIV, Herzinfarkt); l=3 on diagnosis (recursive (c=2, l=3)-diversity); t=0.2 on "
            "diagnosis (hierarchical distance") in text
    assert "at least 5 distinct persons per class (persons recognised by clinic.patient_id); max_suppression=0.05 (at most 5% of the selected rows" in text


def test_json_is_the_same_report_as_data():
    d = joined().to_dict()
    assert json.loads(json.dumps(d))["kl_divergence"] == {"age": 0.25, "zip": "inf"}
    assert d["rows_suppressed"] == d["rows_withheld"] + d["rows_generalized"]


def test_pass_through():
    assert str(Report(table=None, method="none", rule="no protected table", statements=1)).startswith(
        "pass-through (no protected table); 1 statement(s)")
