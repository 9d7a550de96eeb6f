#!/usr/bin/env bash
# A throwaway Citus cluster (a coordinator and two workers on 127.0.0.1) for `npm run test:citus` and
# `npm run bench -- --citus`.
#
#   scripts/citus.sh install          build Citus 13.2.2 from ../shared/vendor and install it into
#                                     PostgreSQL 15 (/usr/lib/postgresql/15) unless citus.so is there
#   scripts/citus.sh start <dir>      install if needed, then start a coordinator and two workers with
#                                     data directories under <dir> (created, owned by the server user);
#                                     prints `CITUS_URL=postgres://…` (the coordinator's database)
#   scripts/citus.sh stop <dir>       stop the nodes started in <dir> and delete <dir>
#
# The build happens outside the repository, in $CITUS_CACHE_DIR (default ~/.cache/workplace-citus),
# and is reused by later runs; nothing of Citus is ever written into the repository (see
# ../shared/vendor/README.md). PostgreSQL refuses to run as root: as root the nodes run as the
# `postgres` user (runuser); as any other user they run as that user. Ports: CITUS_PORT (default a
# free one from 25432 on) and the next two. Missing Debian packages are installed with apt-get when
# running as root. The nodes run with fsync off (throwaway data) unless CITUS_FSYNC=on (the benchmark).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
PG_CONFIG="$PG_BIN/pg_config"
CITUS_VERSION=13.2.2
CITUS_SHA256=c8fc76dc8294636a52b1a0dd75a20d8b4a36937df6443e30ca84d8d0464a6bb9
TARBALL="${CITUS_TARBALL:-$root/../shared/vendor/citus-$CITUS_VERSION.tar.gz}"
CACHE="${CITUS_CACHE_DIR:-$HOME/.cache/workplace-citus}"
DATABASE="${CITUS_DATABASE:-workplace}"

log() { echo "# citus: $*" >&2; }

as_server_user() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

server_user() { if [ "$(id -u)" = 0 ]; then echo postgres; else id -un; fi; }

ensure_packages() {
  local wanted=(postgresql-server-dev-15 liblz4-dev libzstd-dev libkrb5-dev libssl-dev libselinux1-dev
    libxslt1-dev libpam0g-dev libicu-dev flex bison make gcc)
  local missing=()
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ]; then
    log "missing Debian packages (install them as root): ${missing[*]}"
    exit 1
  fi
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${missing[@]}" >&2 ||
    { apt-get update >&2 && apt-get install -y --no-install-recommends "${missing[@]}" >&2; }
}

