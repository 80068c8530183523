# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# build/lib.sh: shell functions shared by build/demo and build/test.
# Every server is started on a free loopback port with a pid file in a
# run directory, and stopped by that pid, never by name.

aura_log() { printf '%s\n' "$*" >&2; }
aura_die() { aura_log "error: $*"; exit 1; }

# A free TCP port on 127.0.0.1 (the kernel picks it).
aura_free_port() {
    perl -MIO::Socket::INET -e \
        'my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1",
                                       LocalPort => 0, ReuseAddr => 1)
             or die "no free port: $!\n";
         print $s->sockport, "\n";'
}

# A base port for Apache::Test with the $1 ports from it all free: drawn
# at random below the ephemeral range, so that two suites started at the
# same moment (developers' parallel runs) do not both take 8529, which
# "-port select" would give each of them.
aura_test_base_port() {
    perl -MIO::Socket::INET -e '
        my $n = shift;
        for (1 .. 200) {
            my $base = 20000 + 20 * int(rand(1000));
            my @held;
            for my $p ($base .. $base + $n - 1) {
                my $s = IO::Socket::INET->new(Listen => 1,
                    LocalAddr => "127.0.0.1", LocalPort => $p) or last;
                push @held, $s;
            }
            if (@held == $n) { print "$base\n"; exit 0; }
        }
        die "no free range of $n ports\n";' "$1"
}

# Wait until host:port accepts connections, at most $3 seconds.
aura_wait_port() {
    perl -MIO::Socket::INET -MTime::HiRes=sleep -e '
        my ($host, $port, $secs) = @ARGV;
        for (1 .. $secs * 20) {
            exit 0 if IO::Socket::INET->new(PeerAddr => $host,
                                            PeerPort => $port);
            sleep 0.05;
        }
        exit 1;' "$1" "$2" "$3"
}

# Start nats-server: aura_start_nats RUNDIR PORT
aura_start_nats() {
    nats-server -a 127.0.0.1 -p "$2" -P "$1/nats.pid" \
        -l "$1/nats.log" >/dev/null 2>&1 &
    aura_wait_port 127.0.0.1 "$2" 10 \
        || aura_die "nats-server did not start on port $2 (see $1/nats.log)"
}

# Start redis-server on 127.0.0.1 only, without persistence (no RDB, no
# AOF), with its dir, RUNDIR/redis.pid and RUNDIR/redis.log in RUNDIR;
# wait until it accepts connections and has written its pid file, then
# print its port: PORT, or a free one when none is given.
#   aura_start_redis RUNDIR [PORT]     e.g. port=$(aura_start_redis "$run")
# In the foreground, not daemonized, like nats-server: when the caller's
# own shell starts it, aura_stop_pidfile can reap it.  Redis writes its
# pid file only after it listens, hence the second wait.
aura_start_redis() {
    _aura_redis_dir=$(cd "$1" && pwd) || aura_die "no run directory $1"
    _aura_redis_port=${2:-$(aura_free_port)}
    rm -f "$_aura_redis_dir/redis.pid"
    redis-server --bind 127.0.0.1 --port "$_aura_redis_port" \
        --save '' --appendonly no --daemonize no \
        --dir "$_aura_redis_dir" --pidfile "$_aura_redis_dir/redis.pid" \
        --logfile "$_aura_redis_dir/redis.log" >/dev/null 2>&1 &
    aura_wait_port 127.0.0.1 "$_aura_redis_port" 10 \
        || aura_die "redis-server did not start on port $_aura_redis_port" \
                    "(see $_aura_redis_dir/redis.log)"
    for _i in $(seq 50); do
        [ -s "$_aura_redis_dir/redis.pid" ] && break
        sleep 0.1
    done
    [ -s "$_aura_redis_dir/redis.pid" ] \
        || aura_die "redis-server wrote no pid file" \
                    "(see $_aura_redis_dir/redis.log)"
    echo "$_aura_redis_port"
}

