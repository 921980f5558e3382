"""SCRAM-SHA-256 (RFC 5802, RFC 7677) in both roles, without I/O.

``ScramServer`` checks a client of the proxy against its ``ScramVerifier`` (the users file):
the verifier holds StoredKey and ServerKey, which is all the server side needs. An unknown user
gets the same exchange against a made-up verifier (salt derived from the name, so repeated
attempts see the same salt), and the same failure: a client cannot tell a wrong password from an
unknown name. Channel binding is not offered (no ``-PLUS``); a client that insists is refused.

``ScramClient`` is the proxy logging in to the database with its own account.
"""
from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import os
import secrets

from sqlanon.proxy.users import SCRAM_ITERATIONS, ScramVerifier, salted_password

MECHANISM = "SCRAM-SHA-256"
_DECOY_KEY = os.urandom(32)


class AuthFailed(Exception):
    """The exchange failed; the message says nothing about which part was wrong."""


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        raise AuthFailed("malformed SCRAM message") from None


def _attrs(text: str) -> dict[str, str]:
    out = {}
    for part in text.split(","):
        if len(part) < 2 or part[1] != "=":
            raise AuthFailed("malformed SCRAM message")
        out[part[0]] = part[2:]
    return out


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b))


def decoy(name: str) -> ScramVerifier:
    """A verifier nobody knows the password of, stable per name within this process."""
    salt = hmac.digest(_DECOY_KEY, b"salt:" + name.encode("utf-8"), "sha256")[:16]
    return ScramVerifier(SCRAM_ITERATIONS, salt, os.urandom(32), os.urandom(32))


class ScramServer:
    def __init__(self, verifier: ScramVerifier | None, name: str):
        self.known = verifier is not None
        self.verifier = verifier if verifier is not None else decoy(name)
        self.nonce = ""
        self.gs2 = ""
        self.bare = ""
        self.server_first = ""

    def first(self, mechanism: str, data: bytes) -> bytes:
        """The client's first message → the server's first message."""
        if mechanism != MECHANISM:
            raise AuthFailed(f"unsupported SASL mechanism {mechanism!r}")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthFailed("malformed SCRAM message") from None
        flag, _, rest = text.partition(",")
        authzid, _, bare = rest.partition(",")
        if flag not in ("n", "y") or authzid:
            raise AuthFailed("channel binding and authorization identities are not supported")
        attrs = _attrs(bare)
        if "r" not in attrs or "m" in attrs:
            raise AuthFailed("malformed SCRAM message")
        self.gs2 = f"{flag},{authzid},"
        self.bare = bare
        self.nonce = attrs["r"] + _b64(secrets.token_bytes(18))
        v = self.verifier
        self.server_first = f"r={self.nonce},s={_b64(v.salt)},i={v.iterations}"
        return self.server_first.encode("ascii")

    def final(self, data: bytes) -> bytes:
        """The client's final message → the server's final message; AuthFailed on a wrong proof."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise AuthFailed("malformed SCRAM message") from None
        without_proof, sep, proof = text.rpartition(",p=")
        attrs = _attrs(without_proof) if sep else {}
        if not sep or attrs.get("r") != self.nonce or _unb64(attrs.get("c", "")) != self.gs2.encode("utf-8"):
            raise AuthFailed("malformed SCRAM message")
        auth_message = f"{self.bare},{self.server_first},{without_proof}".encode()
        v = self.verifier
        signature = hmac.digest(v.stored_key, auth_message, "sha256")
        client_key = _xor(_unb64(proof), signature)
        ok = len(client_key) == 32 and hmac.compare_digest(hashlib.sha256(client_key).digest(), v.stored_key)
        if not (ok and self.known):
            raise AuthFailed("password authentication failed")
        return ("v=" + _b64(hmac.digest(v.server_key, auth_message, "sha256"))).encode("ascii")


@functools.lru_cache(maxsize=16)
def _salted(password: str, salt: bytes, iterations: int) -> bytes:
    # the database gives the proxy's account the same salt every time: derive it once
    return salted_password(password, salt, iterations)


class ScramClient:
    def __init__(self, password: str):
        self.password = password
        self.nonce = _b64(secrets.token_bytes(18))
        self.bare = f"n=,r={self.nonce}"
        self.expected = b""

    def first(self) -> bytes:
        return ("n,," + self.bare).encode("ascii")

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode("ascii")
        attrs = _attrs(text)
        if not attrs.get("r", "").startswith(self.nonce) or "s" not in attrs or not attrs.get("i", "").isdigit():
            raise AuthFailed("the database sent a malformed SCRAM message")
        salted = _salted(self.password, _unb64(attrs["s"]), int(attrs["i"]))
        without_proof = f"c=biws,r={attrs['r']}"
        auth_message = f"{self.bare},{text},{without_proof}".encode()
        client_key = hmac.digest(salted, b"Client Key", "sha256")
        signature = hmac.digest(hashlib.sha256(client_key).digest(), auth_message, "sha256")
        server_key = hmac.digest(salted, b"Server Key", "sha256")
        self.expected = hmac.digest(server_key, auth_message, "sha256")
        return f"{without_proof},p={_b64(_xor(client_key, signature))}".encode("ascii")

    def check(self, server_final: bytes) -> None:
        attrs = _attrs(server_final.decode("ascii"))
        if not hmac.compare_digest(_unb64(attrs.get("v", "")), self.expected):
            raise AuthFailed("the database's SCRAM signature is wrong")
