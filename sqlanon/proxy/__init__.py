"""The DB proxy: PostgreSQL and MySQL wire protocols in front of applications.

Clients authenticate to the proxy (``users.py``); every statement they send goes through the
library's rewriter (``sqlanon.api``): pass-through statements are relayed to the database,
statements over protected tables are answered with the anonymized rows, the rest is refused
with a protocol error carrying the library's message. Protocol code lives in ``pg/`` and
``mysql/``. This package calls the library through ``sqlanon.api``; below it, it reads only the
parser's input bounds (``sqlanon.parse``) and the allowlist of functions
(``sqlanon.analyze.allowlist``), so that catalog and session statements are judged by the same
rules as queries.
"""
