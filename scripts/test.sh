#!/usr/bin/env bash
# Install what the tests need and run the whole suite on SQLite, PostgreSQL and MariaDB (and the
# tests marked spark on a local Spark).
# Servers: SQLANON_TEST_POSTGRESQL_URL / SQLANON_TEST_MYSQL_URL if set; otherwise Docker
# (testcontainers) if an engine is reachable; otherwise local servers from Debian's packages,
# installed here when missing (needs root or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
if [ -z "${SQLANON_TEST_POSTGRESQL_URL:-}" ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then need+=(postgresql); fi
if [ -z "${SQLANON_TEST_MYSQL_URL:-}" ] && ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then need+=(mariadb-server); fi
# the spark backend's tests run pyspark's bundled Spark in this process, on Java 17
if ! command -v java >/dev/null 2>&1; then need+=(openjdk-17-jre-headless); fi
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  # slim Debian images drop /usr/share/man, and the JRE's post-install script needs man1 to exist
  $SUDO mkdir -p /usr/share/man/man1
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
python3 -m pip install -q -e '.[test,spark]'
# compile the package up front: Python 3.11 can fail with "AST constructor recursion depth
# mismatch" when a thread compiles a module while another parses (CPython gh-106905), and the
# library imports some modules lazily, inside tests that run servers in threads
python3 -m compileall -q sqlanon >/dev/null
exec python3 -m pytest "$@"
