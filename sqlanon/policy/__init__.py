"""Policies: which columns of a table are what, and what every release must satisfy."""
from sqlanon.policy.load import load_policy, parse_policy
from sqlanon.policy.model import Alpha, Policy, QuasiIdentifier, Requirement, Sensitive, TablePolicy

__all__ = ["Alpha", "Policy", "QuasiIdentifier", "Requirement", "Sensitive", "TablePolicy",
           "load_policy", "parse_policy"]
