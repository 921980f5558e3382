"""The server side of MySQL authentication, as a state machine over packets (no I/O).

- ``caching_sha2_password`` (the default offered): the fast path checks the client's scramble
  against SHA256(SHA256(password)) held in memory, filled only after a successful full
  authentication of that user in this process; otherwise full authentication: the plaintext
  password over TLS, or RSA-OAEP encrypted with the proxy's own key pair (generated at start;
  the client may ask for the public key), checked against the users file's salted SCRAM verifier.
- ``mysql_native_password``: the scramble against SHA1(SHA1(password)) for users that have it
  (also instead of a full authentication without TLS); the others are switched to
  ``caching_sha2_password``.
Unknown users take the same path as known ones and fail with the same error at the same step.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import threading
from dataclasses import dataclass

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from sqlanon.proxy.mysql import codec
from sqlanon.proxy.users import ScramVerifier, User

SHA2, NATIVE = "caching_sha2_password", "mysql_native_password"
FAST_OK, FULL_AUTH, PUBLIC_KEY_REQUEST = b"\x03", b"\x04", b"\x02"


def scramble() -> bytes:
    """20 random bytes without NUL (clients read the second part up to a NUL)."""
    return bytes(b % 255 + 1 for b in os.urandom(20))


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b))


def _sha1(b: bytes) -> bytes:
    return hashlib.sha1(b).digest()


def _sha256(b: bytes) -> bytes:
    return hashlib.sha256(b).digest()


class Keys:
    """The proxy's RSA key pair for full authentication without TLS, made once per process."""

    def __init__(self) -> None:
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.public_pem = self._key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def decrypt(self, data: bytes) -> bytes | None:
        try:
            return self._key.decrypt(data, padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(),
                                                        label=None))
        except ValueError:
            return None


class FastCache:
    """User name → SHA256(SHA256(password)), filled after a successful full authentication."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[str, bytes] = {}

    def get(self, name: str) -> bytes | None:
        with self._lock:
            return self._cache.get(name)

    def put(self, name: str, password: bytes) -> None:
        with self._lock:
            self._cache[name] = _sha256(_sha256(password))


@dataclass
class Step:
    """What the session does next: send ``send`` (payloads, in order), then either wait for the
    client's next packet (``outcome`` "continue"), check ``password`` off the event loop and call
    ``Exchange.verified`` ("verify"), or finish ("ok" / "denied")."""

    send: list[bytes]
    outcome: str
    password: bytes | None = None


class Exchange:
    """One client's authentication, from its handshake response to OK or access denied."""

    def __init__(self, user: User | None, name: str, salt: bytes, *, tls: bool, keys: Keys, cache: FastCache):
        self.user, self.name, self.salt, self.tls = user, name, salt, tls
        self.keys, self.cache = keys, cache
        self.state = "start"

    def start(self, plugin: str, response: bytes) -> Step:
        if plugin == NATIVE and self.user is not None and self.user.mysql_native is not None:
            self.state = "done"
            return Step([], "ok" if self._native_ok(response) else "denied")
        if plugin != SHA2:
            self.state = "switched"
            return Step([codec.auth_switch(SHA2, self.salt + b"\x00")], "continue")
        return self._sha2_scramble(response)

    def next(self, payload: bytes) -> Step:
        if self.state == "switched":
            return self._sha2_scramble(payload)
        if self.state == "native":
            self.state = "done"
            return Step([], "ok" if self._native_ok(payload) else "denied")
        if self.state == "full":
            if payload == PUBLIC_KEY_REQUEST and not self.tls:
                self.state = "full-rsa"
                return Step([codec.auth_more(self.keys.public_pem)], "continue")
            if self.tls:
                return self._verify(payload.rstrip(b"\x00"))
            return self._verify_rsa(payload)
        if self.state == "full-rsa":
            return self._verify_rsa(payload)
        self.state = "done"
        return Step([], "denied")

    def verified(self, ok: bool, password: bytes) -> Step:
        self.state = "done"
        if ok:
            self.cache.put(self.name, password)
            return Step([], "ok")
        return Step([], "denied")

    def _native_ok(self, response: bytes) -> bool:
        assert self.user is not None and self.user.mysql_native is not None
        if len(response) != 20:
            return False
        candidate = _xor(response, _sha1(self.salt + self.user.mysql_native))
        return hmac.compare_digest(_sha1(candidate), self.user.mysql_native)

    def _sha2_scramble(self, response: bytes) -> Step:
        cached = self.cache.get(self.name) if self.user is not None else None
        if cached is not None and len(response) == 32:
            candidate = _xor(response, _sha256(cached + self.salt))
            if hmac.compare_digest(_sha256(candidate), cached):
                self.state = "done"
                return Step([codec.auth_more(FAST_OK)], "ok")
        if not response:  # an empty password: nothing to check, nobody has one
            self.state = "done"
            return Step([], "denied")
        if self.state == "start" and not self.tls and self.user is not None and self.user.mysql_native is not None:
            # no TLS and nothing cached: a challenge-response the user has a verifier for beats
            # RSA, which not every client speaks (mysql-connector does not)
            self.state = "native"
            return Step([codec.auth_switch(NATIVE, self.salt + b"\x00")], "continue")
        self.state = "full"
        return Step([codec.auth_more(FULL_AUTH)], "continue")

    def _verify_rsa(self, data: bytes) -> Step:
        plain = self.keys.decrypt(data)
        if plain is None:
            self.state = "done"
            return Step([], "denied")
        salt = (self.salt * (len(plain) // len(self.salt) + 1))[:len(plain)]
        return self._verify(_xor(plain, salt).rstrip(b"\x00"))

    def _verify(self, password: bytes) -> Step:
        self.state = "verifying"
        return Step([], "verify", password)

    def check(self, password: bytes) -> bool:
        """The slow part (PBKDF2 of the SCRAM verifier): run it off the event loop. An unknown user
        costs the same as a known one."""
        try:
            text = password.decode("utf-8")
        except UnicodeDecodeError:
            return False
        if self.user is None or self.user.scram is None:
            _DUMMY.check_password(text)
            return False
        return self.user.scram.check_password(text)


#: a verifier no password matches: an unknown user costs the same PBKDF2 as a known one
_DUMMY = ScramVerifier.make(os.urandom(16).hex())
