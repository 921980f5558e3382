"""Differential privacy in a policy: every key validated, every fault named."""
from __future__ import annotations

import copy

import pytest

from sqlanon import PolicyError, load_policy
from sqlanon.policy.model import Overrides

BASE = {"tables": {"visits": {
    "identifiers": ["patient"], "person": "patient",
    "quasi_identifiers": {"age": {"type": "interval", "levels": [10]}, "sex": {"type": "suppress"}},
    "sensitive": {"disease": {}},
    "privacy": {"k": 2, "epsilon": {"per_query": 0.5, "budget": 4.0, "per": "client", "window": "30d"},
                "delta": "1e-6", "contributions": {"rows_per_person": 5}, "bounds": {"age": [17, 90]},
                "groups": {"public": {"sex": ["Male", "Female"]}}},
}}}


def policy(**privacy):
    p = copy.deepcopy(BASE)
    for k, v in privacy.items():
        if v is None:
            p["tables"]["visits"]["privacy"].pop(k)
        else:
            p["tables"]["visits"]["privacy"][k] = v
    return p


def test_every_key_is_read():
    dp = load_policy(BASE).for_table("visits").requirement.dp
    assert dp.epsilon.per_query == 0.5 and dp.epsilon.budget == 4.0 and dp.epsilon.per == "client"
    assert dp.epsilon.window == 30 * 86_400
    assert dp.delta == 1e-6  # YAML 1.1 reads 1e-6 as a string
    assert dp.rows_per_person == 5 and dp.bound("age") == (17, 90) and dp.domain("sex") == ("Male", "Female")
    assert dp.bound("sex") is None and dp.domain("age") is None


@pytest.mark.parametrize("privacy,words", [
    ({"epsilon": 1.0}, "missing: privacy.epsilon.budget"),
    ({"epsilon": {"per_query": 0.5}}, "privacy.epsilon.budget is missing"),
    ({"epsilon": {"budget": 4}}, "privacy.epsilon.per_query is missing"),
    ({"epsilon": {"per_query": 0.5, "budget": 0.1}}, "at least per_query"),
    ({"epsilon": {"per_query": -1, "budget": 4}}, "per_query must be a positive number"),
    ({"epsilon": {"per_query": 0.5, "budget": 4, "per": "team"}}, "per must be client or table"),
    ({"epsilon": {"per_query": 0.5, "budget": 4, "window": "a month"}}, "window must be"),
    ({"epsilon": {"per_query": 0.5, "budget": 4, "scope": 1}}, "unknown keys ['scope']"),
    ({"delta": 2}, "privacy.delta must be a probability"),
    ({"contributions": {"rows_per_person": 0}}, "rows_per_person must be a positive integer"),
    ({"contributions": 5}, "privacy.contributions must be {rows_per_person: N}"),
    ({"bounds": {"age": [90, 17]}}, "lowest < highest"),
    ({"bounds": {"patient": [0, 1]}}, "does not release"),
    ({"groups": {"public": {"sex": []}}}, "non-empty list of distinct values"),
    ({"groups": {"secret": {}}}, "privacy.groups must be"),
])
def test_faults_are_named(privacy, words):
    with pytest.raises(PolicyError) as e:
        load_policy(policy(**privacy))
    assert words in str(e.value) and e.value.table == "visits"


def test_settings_of_dp_need_epsilon_and_contributions_need_person():
    for key in ("delta", "contributions", "bounds", "groups"):
        with pytest.raises(PolicyError, match=f"privacy.{key} is a setting of differential privacy"):
            load_policy(policy(epsilon=None, **{k: None for k in ("delta", "contributions", "bounds", "groups")
                                                 if k != key}))
    with pytest.raises(PolicyError, match="method dp needs privacy.epsilon"):
        load_policy(policy(epsilon=None, delta=None, contributions=None, bounds=None, groups=None, method="dp"))
    p = policy()
    p["tables"]["visits"].pop("person")
    with pytest.raises(PolicyError, match="contributions needs 'person'"):
        load_policy(p)


def test_method_dp_as_an_override_needs_epsilon():
    req = load_policy(BASE).for_table("visits").requirement
    assert req.tightened(Overrides(method="dp")).method == "dp"
    plain = load_policy(policy(epsilon=None, delta=None, contributions=None, bounds=None, groups=None))
    with pytest.raises(PolicyError, match="method dp needs privacy.epsilon"):
        plain.for_table("visits").requirement.tightened(Overrides(method="dp"))
