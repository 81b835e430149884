#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster for the test suite on a free local port and prints its URL.
# The cluster runs as an unprivileged user and is stopped and deleted when the process whose PID is $1 exits.
# Usage: Scripts/test-postgres.sh <owner-pid>
set -euo pipefail
owner_pid=${1:?usage: test-postgres.sh <owner-pid>}

pg_ctl_path=$(command -v pg_ctl || true)
if [ -z "$pg_ctl_path" ]; then
  pg_ctl_path=$(ls -d /usr/lib/postgresql/*/bin/pg_ctl 2>/dev/null | sort -V | tail -1 || true)
fi
if [ -z "$pg_ctl_path" ]; then
  echo "PostgreSQL server binaries not found: install them (apt-get install -y postgresql) or set HUB_TEST_POSTGRES_URL" >&2
  exit 2
fi
bin=$(dirname "$pg_ctl_path")

dir=$(mktemp -d /tmp/hub-test-pg.XXXXXX)
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_owner "$bin/initdb" -D "$dir/data" -U hub --auth=trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1
as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
  -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 -c shared_preload_libraries=pg_stat_statements" \
  start >"$dir/pg_ctl.log" 2>&1

# Stop and delete the cluster when the owner exits.
stop="while kill -0 $owner_pid 2>/dev/null; do sleep 1; done; "
if [ "$(id -u)" = 0 ]; then
  stop+="runuser -u postgres -- '$bin/pg_ctl' -D '$dir/data' -m immediate stop; rm -rf '$dir'"
else
  stop+="'$bin/pg_ctl' -D '$dir/data' -m immediate stop; rm -rf '$dir'"
fi
nohup bash -c "$stop" </dev/null >/dev/null 2>&1 &
disown || true

echo "postgres://hub@127.0.0.1:$port/postgres"
