#!/usr/bin/env bash
# Starts a streaming replica of the test suite's throwaway PostgreSQL cluster (Scripts/test-postgres.sh) on a free
# local port and prints its URL. The replica is a base backup of the primary at <postgres-url> (pg_basebackup -R:
# it follows the primary through streaming replication and answers read-only queries), runs as an unprivileged
# user, and is stopped and deleted when the process whose PID is <owner-pid> exits.
# initdb's default pg_hba.conf lets local connections replicate, and the primary's user is a superuser.
# Usage: Scripts/test-replica.sh <owner-pid> <postgres-url>
set -euo pipefail
owner_pid=${1:?usage: test-replica.sh <owner-pid> <postgres-url>}
primary_url=${2:?usage: test-replica.sh <owner-pid> <postgres-url>}

pg_ctl_path=$(command -v pg_ctl || true)
if [ -z "$pg_ctl_path" ]; then
  pg_ctl_path=$(ls -d /usr/lib/postgresql/*/bin/pg_ctl 2>/dev/null | sort -V | tail -1 || true)
fi
if [ -z "$pg_ctl_path" ]; then
  echo "PostgreSQL server binaries not found: install them (apt-get install -y postgresql)" >&2
  exit 2
fi
bin=$(dirname "$(readlink -f "$pg_ctl_path")")

read -r host port user database < <(python3 -c '
import sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
print(u.hostname or "127.0.0.1", u.port or 5432, u.username or "postgres", (u.path or "/").lstrip("/") or (u.username or "postgres"))
' "$primary_url")

dir=$(mktemp -d /tmp/hub-test-replica.XXXXXX)
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi

replica_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# -R writes primary_conninfo and standby.signal; a fast checkpoint starts the copy at once.
as_owner "$bin/pg_basebackup" -h "$host" -p "$port" -U "$user" -D "$dir/data" -R -X stream -c fast --no-sync \
  >"$dir/basebackup.log" 2>&1 || { cat "$dir/basebackup.log" >&2; exit 1; }
# A hot standby needs max_connections at least the primary's (300 in Scripts/test-postgres.sh).
as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
  -o "-p $replica_port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300 -c hot_standby=on -c shared_preload_libraries=" \
  start >"$dir/pg_ctl.log" 2>&1 || { cat "$dir/pg_ctl.log" "$dir/server.log" >&2; exit 1; }

# Stop and delete the replica when the owner exits.
stop="while kill -0 $owner_pid 2>/dev/null; do sleep 1; done; "
if [ "$(id -u)" = 0 ]; then
  stop+="runuser -u postgres -- '$bin/pg_ctl' -D '$dir/data' -m immediate stop; rm -rf '$dir'"
else
  stop+="'$bin/pg_ctl' -D '$dir/data' -m immediate stop; rm -rf '$dir'"
fi
nohup bash -c "$stop" </dev/null >/dev/null 2>&1 &
disown || true

echo "postgres://$user@127.0.0.1:$replica_port/$database"
