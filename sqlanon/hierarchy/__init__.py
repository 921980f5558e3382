"""Hierarchy kinds by policy ``type``; each compiles its levels to SQL expressions."""
from sqlanon.hierarchy.base import TOP, Hierarchy
from sqlanon.hierarchy.date import STEPS as DATE_STEPS
from sqlanon.hierarchy.date import DateHierarchy
from sqlanon.hierarchy.interval import IntervalError, IntervalHierarchy
from sqlanon.hierarchy.mask import MaskHierarchy
from sqlanon.hierarchy.suppress import SuppressHierarchy
from sqlanon.hierarchy.taxonomy import TaxonomyError, TaxonomyHierarchy

KINDS = ("interval", "mask", "taxonomy", "date", "suppress")

__all__ = [
    "TOP", "KINDS", "DATE_STEPS", "Hierarchy", "DateHierarchy", "IntervalError", "IntervalHierarchy", "MaskHierarchy",
    "SuppressHierarchy", "TaxonomyError", "TaxonomyHierarchy",
]
