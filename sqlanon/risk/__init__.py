"""Re-identification risk of a table or a release, measured inside the database (``sqlanon risk``).

``classes`` builds the class-size frequency table in the database (or from released rows);
``sample`` derives prosecutor, journalist and marketer risk and sample uniqueness from it,
``population`` the population-uniqueness estimates (Pitman, Zayatz, SNB; Dankar et al.'s rule),
``numerics`` the special functions they need; ``report`` puts them together. Only (class size,
number of classes) pairs leave the database. Never imports anonymize/.
"""
from sqlanon.risk.report import RiskReport, assess

__all__ = ["RiskReport", "assess"]
