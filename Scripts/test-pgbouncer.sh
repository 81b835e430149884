#!/usr/bin/env bash
# Starts PgBouncer for the test suite on a free local port, in front of the PostgreSQL server at <postgres-url> (the
# throwaway cluster of Scripts/test-postgres.sh), and prints the URL to connect through it. PgBouncer runs as an
# unprivileged user (it refuses to run as root) and is stopped when the process whose PID is <owner-pid> exits.
#
# Usage: Scripts/test-pgbouncer.sh <owner-pid> <postgres-url> [--mode transaction|session] [--schema <schema>]
#                                  [--pool-size <n>]
#   --mode       pool_mode (default transaction: a server connection is lent for one transaction at a time)
#   --schema     the database entry sets search_path to this schema on each server connection it opens
#                (connect_query), as an operator does for a hub behind PgBouncer; without it the entry sets none
#   --pool-size  default_pool_size: server connections per user and database (default 2, fewer than a hub's pool,
#                so that a client connection's consecutive transactions run on different server connections)
set -euo pipefail
owner_pid=${1:?usage: test-pgbouncer.sh <owner-pid> <postgres-url> [--mode M] [--schema S] [--pool-size N]}
server_url=${2:?usage: test-pgbouncer.sh <owner-pid> <postgres-url> [--mode M] [--schema S] [--pool-size N]}
shift 2
mode=transaction
schema=
pool_size=2
while [ $# -gt 0 ]; do
  case "$1" in
    --mode) mode=${2:?--mode needs transaction or session}; shift 2 ;;
    --schema) schema=${2:?--schema needs a name}; shift 2 ;;
    --pool-size) pool_size=${2:?--pool-size needs a number}; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
case "$mode" in transaction|session) ;; *) echo "--mode must be transaction or session" >&2; exit 2 ;; esac
if [ -n "$schema" ] && ! [[ "$schema" =~ ^[A-Za-z0-9_]+$ ]]; then
  echo "--schema must be letters, digits and '_'" >&2
  exit 2
fi

pgbouncer_path=$(command -v pgbouncer || ls /usr/sbin/pgbouncer 2>/dev/null || true)
if [ -z "$pgbouncer_path" ]; then
  echo "pgbouncer not found: install it (apt-get install -y pgbouncer)" >&2
  exit 2
fi

# The server's host, port, user and database, from its URL.
read -r host port user database < <(python3 -c '
import sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
print(u.hostname or "127.0.0.1", u.port or 5432, u.username or "postgres", (u.path or "/").lstrip("/") or (u.username or "postgres"))
' "$server_url")

dir=$(mktemp -d /tmp/hub-test-pgbouncer.XXXXXX)
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

listen_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
entry="host=$host port=$port dbname=$database"
if [ -n "$schema" ]; then entry+=" connect_query='SET search_path = $schema'"; fi
cat >"$dir/pgbouncer.ini" <<INI
[databases]
hub = $entry

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $listen_port
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
pool_mode = $mode
default_pool_size = $pool_size
max_client_conn = 1000
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
# With auth_type = trust the user must still be listed in auth_file (the server itself trusts local connections).
printf '"%s" ""\n' "$user" >"$dir/users.txt"
if [ "$(id -u)" = 0 ]; then chown -R postgres "$dir"; fi

as_owner "$pgbouncer_path" -d "$dir/pgbouncer.ini" >"$dir/start.log" 2>&1
for _ in $(seq 1 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$listen_port") 2>/dev/null; then break; fi
  sleep 0.1
done
if ! (exec 3<>"/dev/tcp/127.0.0.1/$listen_port") 2>/dev/null; then
  echo "pgbouncer did not start:" >&2
  cat "$dir/start.log" "$dir/pgbouncer.log" >&2 2>/dev/null || true
  exit 1
fi

# Stop PgBouncer and delete its files when the owner exits. It may have inherited an ignored SIGTERM from the test
# process (a signal handler of the code under test), so it is killed when it has not stopped within 2 s.
stop="while kill -0 $owner_pid 2>/dev/null; do sleep 1; done; pid=\$(cat '$dir/pgbouncer.pid'); kill -INT \$pid 2>/dev/null; "
stop+="for _ in \$(seq 1 20); do kill -0 \$pid 2>/dev/null || break; sleep 0.1; done; kill -KILL \$pid 2>/dev/null; rm -rf '$dir'"
nohup bash -c "$stop" </dev/null >/dev/null 2>&1 &
disown || true

echo "postgres://$user@127.0.0.1:$listen_port/hub"
