"""Before the policy: which columns single people out (``sqlanon discover``).

``lattice`` searches the column sets for minimal unique and nearly unique combinations with
Grunert & Heuer's pruning; ``profile`` reads what the search needs from the database (counts,
lengths, the range of numbers — no value); ``skeleton`` writes a policy proposal; ``find`` runs
them in order. Never imports anonymize/.
"""
from sqlanon.discover.find import Discovery, Identifier, discover

__all__ = ["Discovery", "Identifier", "discover"]