# Start the example service and wait until it is subscribed (it writes
# its pid file only after its subscriptions are flushed to the server):
# aura_start_service RUNDIR NATS_URL [service options]
aura_start_service() {
    _run=$1 _url=$2
    shift 2
    rm -f "$_run/service.pid"
    "$AURA_TOP/t/services/aura_example_service" -s "$_url" \
        -p "$_run/service.pid" "$@" >"$_run/service.log" 2>&1 &
    for _i in $(seq 100); do
        [ -s "$_run/service.pid" ] && return 0
        sleep 0.1
    done
    aura_die "example service did not start (see $_run/service.log)"
}

# aura_start_upstream RUNDIR NAME: the test HTTP upstream
# (t/services/aura_http_upstream) on a free loopback port, logging what
# it receives to RUNDIR/NAME.log; pid in RUNDIR/NAME.pid.  Prints the
# port.
aura_start_upstream() {
    _run=$1 _name=$2
    _port=$(aura_free_port)
    rm -f "$_run/$_name.pid"
    "$AURA_TOP/t/services/aura_http_upstream" -p "$_port" \
        -P "$_run/$_name.pid" -l "$_run/$_name.log" -n "$_name" \
        >"$_run/$_name.out" 2>&1 &
    aura_wait_port 127.0.0.1 "$_port" 10 \
        || aura_die "HTTP upstream $_name did not start"
    for _i in $(seq 50); do
        [ -s "$_run/$_name.pid" ] && { echo "$_port"; return 0; }
        sleep 0.1
    done
    aura_die "HTTP upstream $_name wrote no pid file"
}

# Stop the process whose pid is in FILE, wait for it to exit (5 s), and
# kill it if it will not.
aura_stop_pidfile() {
    [ -s "$1" ] || return 0
    _pid=$(cat "$1")
    kill "$_pid" 2>/dev/null || { rm -f "$1"; return 0; }
    # Our own child: wait reaps it at once (a zombie would pass kill -0).
    wait "$_pid" 2>/dev/null || true
    for _i in $(seq 50); do
        kill -0 "$_pid" 2>/dev/null || { rm -f "$1"; return 0; }
        sleep 0.1
    done
    kill -9 "$_pid" 2>/dev/null
    rm -f "$1"
}

# --- PostgreSQL: a throwaway cluster for the key store ------------------
#
# Layout under RUNDIR: pg/data (the cluster; also its Unix socket and
# postmaster.pid), pg/postgres.log (the server log), pg/initdb.log.
# PostgreSQL refuses to run as root: as root, RUNDIR/pg belongs to the
# postgres system user (created by Debian's postgresql package) and the
# server programs (initdb, pg_ctl, postgres) run as that user through
# runuser; RUNDIR itself must then be searchable by others (mode 755).
# As any other user they run as that user.