install_citus() {
  local libdir
  libdir="$("$PG_CONFIG" --pkglibdir 2>/dev/null || echo /usr/lib/postgresql/15/lib)"
  if [ -f "$libdir/citus.so" ] && [ -f "$("$PG_CONFIG" --sharedir)/extension/citus.control" ]; then
    return 0
  fi
  ensure_packages
  libdir="$("$PG_CONFIG" --pkglibdir)"
  [ -f "$TARBALL" ] || { log "no Citus source at $TARBALL (../shared/vendor beside the repository)"; exit 1; }
  echo "$CITUS_SHA256  $TARBALL" | sha256sum -c --quiet - || { log "checksum mismatch: $TARBALL"; exit 1; }
  local src="$CACHE/citus-$CITUS_VERSION"
  mkdir -p "$CACHE"
  if [ ! -f "$src/.built" ]; then
    rm -rf "$src"
    log "building Citus $CITUS_VERSION in $src (2-3 minutes on 2 cores)"
    tar xzf "$TARBALL" -C "$CACHE"
    # PostgreSQL 15.20 exports have_createdb_privilege(); Citus 13.2.2 defines its own static copy for
    # older minors ("static declaration follows non-static declaration"): rename the copy (unused then)
    sed -i 's/^have_createdb_privilege(void)$/citus_unused_have_createdb_privilege(void)/' \
      "$src/src/include/pg_version_compat.h"
    (cd "$src" && PG_CONFIG="$PG_CONFIG" ./configure --without-libcurl >"$src/configure.log" 2>&1 &&
      make -j"$(nproc)" >"$src/make.log" 2>&1) ||
      { log "build failed, see $src/configure.log and $src/make.log"; tail -30 "$src/make.log" >&2 || true; exit 1; }
    touch "$src/.built"
  fi
  if [ ! -w "$libdir" ]; then log "cannot write $libdir: run 'scripts/citus.sh install' as root once"; exit 1; fi
  log "installing Citus $CITUS_VERSION into $libdir"
  (cd "$src" && make install >"$src/install.log" 2>&1) || { tail -30 "$src/install.log" >&2; exit 1; }
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start_cluster() {
  local dir="$1"
  install_citus
  local port="${CITUS_PORT:-}"
  if [ -z "$port" ]; then
    port=25432
    while ! { port_free "$port" && port_free $((port + 1)) && port_free $((port + 2)) && port_free $((port + 3)); }; do port=$((port + 4)); done
  fi
  mkdir -p "$dir"
  chmod 755 "$dir"
  local user
  user="$(server_user)"
  # worker3 runs but is not part of the cluster: the tenant-moves test adds it, then rebalances
  local names=(coordinator worker1 worker2 worker3)
  for i in 0 1 2 3; do
    local node="$dir/${names[$i]}" p=$((port + i))
    mkdir -p "$node"
    chown "$user" "$node"
    chmod 700 "$node"
    as_server_user "$PG_BIN/initdb" -D "$node/data" -U postgres --auth=trust --no-sync -E UTF8 --locale=C.UTF-8 >"$dir/${names[$i]}.initdb.log" 2>&1 ||
      { cat "$dir/${names[$i]}.initdb.log" >&2; exit 1; }
    cat >>"$node/data/postgresql.conf" <<EOF
shared_preload_libraries = 'citus'
listen_addresses = '127.0.0.1'
port = $p
unix_socket_directories = '$node'
max_connections = 300
shared_buffers = 64MB
fsync = ${CITUS_FSYNC:-off}
synchronous_commit = ${CITUS_FSYNC:-off}
full_page_writes = ${CITUS_FSYNC:-off}
max_prepared_transactions = 100
citus.max_shared_pool_size = 200
# requests are router statements: one cached connection per worker and coordinator backend is what they
# reuse (the default, explicit here; docs/citus.md, "Connections and plans on the coordinator")
citus.max_cached_conns_per_worker = 1
EOF
    echo "$p" >"$node/port"
    as_server_user "$PG_BIN/pg_ctl" -D "$node/data" -l "$node/server.log" -w -t 60 start >/dev/null ||
      { cat "$node/server.log" >&2; exit 1; }
  done
  for i in 0 1 2 3; do
    local p=$((port + i))
    psql_on "$p" postgres -c "create database $DATABASE" >/dev/null
    psql_on "$p" "$DATABASE" -c 'create extension citus; create extension if not exists pg_trgm; create extension if not exists pgcrypto' >/dev/null
  done
  psql_on "$port" "$DATABASE" -c "select citus_set_coordinator_host('127.0.0.1', $port)" >/dev/null
  psql_on "$port" "$DATABASE" -c "select citus_add_node('127.0.0.1', $((port + 1)))" -c "select citus_add_node('127.0.0.1', $((port + 2)))" >/dev/null
  log "coordinator 127.0.0.1:$port, workers :$((port + 1)) :$((port + 2)), a spare worker :$((port + 3)) not yet added (data in $dir)"
  echo "CITUS_URL=postgres://postgres@127.0.0.1:$port/$DATABASE"
  echo "CITUS_SPARE_WORKER=127.0.0.1:$((port + 3))"
}

psql_on() {
  local p="$1" db="$2"
  shift 2
  "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$p" -U postgres -d "$db" "$@"
}

stop_cluster() {
  local dir="$1"
  [ -d "$dir" ] || return 0
  for name in worker3 worker2 worker1 coordinator; do
    if [ -f "$dir/$name/data/postmaster.pid" ]; then
      as_server_user "$PG_BIN/pg_ctl" -D "$dir/$name/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
  done
  rm -rf "$dir"
}

case "${1:-}" in
  install) install_citus ;;
  start) start_cluster "${2:?usage: scripts/citus.sh start <dir>}" ;;
  stop) stop_cluster "${2:?usage: scripts/citus.sh stop <dir>}" ;;
  *)
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
