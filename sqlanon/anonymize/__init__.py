"""Anonymization methods, registered by the name a policy uses."""
from __future__ import annotations

from sqlanon.anonymize.alpha_k import AlphaK
from sqlanon.anonymize.base import Method, Release
from sqlanon.anonymize.mondrian import Mondrian

REGISTRY: dict[str, type] = {AlphaK.name: AlphaK, Mondrian.name: Mondrian}

__all__ = ["REGISTRY", "Method", "Release", "AlphaK", "Mondrian"]