# The directory of the server programs: pg_config's (libpq-dev), else the
# newest /usr/lib/postgresql/*/bin that has initdb (pg_config may belong
# to a newer libpq than the installed server).
aura_pg_bindir() {
    _aura_pg_b=$(pg_config --bindir 2>/dev/null) || _aura_pg_b=
    if [ -n "$_aura_pg_b" ] && [ -x "$_aura_pg_b/initdb" ]; then
        echo "$_aura_pg_b"
        return 0
    fi
    for _aura_pg_b in $(printf '%s\n' /usr/lib/postgresql/*/bin \
                        | sort -r -V); do
        if [ -x "$_aura_pg_b/initdb" ]; then
            echo "$_aura_pg_b"
            return 0
        fi
    done
    aura_log "error: no PostgreSQL server programs (initdb) found:" \
        "install postgresql"
    return 1
}

# Run a server program as the cluster's owner: postgres when we are root.
# From / (every path given to them is absolute): the PostgreSQL programs
# complain, or fail, when they cannot enter the current directory (a
# root-only clone, say).
_aura_pg_as_owner() {
    if [ "$(id -u)" = 0 ]; then
        (cd / && runuser -u postgres -- "$@")
    else
        (cd / && "$@")
    fi
}

# Start the existing cluster in RUNDIR/pg/data on 127.0.0.1:PORT and wait
# (pg_ctl -w) until it accepts connections: aura_pg_ctl_start RUNDIR PORT
# Durability is off (fsync, synchronous commit, full pages): the cluster
# is thrown away with RUNDIR.
aura_pg_ctl_start() {
    _aura_pg_bin=$(aura_pg_bindir) || exit 1
    _aura_pg_dir=$(cd "$1" && pwd)/pg || aura_die "no run directory $1"
    _aura_pg_as_owner "$_aura_pg_bin/pg_ctl" -D "$_aura_pg_dir/data" \
        -l "$_aura_pg_dir/postgres.log" -s -w -t 60 \
        -o "-h 127.0.0.1 -p $2 -k '$_aura_pg_dir/data' -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
        start >/dev/null 2>&1 || {
        tail -n 20 "$_aura_pg_dir/postgres.log" >&2 2>/dev/null
        aura_die "PostgreSQL did not start on port $2" \
            "(see $_aura_pg_dir/postgres.log)"
    }
}

# Create a cluster in RUNDIR/pg/data, start it on 127.0.0.1:PORT, create
# the database aura and load conf/schema.sql into it:
# aura_start_postgres RUNDIR PORT
aura_start_postgres() {
    _aura_pg_bin=$(aura_pg_bindir) || exit 1
    _aura_pg_dir=$(cd "$1" && pwd)/pg || aura_die "no run directory $1"
    mkdir "$_aura_pg_dir" || aura_die "cannot create $_aura_pg_dir"
    if [ "$(id -u)" = 0 ]; then
        chown postgres: "$_aura_pg_dir" || aura_die "chown $_aura_pg_dir"
        runuser -u postgres -- test -w "$_aura_pg_dir" 2>/dev/null \
            || aura_die "the postgres user cannot write to $_aura_pg_dir:" \
                        "$1 and the folders above it must be searchable" \
                        "by others (chmod 755)"
    fi
    # Trust authentication: the cluster listens on 127.0.0.1 only (and on
    # a socket inside its own 0700 data directory), lives as long as the
    # run directory, and holds test or demo data only.
    _aura_pg_as_owner "$_aura_pg_bin/initdb" -D "$_aura_pg_dir/data" \
        -A trust -U aura --no-sync --encoding=UTF8 --locale=C \
        >"$_aura_pg_dir/initdb.log" 2>&1 || {
        cat "$_aura_pg_dir/initdb.log" >&2
        aura_die "initdb failed"
    }
    aura_pg_ctl_start "$1" "$2"
    _aura_psql "$2" postgres -c 'create database aura' \
        || aura_die "cannot create the database aura on port $2"
    aura_psql "$1" "$2" -f "$AURA_TOP/conf/schema.sql" \
        || aura_die "loading conf/schema.sql failed"
}

# Stop the cluster in RUNDIR/pg/data (fast shutdown: sessions are ended)
# and wait until it is down; pg_ctl signals the postmaster named by the
# cluster's own postmaster.pid.  Nothing to do when it is not running:
# aura_stop_postgres RUNDIR
aura_stop_postgres() {
    [ -f "$1/pg/data/postmaster.pid" ] || return 0
    _aura_pg_bin=$(aura_pg_bindir) || return 1
    _aura_pg_data=$(cd "$1/pg/data" && pwd) || return 1
    _aura_pg_as_owner "$_aura_pg_bin/pg_ctl" -D "$_aura_pg_data" \
        -m fast -s -w -t 30 stop >/dev/null 2>&1 && return 0
    # pg_ctl status: 3 when no server runs (a stale postmaster.pid).
    _aura_pg_st=0
    _aura_pg_as_owner "$_aura_pg_bin/pg_ctl" -D "$_aura_pg_data" \
        status >/dev/null 2>&1 || _aura_pg_st=$?
    [ "$_aura_pg_st" -eq 3 ] && return 0
    aura_log "PostgreSQL in $_aura_pg_data did not stop in 30 s:" \
        "immediate shutdown"
    _aura_pg_as_owner "$_aura_pg_bin/pg_ctl" -D "$_aura_pg_data" \
        -m immediate -s -w -t 30 stop >/dev/null 2>&1
}

# psql on database DB of the cluster on 127.0.0.1:PORT, as its superuser
# aura: _aura_psql PORT DB [psql args]
# psql is a client: it runs as the calling user, root included (only the
# server refuses root), so it can read -f files from a root-only tree.
_aura_psql() {
    _aura_pg_port=$1
    _aura_pg_db=$2
    shift 2
    _aura_pg_bin=$(aura_pg_bindir) || return 1
    # From / if we cannot enter the current directory (see above); relative
    # -f paths could not be read from there anyway.
    if [ -x . ]; then
        "$_aura_pg_bin/psql" -h 127.0.0.1 -p "$_aura_pg_port" -U aura \
            -d "$_aura_pg_db" -v ON_ERROR_STOP=1 -X -q "$@"
    else
        (cd / && "$_aura_pg_bin/psql" -h 127.0.0.1 -p "$_aura_pg_port" \
            -U aura -d "$_aura_pg_db" -v ON_ERROR_STOP=1 -X -q "$@")
    fi
}

# psql on the database aura of the cluster in RUNDIR on 127.0.0.1:PORT:
# aura_psql RUNDIR PORT [psql args]   e.g. -f FILE, -c SQL, -At -c SQL,
# or SQL on stdin.  RUNDIR names the cluster for symmetry with the other
# functions; psql reaches it over TCP, as the calling user (see above).
aura_psql() {
    _aura_pg_port=$2
    shift 2
    _aura_psql "$_aura_pg_port" aura "$@"
}

# --- The Apache::Test suite, as build/test and debian/tests/suite run it -
#
# Apache::Test refuses to run as root (httpd cannot spawn its children as
# root), and a clone under a root-only folder is unreadable to anyone
# else: as root, a pass runs as the system user aura-test (created when
# missing) in a copy of the tree (the current directory) under /tmp.

aura_test_user=aura-test

# aura_suite_pass NAME CONFIGURE_FLAGS [ENV=VALUE ...] -- [t/TEST.PL args]
# With CONFIGURE_FLAGS, the copy is reconfigured and rebuilt with them.
# The copy is removed when the pass succeeds, kept (its t/logs named)
# when it fails.
aura_suite_pass() {
    _aura_name=$1 _aura_flags=$2
    shift 2
    _aura_envs=
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        _aura_envs="$_aura_envs $1"
        shift
    done
    [ $# -gt 0 ] && shift
    echo "build/test: $_aura_name"
    if [ "$(id -u)" = 0 ] && ! id "$aura_test_user" >/dev/null 2>&1; then
        useradd --system --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin "$aura_test_user"
    fi
    _aura_work=$(mktemp -d /tmp/aura-test.XXXXXX)
    chmod 755 "$_aura_work"
    tar --exclude=.git --exclude=./dist --exclude=./t/sdk/.npm-cache -cf - . \
        | tar -C "$_aura_work" -xf -
    if [ -n "$_aura_flags" ]; then
        # shellcheck disable=SC2086
        (cd "$_aura_work" && make -s clean >/dev/null 2>&1 \
            && ./configure --enable-werror $_aura_flags >/dev/null \
            && make -s all) || return 1
    fi
    _aura_rc=0
    if [ "$(id -u)" = 0 ]; then
        chown -R "$aura_test_user:" "$_aura_work"
        # shellcheck disable=SC2086
        runuser -u "$aura_test_user" -- env -u HOME $_aura_envs \
            "$_aura_work/build/run-suite" "$@" || _aura_rc=$?
    else
        # shellcheck disable=SC2086
        env $_aura_envs "$_aura_work/build/run-suite" "$@" || _aura_rc=$?
    fi
    # What tests keep as artifacts (t/console/fleet_browser.t's
    # screenshot) outlives the copy: artifacts/<pass>/ of the tree.
    if [ -d "$_aura_work/t/logs/artifacts" ]; then
        _aura_art=artifacts/$(printf '%s' "$_aura_name" \
                               | tr -cs 'A-Za-z0-9' '-')
        rm -rf "$_aura_art"
        mkdir -p "$_aura_art"
        cp -R "$_aura_work/t/logs/artifacts/." "$_aura_art/"
        echo "build/test: artifacts of $_aura_name in $(pwd)/$_aura_art"
    fi
    if [ "$_aura_rc" -eq 0 ]; then
        rm -rf "$_aura_work"
    else
        echo "build/test: $_aura_name failed; logs are in $_aura_work/t/logs" >&2
    fi
    return "$_aura_rc"
}
