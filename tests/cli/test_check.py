"""`sqlanon check`: a stored table, anonymized by anyone, measured against the models; the exit
status says whether they all hold."""
from __future__ import annotations

import json

from tests.cli.test_cli import sqlanon as run
from tests.helpers import connect, load_table

ROWS = [("[30,40)", "185**", "flu"), ("[30,40)", "185**", "cold"), ("[30,40)", "185**", "flu"),
        ("[40,50)", "185**", "hiv"), ("[40,50)", "185**", "hiv"), ("[40,50)", "185**", "flu")]


def test_a_table_that_holds_exits_zero_and_one_that_fails_exits_one(db_url):
    load_table(db_url, "released", [("age", "text"), ("zip", "text"), ("disease", "text")], ROWS)
    ok = run("check", "released", "--db", db_url, "--qi", "age,zip", "--sensitive", "disease", "--k", "3",
             "--l", "2", "--format", "json")
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout)
    assert doc["rows"] == 6 and doc["classes"] == 2 and doc["ok"]
    assert [c["criterion"] for c in doc["checks"]] == ["k-anonymity", "distinct l-diversity"]
    bad = run("check", "released", "--db", db_url, "--qi", "age,zip", "--sensitive", "disease", "--k", "4",
              "--alpha", "0.5", "--protect", "hiv", "--format", "markdown")
    assert bad.returncode == 1, bad.stderr
    assert "| k-anonymity | **no** | smallest class 3 (k=4) |" in bad.stdout
    assert "| alpha-deassociation | **no** | largest protected share 0.6667 (alpha=0.5) |" in bad.stdout


def test_errors_name_the_column_and_exit_two(db_url):
    load_table(db_url, "released", [("age", "text"), ("zip", "text"), ("disease", "text")], ROWS)
    out = run("check", "released", "--db", db_url, "--qi", "age,nope")
    assert out.returncode == 2 and "nope" in out.stderr


def test_the_library_measures_what_the_cli_prints(db_url):
    load_table(db_url, "released", [("age", "text"), ("zip", "text"), ("disease", "text")], ROWS)
    policy = {"tables": {"released": {"quasi_identifiers": {"age": {"type": "suppress"}, "zip": {"type": "suppress"}},
                                      "sensitive": {"disease": {}}, "privacy": {"k": 3, "t": 0.4}}}}
    with connect(db_url, policy=policy) as db:
        m = db.check("released")
    # classes {flu, cold, flu} and {hiv, hiv, flu} against the whole 1/2 flu, 1/6 cold, 1/3 hiv
    assert m.ok and m.classes == 2 and [v.measured for v in m.verdicts][1].startswith("largest distance 0.3333")
