"""The DB proxy: PostgreSQL and MySQL wire protocols in front of applications.

Clients authenticate to the proxy (``users.py``); every statement they send goes through the
library's rewriter (``sqlanon.api``): pass-through statements are relayed to the database,
statements over protected tables are answered with the anonymized rows, the rest is refused
with a protocol error carrying the library's message. Protocol code lives in ``pg/`` and
``mysql/``; this package imports ``sqlanon.api`` and nothing below it.
"""
