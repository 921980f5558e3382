"""``sqlanon proxy`` and ``sqlanon proxy-user``: the wire-protocol front-ends and their clients."""
from __future__ import annotations

import logging
import os
import sys
import threading
import time
from pathlib import Path

import click

from sqlanon.cli import _fail, access, db_option, main, policy_option
from sqlanon.errors import SqlanonError


@main.command()
@db_option
@policy_option
@click.option("--users", required=True, type=click.Path(exists=True, dir_okay=False), envvar="SQLANON_USERS",
              help="the proxy's clients and their password verifiers (see sqlanon proxy-user)")
@click.option("--listen-pg", default=None, metavar="HOST:PORT", help="serve the PostgreSQL wire protocol here")
@click.option("--listen-mysql", default=None, metavar="HOST:PORT", help="serve the MySQL wire protocol here")
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), default=None, help="certificate (PEM)")
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), default=None, help="its private key (PEM)")
@click.option("--require-tls", is_flag=True, help="refuse clients that do not switch to TLS")
@click.option("--without-catalog", is_flag=True,
              help="serve protected tables without a catalog, i.e. without any defence across queries")
@click.option("--drain-timeout", type=click.FloatRange(min=0), default=10.0, show_default=True, metavar="SECONDS",
              help="on SIGTERM/SIGINT, how long statements under way may take to finish")
def proxy(url: str, policy: str, users: str, listen_pg: str | None, listen_mysql: str | None,
          tls_cert: str | None, tls_key: str | None, require_tls: bool, without_catalog: bool,
          drain_timeout: float) -> None:
    """Serve anonymized answers to unchanged applications over the PostgreSQL/MySQL protocols.

    SIGTERM or SIGINT shuts it down gracefully (a second one at once); the exit code is then 0."""
    import asyncio

    from sqlanon.proxy.server import ProxyConfig, address, serve

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        config = ProxyConfig(url, Path(policy), Path(users),
                             address(listen_pg) if listen_pg else None, address(listen_mysql) if listen_mysql else None,
                             Path(tls_cert) if tls_cert else None, Path(tls_key) if tls_key else None, require_tls,
                             without_catalog=without_catalog, drain_timeout=drain_timeout, **access())
        asyncio.run(serve(config, signals=True))
    except SqlanonError as e:
        _fail(e)
    except KeyboardInterrupt:
        pass
    _exit()


def _exit(wait: float = 1.0) -> None:
    """Exit without waiting for a library thread whose anonymization the drain timeout cut
    short (the interpreter would): the database rolls back what its connection did."""
    deadline = time.monotonic() + wait
    others = [t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon]
    for t in others:
        t.join(max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() for t in others):
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


@main.command("proxy-user")
@click.argument("name")
@click.option("--users", required=True, type=click.Path(dir_okay=False), help="the users file (created when missing)")
@click.option("--password-stdin", is_flag=True, help="read the password from standard input, not a prompt")
@click.option("--mysql-native", is_flag=True,
              help="also allow mysql_native_password (an unsalted verifier: the protocol leaves no room for a salt)")
@click.option("--policy", "user_policy", default=None, help="a policy file for this user (relative to the users file)")
def proxy_user(name: str, users: str, password_stdin: bool, mysql_native: bool, user_policy: str | None) -> None:
    """Add or replace one client of the proxy (the file stores salted verifiers, never passwords)."""
    from sqlanon.proxy.users import set_user

    if password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = click.prompt("password", hide_input=True, confirmation_prompt=True)
    try:
        set_user(users, name, password, native=mysql_native, policy=user_policy)
    except SqlanonError as e:
        _fail(e)
    click.echo(f"{users}: user {name} set")
