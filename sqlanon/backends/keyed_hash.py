"""HMAC-SHA-256 (RFC 2104) of a join key, written in each database's own SQL.

A cross-database join (sqlanon/distributed/) matches rows by a pseudonym of the join key that
every party computes where the key is stored: HMAC(K, text of the key) with a key K that the
client draws at random for each query and never stores. Databases have SHA-256 but seldom HMAC
(PostgreSQL only with pgcrypto, MariaDB not at all), so the two nested hashes are spelled out:
H((K ⊕ opad) ‖ H((K ⊕ ipad) ‖ m)). Only 64 bits of the digest are kept (16 hex digits): two keys
of a million share a pseudonym with probability ~3·10⁻⁸, and less than that crosses the wire.
"""
from __future__ import annotations

import hashlib
import hmac

#: hex digits of the digest a pseudonym keeps
DIGITS = 16
#: SHA-256's block size: a longer key would be hashed first; ours are 32 bytes
BLOCK = 64


def pads(key: bytes) -> tuple[bytes, bytes]:
    """The inner and outer padded keys (K ⊕ ipad, K ⊕ opad)."""
    if len(key) > BLOCK:
        raise ValueError("an HMAC key longer than the hash's block is hashed first; sqlanon's keys are 32 bytes")
    block = key.ljust(BLOCK, b"\0")
    return bytes(b ^ 0x36 for b in block), bytes(b ^ 0x5C for b in block)


def pseudonym(key: bytes, value: object) -> str | None:
    """The pseudonym of ``value`` as the databases compute it (SQLite calls this; tests compare)."""
    if value is None:
        return None
    return hmac.new(key, str(value).encode("utf-8"), hashlib.sha256).hexdigest()[:DIGITS]
