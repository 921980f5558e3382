"""The sans-IO parts of the MySQL front-end, without a server: framing, the response scanner,
prepared-statement binding and the authentication state machine."""
from __future__ import annotations

import datetime as dt
import hashlib
import struct
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqlanon.errors import QueryRejected
from sqlanon.proxy.mysql import auth, codec, results, statements
from sqlanon.proxy.users import ScramVerifier, User, native_verifier


@given(st.binary(max_size=300), st.integers(0, 255), st.integers(1, 64))
def test_frames_round_trip_in_any_chunking(payload, seq, step):
    data, nxt = codec.frame(payload, seq)
    assert nxt == (seq + 1) & 0xFF
    framer = codec.Framer(1 << 20)
    got = []
    for i in range(0, len(data), step):
        got += framer.feed(data[i:i + step])
    assert got == [(seq, payload)] and not framer.pending


def test_sixteen_mebibyte_packets_continue_in_a_new_frame():
    payload = bytes(range(256)) * (codec.MAX_FRAME // 256 + 10)
    data, nxt = codec.frame(payload, 0)
    assert nxt == 2 and data[:4] == b"\xff\xff\xff\x00"
    assert codec.Framer(1 << 25).feed(data) == [(1, payload)]
    with pytest.raises(codec.ProtocolError):
        codec.Framer(1 << 20).feed(data[:4])  # refused from the header, before the payload


def test_framer_wants_exactly_the_rest_of_the_packet():
    framer = codec.Framer(1000)
    ssl_request, _ = codec.frame(struct.pack("<IIB", codec.SSL | codec.PROTOCOL_41, 1 << 24, 45) + bytes(23), 1)
    assert len(ssl_request) == 36 and framer.wanted() == 4
    framer.feed(ssl_request[:4])
    assert framer.wanted() == 32
    (_, payload), = framer.feed(ssl_request[4:])
    assert codec.parse_handshake_response(payload).ssl_request and framer.wanted() == 4


def _result_set(caps: int, rows: int, status: int = codec.STATUS_AUTOCOMMIT) -> list[bytes]:
    return list(results.result_set(["a", "b"], [(i, f"r{i}") for i in range(rows)], caps=caps, status=status,
                                   charset=45, encoding="utf-8", binary=False))


@pytest.mark.parametrize("caps", [0, codec.DEPRECATE_EOF])
@given(rows=st.integers(0, 30), step=st.integers(1, 97))
def test_scanner_finds_the_end_of_a_result_set(caps, rows, step):
    stream = b"".join(codec.frame(p, i + 1)[0] for i, p in enumerate(_result_set(caps, rows)))
    scanner, buf, forwarded, done = codec.ResponseScanner(caps), bytearray(), 0, False
    for i in range(0, len(stream) + 5, step):
        buf += stream[i:i + step] + (b"\x00\x00\x00\x00" if i + step >= len(stream) and not done else b"")
        used, done = scanner.scan(buf)
        forwarded += used
        del buf[:used]
        if done:
            break
    assert done and forwarded == len(stream) and scanner.rows == rows
    assert scanner.status == codec.STATUS_AUTOCOMMIT


def test_scanner_follows_more_results_and_stops_at_errors():
    caps = codec.DEPRECATE_EOF
    first = _result_set(caps, 2, codec.STATUS_AUTOCOMMIT | codec.MORE_RESULTS)
    stream = b"".join(codec.frame(p, 1)[0] for p in first + [codec.ok(caps, 2), codec.err(1, "HY000", "x")])
    used, done = codec.ResponseScanner(caps).scan(stream)
    assert done and used == len(stream) - len(codec.frame(codec.err(1, "HY000", "x"), 1)[0])
    err_mid_rows = b"".join(codec.frame(p, 1)[0] for p in _result_set(caps, 3)[:4] + [codec.err(1927, "70100", "k")])
    scanner = codec.ResponseScanner(caps)
    assert scanner.scan(err_mid_rows) == (len(err_mid_rows), True) and scanner.error is not None
    with pytest.raises(codec.ProtocolError):
        codec.ResponseScanner(caps).scan(codec.frame(b"\xfb/etc/passwd", 1)[0])


def test_placeholders_bind_in_textual_order_as_literals():
    stmt = statements.prepare(1, "SELECT ? AS a FROM t WHERE b = ? AND c LIKE ? ORDER BY x LIMIT ?")
    assert stmt.params == 4
    assert stmt.render_with_nulls() == "SELECT NULL AS a FROM t WHERE b = NULL AND c LIKE NULL ORDER BY x LIMIT NULL"
    types = [codec.VAR_STRING, codec.LONGLONG, codec.VAR_STRING, codec.LONGLONG | 0x8000]
    values = (codec.lenenc_str("x' OR 1=1 -- \\".encode()) + struct.pack("<q", -5)
              + codec.lenenc_str("ä%".encode()) + struct.pack("<Q", 10))
    packet = (bytes([codec.COM_STMT_EXECUTE]) + struct.pack("<IBI", 1, 0, 1) + b"\x00" + b"\x01"
              + b"".join(struct.pack("<H", t) for t in types) + values)
    assert statements.bind(stmt, packet, "utf-8") == \
        "SELECT 'x'' OR 1=1 -- \\\\' AS a FROM t WHERE b = -5 AND c LIKE 'ä%' ORDER BY x LIMIT 10"


def test_typed_parameters_and_nulls():
    stmt = statements.prepare(2, "SELECT ?, ?, ?, ?")
    packet = (bytes([codec.COM_STMT_EXECUTE]) + struct.pack("<IBI", 2, 0, 1) + b"\x08" + b"\x01"
              + struct.pack("<HHHH", codec.DATE, codec.NEWDECIMAL, codec.DOUBLE, codec.LONG)
              + struct.pack("<BHBB", 4, 2020, 2, 29) + codec.lenenc_str(b"-1.50") + struct.pack("<d", 0.5))
    assert statements.decode_params(stmt, packet, "utf-8") == [dt.date(2020, 2, 29), Decimal("-1.50"), 0.5, None]
    with pytest.raises(QueryRejected):
        statements.literal(float("nan"))
    with pytest.raises(QueryRejected) as e:
        statements.prepare(3, "SELECT ? /*!50000 , name */")
    assert e.value.construct == "MySQL executable comment"


def test_binary_rows_carry_types():
    cols = results.columns(["i", "f", "d", "day", "s"], [(1,), (0.5,), (Decimal("1.25"),), (dt.date(2020, 1, 2),), ("x",)], 45)
    assert [c.type for c in cols] == [codec.LONGLONG, codec.DOUBLE, codec.NEWDECIMAL, codec.DATE, codec.VAR_STRING]
    row = results.binary_row((1, None, Decimal("1.25"), dt.date(2020, 1, 2), "x"), cols, "utf-8")
    assert row == (b"\x00\x08" + struct.pack("<q", 1) + b"\x041.25" + struct.pack("<BHBB", 4, 2020, 1, 2) + b"\x01x")


def _user(native: bool) -> User:
    return User("u", ScramVerifier.make("pw"), native_verifier("pw") if native else None, None)


def _native(password: bytes, salt: bytes) -> bytes:
    p1 = hashlib.sha1(password).digest()
    return bytes(a ^ b for a, b in zip(p1, hashlib.sha1(salt + hashlib.sha1(p1).digest()).digest()))


def _sha2(password: bytes, salt: bytes) -> bytes:
    p1 = hashlib.sha256(password).digest()
    return bytes(a ^ b for a, b in zip(p1, hashlib.sha256(hashlib.sha256(p1).digest() + salt).digest()))


KEYS = auth.Keys()


def test_native_password_and_switch_for_users_without_it():
    salt, cache = auth.scramble(), auth.FastCache()
    assert auth.Exchange(_user(True), "u", salt, tls=False, keys=KEYS, cache=cache).start(
        auth.NATIVE, _native(b"pw", salt)).outcome == "ok"
    assert auth.Exchange(_user(True), "u", salt, tls=False, keys=KEYS, cache=cache).start(
        auth.NATIVE, _native(b"nope", salt)).outcome == "denied"
    step = auth.Exchange(_user(False), "u", salt, tls=False, keys=KEYS, cache=cache).start(auth.NATIVE, b"x" * 20)
    assert step.outcome == "continue" and step.send[0].startswith(b"\xfecaching_sha2_password\x00")
    # caching_sha2 with nothing cached and no TLS: a user with a native verifier is switched to it
    ex = auth.Exchange(_user(True), "u", salt, tls=False, keys=KEYS, cache=cache)
    step = ex.start(auth.SHA2, _sha2(b"pw", salt))
    assert step.send[0].startswith(b"\xfemysql_native_password\x00")
    assert ex.next(_native(b"pw", salt)).outcome == "ok"


@pytest.mark.parametrize("user", [_user(False), None])
def test_caching_sha2_full_then_fast_and_unknown_users_walk_the_same_path(user):
    salt, cache = auth.scramble(), auth.FastCache()
    ex = auth.Exchange(user, "u", salt, tls=True, keys=KEYS, cache=cache)
    step = ex.start(auth.SHA2, _sha2(b"pw", salt))
    assert step.outcome == "continue" and step.send == [b"\x01\x04"]  # full authentication, known or not
    step = ex.next(b"pw\x00")
    assert step.outcome == "verify"
    final = ex.verified(ex.check(step.password), step.password)
    assert final.outcome == ("ok" if user else "denied")
    fast = auth.Exchange(user, "u", salt, tls=False, keys=KEYS, cache=cache).start(auth.SHA2, _sha2(b"pw", salt))
    assert (fast.outcome, fast.send) == (("ok", [b"\x01\x03"]) if user else ("continue", [b"\x01\x04"]))
