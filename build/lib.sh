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

# Start the example service and wait until it is subscribed (it writes
# its pid file only after its subscriptions are flushed to the server):
# aura_start_service RUNDIR NATS_URL
aura_start_service() {
    rm -f "$1/service.pid"
    "$AURA_TOP/t/services/aura_example_service" -s "$2" \
        -p "$1/service.pid" >"$1/service.log" 2>&1 &
    for _i in $(seq 100); do
        [ -s "$1/service.pid" ] && return 0
        sleep 0.1
    done
    aura_die "example service did not start (see $1/service.log)"
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
