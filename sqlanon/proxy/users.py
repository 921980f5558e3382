"""The proxy's own clients: names, salted password verifiers and the policy each one works under.

Clients authenticate to the proxy, never to the database: the file holds no database
credential and no password, only verifiers. One salted verifier serves both protocols:

- ``scram-sha-256`` (RFC 5802/7677, in PostgreSQL's own ``pg_authid`` text form, so an
  administrator may copy one out of PostgreSQL): PostgreSQL's SCRAM exchange checks the
  client's proof against it, and a plaintext password (MySQL's ``caching_sha2_password`` full
  authentication, over TLS or RSA) is checked by deriving the same keys again.
- ``mysql_native_password`` (optional): ``*`` + HEX(SHA1(SHA1(password))), MySQL's own form.
  The protocol leaves no room for a salt; a user without it cannot use that method.

The file::

    users:
      alice:
        scram-sha-256: "SCRAM-SHA-256$4096:<salt>$<StoredKey>:<ServerKey>"
        mysql_native_password: "*6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9"   # optional
        policy: alice.yml        # optional; relative to this file; default: the proxy's --policy

``sqlanon proxy-user NAME --users users.yml`` adds or replaces an entry.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sqlanon.errors import SqlanonError

SCRAM_ITERATIONS = 4096


class UsersError(SqlanonError):
    """The users file is wrong; names the user and the fault."""

    sqlstate = "28000"


@dataclass(frozen=True)
class ScramVerifier:
    iterations: int
    salt: bytes
    stored_key: bytes
    server_key: bytes

    @classmethod
    def make(cls, password: str, *, salt: bytes | None = None, iterations: int = SCRAM_ITERATIONS) -> "ScramVerifier":
        salt = os.urandom(16) if salt is None else salt
        salted = salted_password(password, salt, iterations)
        client_key = hmac.digest(salted, b"Client Key", "sha256")
        return cls(iterations, salt, hashlib.sha256(client_key).digest(), hmac.digest(salted, b"Server Key", "sha256"))

    @classmethod
    def parse(cls, text: str) -> "ScramVerifier":
        """PostgreSQL's form: ``SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`` (base64)."""
        try:
            scheme, rest = text.split("$", 1)
            params, keys = rest.split("$", 1)
            iterations, salt = params.split(":", 1)
            stored, server = keys.split(":", 1)
            if scheme != "SCRAM-SHA-256":
                raise ValueError(scheme)
            v = cls(int(iterations), base64.b64decode(salt, validate=True), base64.b64decode(stored, validate=True),
                    base64.b64decode(server, validate=True))
        except ValueError:
            raise ValueError("not a SCRAM-SHA-256 verifier in PostgreSQL's form") from None
        if v.iterations < 1 or len(v.stored_key) != 32 or len(v.server_key) != 32 or not v.salt:
            raise ValueError("not a SCRAM-SHA-256 verifier in PostgreSQL's form")
        return v

    def text(self) -> str:
        b64 = lambda b: base64.b64encode(b).decode("ascii")  # noqa: E731
        return f"SCRAM-SHA-256${self.iterations}:{b64(self.salt)}${b64(self.stored_key)}:{b64(self.server_key)}"

    def check_password(self, password: str) -> bool:
        """A plaintext password (MySQL full authentication) against this verifier."""
        salted = salted_password(password, self.salt, self.iterations)
        stored = hashlib.sha256(hmac.digest(salted, b"Client Key", "sha256")).digest()
        return hmac.compare_digest(stored, self.stored_key)


def salted_password(password: str, salt: bytes, iterations: int) -> bytes:
    # RFC 7677 asks for SASLprep; PostgreSQL falls back to the raw bytes where it fails, as here
    return hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), salt, iterations)


def native_verifier(password: str) -> bytes:
    """SHA1(SHA1(password)): what ``mysql_native_password`` checks a scramble against."""
    return hashlib.sha1(hashlib.sha1(password.encode("utf-8")).digest()).digest()


@dataclass(frozen=True)
class User:
    name: str
    scram: ScramVerifier | None
    #: SHA1(SHA1(password)), or None when the user may not use mysql_native_password
    mysql_native: bytes | None
    #: the policy this user's queries are anonymized under; None: the proxy's own
    policy: Path | None


@dataclass(frozen=True)
class Users:
    users: dict[str, User]
    source: str

    def get(self, name: str) -> User | None:
        return self.users.get(name)


def load_users(path: str | Path) -> Users:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise UsersError(f"cannot read users file {path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise UsersError(f"{path} is not valid YAML: {e}") from None
    if not isinstance(data, dict) or set(data) != {"users"} or not isinstance(data["users"], dict):
        raise UsersError(f"{path}: expected one key 'users' holding a mapping of user names")
    users = {}
    for name, spec in data["users"].items():
        users[str(name)] = _user(str(name), spec, path)
    return Users(users, str(path))


def _user(name: str, spec: Any, path: Path) -> User:
    where = f"{path}: user {name!r}"
    if not isinstance(spec, dict):
        raise UsersError(f"{where}: expected a mapping")
    unknown = set(spec) - {"scram-sha-256", "mysql_native_password", "policy"}
    if unknown:
        raise UsersError(f"{where}: unknown keys {sorted(unknown)}")
    if "scram-sha-256" not in spec:
        raise UsersError(f"{where}: no 'scram-sha-256' verifier")
    try:
        scram = ScramVerifier.parse(str(spec["scram-sha-256"]))
    except ValueError as e:
        raise UsersError(f"{where}: scram-sha-256: {e}") from None
    native = None
    if "mysql_native_password" in spec:
        text = str(spec["mysql_native_password"])
        try:
            if not text.startswith("*") or len(text) != 41:
                raise ValueError
            native = bytes.fromhex(text[1:])
        except ValueError:
            raise UsersError(f"{where}: mysql_native_password: expected '*' and 40 hex digits") from None
    policy = None
    if spec.get("policy") is not None:
        policy = (path.parent / str(spec["policy"])).resolve()
        if not policy.is_file():
            raise UsersError(f"{where}: policy file {policy} not found")
    return User(name, scram, native, policy)


def entry(password: str, *, native: bool = False, policy: str | None = None) -> dict[str, str]:
    """The users-file entry for a new password."""
    if not password:
        raise UsersError("an empty password is not accepted")
    out = {"scram-sha-256": ScramVerifier.make(password).text()}
    if native:
        out["mysql_native_password"] = "*" + native_verifier(password).hex().upper()
    if policy is not None:
        out["policy"] = policy
    return out


def set_user(path: str | Path, name: str, password: str, *, native: bool = False, policy: str | None = None) -> None:
    """Add or replace one user in the file (created when missing); other entries stay as they are."""
    path = Path(path)
    data: dict[str, Any] = {"users": {}}
    if path.exists():
        load_users(path)  # refuse to rewrite a file that is already wrong
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["users"][name] = entry(password, native=native, policy=policy)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(yaml.safe_dump(data, sort_keys=True), encoding="utf-8")
    os.chmod(tmp, 0o600)
    tmp.replace(path)
