"""Anonymization methods, registered by the name a policy uses."""
from __future__ import annotations

from sqlanon.anonymize.alpha_k import AlphaK
from sqlanon.anonymize.base import Method, Release
from sqlanon.anonymize.global_recoding import GlobalRecoding
from sqlanon.anonymize.local_recoding import LocalRecoding
from sqlanon.anonymize.mdav import MDAV, VMDAV
from sqlanon.anonymize.mondrian import Mondrian
from sqlanon.anonymize.sabre import Sabre
from sqlanon.anonymize.slicing import Slicing

REGISTRY: dict[str, type] = {m.name: m for m in (AlphaK, Mondrian, LocalRecoding, Sabre, MDAV, VMDAV, Slicing,
                                                    GlobalRecoding)}

__all__ = ["REGISTRY", "Method", "Release", "AlphaK", "GlobalRecoding", "LocalRecoding", "MDAV", "Mondrian", "Sabre", "Slicing", "VMDAV"]
