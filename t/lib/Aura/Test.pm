# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Aura::Test: helpers shared by the .t files: the example service's
# execution counter, NATS stop/start, bounded polling, problem+json checks,
# SQL on the key store (the PostgreSQL cluster build/run-suite started)
# and its stop/start, redis-cli on the actor quota's Redis and its
# stop/start.
package Aura::Test;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';
use Time::HiRes qw(sleep time);
use POSIX ();
use JSON::PP ();
use Apache::Test ();
use Apache::TestRequest ();
use Apache::TestUtil qw(t_cmp);

our @EXPORT_OK = qw(aura_module private_httpd free_port free_ports default_key ANON_KEY mint console_token default_console exec_count new_reqid wait_until problem_ok natsreq
                    nats_stop nats_start t_dir json_body error_log_since
                    error_log_size psql pg_stop pg_start
                    redis_cli redis_stop redis_start pid_alive proto
                    raw_connect ua_request);

sub t_dir { Apache::Test::vars('t_dir') }

# The path of mod_aura_$name.so ('common', 'data', 'mgmt', 'proxy') the
# suite loads: in $AURA_TEST_MODULES, the folder build/run-suite links
# them into (the build tree's, or the installed ones with
# AURA_TEST_MODULES_DIR), else in the build tree.
sub aura_module {
    my ($name) = @_;
    return "$ENV{AURA_TEST_MODULES}/mod_aura_$name.so"
        if $ENV{AURA_TEST_MODULES};
    return t_dir() . "/../mod_aura_$name/mod_aura_$name.so";
}

# The transport of the pass (build/test): AURA_TEST_PROTO h1 (LWP's
# HTTP/1.1, the default), h2 (TLS, ALPN) or h2c (prior knowledge): the
# last two send every LWP request of the test as an HTTP/2 stream
# (Aura::H2).
sub proto { $ENV{AURA_TEST_PROTO} || 'h1' }
if (proto() ne 'h1') {
    die 'AURA_TEST_PROTO must be h1, h2 or h2c' unless proto() =~ /^h2c?$/;
    require LWP::Protocol;
    require Aura::H2;
    LWP::Protocol::implementor('http', 'Aura::H2');
}

# A raw socket to the test server for a test that speaks HTTP/1.1 by
# hand (IO::Socket::INET's arguments): in the h2 pass, whose test server
# takes TLS only, the same HTTP/1.1 over TLS (ALPN http/1.1, the run's
# CA); elsewhere a plain TCP socket, as before.
sub raw_connect {
    my (%o) = @_;
    my ($port) = ($o{PeerAddr} // '') =~ /:(\d+)$/;
    $port //= $o{PeerPort};
    if (proto() eq 'h2' && $port && Aura::H2::ours($port)) {
        require IO::Socket::SSL;
        return IO::Socket::SSL->new(%o, SSL_alpn_protocols => ['http/1.1'],
            SSL_ca_file => "$ENV{AURA_TEST_TLS_DIR}/ca.crt",
            SSL_verifycn_name => 'localhost',
            SSL_verifycn_scheme => 'http');
    }
    require IO::Socket::INET;
    return IO::Socket::INET->new(%o);
}

# The seeded anon key of proj-a (t/conf/seed.sql).
use constant ANON_KEY => 'ak_test_anon_0123456789abcdef';

# Every request of this test carries the anon key in the apikey header
# (the data plane requires one; the management plane ignores it).
sub default_key {
    Apache::TestRequest::user_agent()->default_header(apikey => ANON_KEY);
}

# A token from t/services/aura_mint_jwt (arguments as its usage says).
sub mint {
    my @args = @_;
    my $bin = t_dir() . '/services/aura_mint_jwt';
    open(my $fh, '-|', $bin, @args) or die "$bin: $!";
    my $t = do { local $/; <$fh> };
    close $fh;
    die "aura_mint_jwt @args failed" if $? || !$t;
    $t =~ s/\s+$//;
    return $t;
}

# A console token (aud aurabase-control, console key c1) for $sub;
# extra aura_mint_jwt arguments may follow.
sub console_token {
    my ($sub, @extra) = @_;
    return mint('--alg', 'RS256', '--kid', 'c1', '--aud', 'aurabase-control',
                '--exp-in', 300, (defined $sub ? ('--sub', $sub) : ()),
                '--key', "$ENV{AURA_TEST_JWT_DIR}/console.key", @extra);
}

# Every request of this test carries the API key on the data planes and
# an owner's console token naming proj-a on the management plane: for
# tests about the proxy, not about authentication.
sub default_console {
    my $ua = Apache::TestRequest::user_agent();
    my $mgmt = Apache::Test::config()->{vhosts}{aura_mgmt}{port}
        or die 'no aura_mgmt vhost';
    my $token = console_token('user-owner');
    $ua->add_handler(request_prepare => sub {
        my ($req) = @_;
        if ($req->uri->port == $mgmt) {
            $req->header(Authorization => "Bearer $token")
                unless $req->header('Authorization');
            $req->header('X-Project-Id' => 'proj-a')
                unless $req->header('X-Project-Id');
        }
        else {
            $req->header(apikey => ANON_KEY)
                unless defined $req->header('apikey');
        }
        return;
    });
}

sub natsreq_bin { t_dir() . '/services/aura_natsreq' }

# A free TCP port on 127.0.0.1 (nothing listens once this returns).
sub free_port {
    require IO::Socket::INET;
    return IO::Socket::INET->new(Listen => 1, LocalAddr => '127.0.0.1',
                                 LocalPort => 0)->sockport;
}

# $n different ports nobody listens on: all bound at once before any is
# let go.  Drawn one at a time, the kernel may hand out a port it just
# got back: twenty draws held a repeat in 42 of 2000 tries, and
# t/data/db_targets_full.t then had one target fewer than it counted.
sub free_ports {
    my ($n) = @_;
    require IO::Socket::INET;
    my @held = map {
        IO::Socket::INET->new(Listen => 1, LocalAddr => '127.0.0.1',
                              LocalPort => 0) or die "free_ports: $!"
    } 1 .. $n;
    return map { $_->sockport } @held;
}

# A second, private httpd with the suite's modules (aura_module), for
# what the main test server cannot show (a second gateway instance,
# start and stop).  Writes $dir/httpd.conf: the common head (event MPM, modules,
# one Listen port, $children child processes of $threads threads each,
# 4 unless given) then $body, where __PORT__ stands for the port.  The
# head raises AuraMaxConnectionsPerAddress and AuraMaxReadingConnections
# to $conn_cap (256 unless given; '' leaves the defaults): tests talk
# from one address, many connections at once.  Returns ($port,
# $httpd_command_prefix); the caller starts it with "$cmd -k start" and
# stops it with "-k stop".
sub private_httpd {
    my (%o) = @_;
    my $dir = $o{dir} or die 'private_httpd: dir';
    my $port = free_port();
    my $mods = '/usr/lib/apache2/modules';
    my $n = $o{children} || 2;
    my $t = $o{threads} || 4;
    my $cap = defined $o{conn_cap} ? $o{conn_cap} : 256;
    $cap = length $cap ? "AuraMaxConnectionsPerAddress $cap\n"
                         . "AuraMaxReadingConnections $cap" : '';
    (my $body = $o{body} || '') =~ s/__PORT__/$port/g;
    open(my $fh, '>', "$dir/httpd.conf") or die "$dir/httpd.conf: $!";
    print $fh <<"CONF";
ServerRoot $dir
ServerName localhost
PidFile $dir/httpd.pid
ErrorLog $dir/error.log
LogLevel info
Listen 127.0.0.1:$port
LoadModule mpm_event_module $mods/mod_mpm_event.so
LoadModule authz_core_module $mods/mod_authz_core.so
LoadModule aura_common_module @{[ aura_module('common') ]}
LoadModule aura_data_module @{[ aura_module('data') ]}
LoadModule proxy_module $mods/mod_proxy.so
LoadModule proxy_http_module $mods/mod_proxy_http.so
LoadModule aura_proxy_module @{[ aura_module('proxy') ]}
StartServers $n
ServerLimit $n
ThreadsPerChild $t
MaxRequestWorkers @{[ $t * $n ]}
MinSpareThreads 1
MaxSpareThreads @{[ $t * $n ]}
$cap
$body
CONF
    close $fh;
    return ($port, Apache::Test::vars('httpd') . " -f $dir/httpd.conf");
}

# One request to a NATS subject, straight to the bus (not through httpd).
# Returns (exit code, stdout).
sub natsreq {
    my ($subject, $payload) = @_;
    my @cmd = (natsreq_bin(), '-s', $ENV{AURA_TEST_NATS_URL}, '-t', 2000,
               $subject, defined $payload ? ($payload) : ());
    open(my $fh, '-|', @cmd) or die "cannot run @cmd: $!";
    local $/;
    my $out = <$fh>;
    close $fh;
    return ($? >> 8, defined $out ? $out : '');
}

# How many times the example service executed the request with this id.
sub exec_count {
    my ($reqid) = @_;
    my ($rc, $out) = natsreq('aura.example.count', $reqid);
    die "count query failed ($rc)" if $rc;
    return 0 + $out;
}

my $seq = 0;
sub new_reqid {
    my ($tag) = @_;
    $seq++;
    return sprintf('t-%s-%d-%d-%d', $tag || 'req', $$, int(time * 1000),
                   $seq);
}

# Poll $cond (a sub returning true when done) every 50 ms for at most
# $secs seconds.  Returns true if the condition held in time.
sub wait_until {
    my ($secs, $cond) = @_;
    my $deadline = time + $secs;
    while (time < $deadline) {
        return 1 if $cond->();
        sleep 0.05;
    }
    return $cond->() ? 1 : 0;
}

# $method $url with headers %h and an optional body, through the
# caller's LWP::UserAgent $ua: what a test needs for the console's API
# (a DELETE with a body-less request, a POST with a JSON one).
sub ua_request {
    my ($ua, $method, $url, $body, %h) = @_;
    require HTTP::Request;
    my $r = HTTP::Request->new($method => $url);
    $r->header($_ => $h{$_}) for keys %h;
    $r->content($body) if defined $body;
    return $ua->request($r);
}

sub json_body {
    my ($res) = @_;
    my $data = eval { JSON::PP->new->decode($res->content) };
    return $data;
}

# Checks a gateway error: status, problem+json type, request id in the
# body equal to the X-Request-Id header.  Counts as 4 tests.
sub problem_ok {
    my ($res, $status, $type, $name) = @_;
    my $p = json_body($res) || {};
    Test::More::is($res->code, $status, "$name: status $status");
    Test::More::like($res->header('Content-Type') || '',
                     qr{^application/problem\+json}, "$name: problem+json");
    Test::More::is($p->{type}, "/problems/$type", "$name: type $type");
    Test::More::ok(defined $p->{request_id}
                   && $p->{request_id} eq ($res->header('X-Request-Id') || ''),
                   "$name: request id in body and header");
}

sub nats_pidfile { "$ENV{AURA_TEST_RUN}/nats.pid" }

sub nats_stop {
    open(my $fh, '<', nats_pidfile()) or die "no nats pid file: $!";
    my $pid = <$fh>;
    close $fh;
    chomp $pid;
    kill 'TERM', $pid;
    # A server this test started (nats_start) is its child: reap it, or
    # its zombie answers kill 0 for ever.
    wait_until(10, sub { waitpid($pid, POSIX::WNOHANG()) == $pid
                         || !kill(0, $pid) })
        or die "nats-server $pid did not stop";
}

sub nats_start {
    my $run = $ENV{AURA_TEST_RUN};
    my $port = $ENV{AURA_TEST_NATS_PORT};
    my $pid = fork();
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        open(STDOUT, '>', '/dev/null');
        open(STDERR, '>', '/dev/null');
        exec('nats-server', '-a', '127.0.0.1', '-p', $port,
             '-P', nats_pidfile(), '-l', "$run/nats.log")
            or exit 127;
    }
    require IO::Socket::INET;
    wait_until(10, sub {
        IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port)
    }) or die "nats-server did not come back on $port";
}

# --- the key store: the cluster build/run-suite started ------------------

sub pg_bindir {
    return $ENV{AURA_TEST_PG_BINDIR} if $ENV{AURA_TEST_PG_BINDIR};
    my $dir = `pg_config --bindir 2>/dev/null`;
    chomp $dir if defined $dir;
    return $dir if defined $dir && -x "$dir/psql";
    return '';
}

# Runs @$cmd (no shell, no stdin) and returns its standard output
# ('' for none); dies with "$what failed (exit N): <its stderr>$context"
# when it exits non-zero.
sub capture {
    my ($cmd, $what, $context) = @_;
    require File::Temp;
    my $err = File::Temp->new;
    my $pid = open(my $fh, '-|');
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        # _exit: the child must not run the test's END blocks.  No stdin:
        # redis-cli would read a last argument from it.
        open(STDIN, '<', '/dev/null') or POSIX::_exit(127);
        open(STDERR, '>&', $err) or POSIX::_exit(127);
        exec(@$cmd) or do {
            print STDERR "cannot run $cmd->[0]: $!\n";
            POSIX::_exit(127);
        };
    }
    local $/;
    my $out = <$fh>;
    close $fh;
    my $rc = $?;
    if ($rc) {
        seek($err, 0, 0);
        my $msg = <$err>;
        $msg = '' unless defined $msg;
        $msg =~ s/\s+\z//;
        die "$what failed (exit " . ($rc >> 8) . "): $msg$context\n";
    }
    return defined $out ? $out : '';
}

# Runs $sql (one or more statements) with psql on the database aura as
# its superuser; returns psql's output, unaligned and without headers
# (fields joined by '|', rows by "\n"), trimmed.  Dies with psql's error
# when a statement fails.  E.g.
#   psql("update api_keys set revoked_at = now() where key_hash = ...");
#   my $n = psql("select count(*) from api_keys");
sub psql {
    my ($sql) = @_;
    my $port = $ENV{AURA_TEST_PG_PORT}
        or die "AURA_TEST_PG_PORT is not set (run through build/run-suite)";
    my $dir = pg_bindir();
    my @cmd = ($dir ? "$dir/psql" : 'psql', '-h', '127.0.0.1', '-p', $port,
               '-U', 'aura', '-d', 'aura', '-v', 'ON_ERROR_STOP=1', '-X',
               '-q', '-A', '-t', '-c', $sql);
    my $out = capture(\@cmd, 'psql', "\nSQL: $sql");
    $out =~ s/\A\s+|\s+\z//g;
    return $out;
}

# Stops and starts the SAME cluster (its data directory is
# $AURA_TEST_RUN/pg/data, its port $AURA_TEST_PG_PORT) with the shell
# functions build/run-suite used: a test can prove that the gateway
# reconnects after a PostgreSQL restart.  pg_stop is a fast shutdown
# (sessions are ended) and returns once the server is down; pg_start
# returns once it accepts connections.  Both die on failure.
sub pg_shell {
    my ($code, @args) = @_;
    my $top = $ENV{AURA_TOP} || t_dir() . '/..';
    my $rc = system('sh', '-c', '. "$0/build/lib.sh" && ' . $code,
                    $top, @args);
    return $rc == 0;
}

sub pg_stop {
    pg_shell('aura_stop_postgres "$1"', $ENV{AURA_TEST_RUN})
        or die "PostgreSQL did not stop";
}

sub pg_start {
    pg_shell('aura_pg_ctl_start "$1" "$2"', $ENV{AURA_TEST_RUN},
             $ENV{AURA_TEST_PG_PORT})
        or die "PostgreSQL did not start on port $ENV{AURA_TEST_PG_PORT}";
}

# --- Redis: the actor quota's server build/run-suite started -------------

sub redis_port {
    return $ENV{AURA_TEST_REDIS_PORT}
        || die "AURA_TEST_REDIS_PORT is not set (run through build/run-suite)";
}

sub redis_pidfile {
    return $ENV{AURA_TEST_REDIS_PIDFILE} || "$ENV{AURA_TEST_RUN}/redis.pid";
}

# Runs redis-cli with @args (no shell: each argument is one word) on the
# suite's Redis and returns its output without the final newline; in
# list context, one element per line.  E.g.
#   my @keys = redis_cli('--scan', '--pattern', 'aura:q:*');
#   redis_cli('flushall');
# An error reply is output like any other ("ERR ..."); dies when
# redis-cli cannot run or cannot connect (Redis stopped).
sub redis_cli {
    my @args = @_;
    my @cmd = ('redis-cli', '-h', '127.0.0.1', '-p', redis_port(), @args);
    my $out = capture(\@cmd, "redis-cli @args", '');
    $out =~ s/\n\z//;
    return wantarray ? split(/\n/, $out) : $out;
}

# Is process $pid alive?  A zombie is not (if it is our child, reap it).
sub pid_alive {
    my ($pid) = @_;
    return 0 if waitpid($pid, POSIX::WNOHANG()) == $pid;
    return 0 unless kill(0, $pid);
    open(my $fh, '<', "/proc/$pid/stat") or return 0;
    my $stat = <$fh>;
    close $fh;
    return !(defined $stat && $stat =~ /\) Z /);
}

# Stops and starts the SAME Redis (port $AURA_TEST_REDIS_PORT, run
# directory $AURA_TEST_RUN): a test can prove that the gateway falls
# back while Redis is down and uses it again once it is back.  Redis
# keeps nothing on disk: it comes back empty, without the counters and
# without the quota script (the gateway's EVALSHA then gets NOSCRIPT).
# redis_stop sends SIGTERM to the pid of its pid file and returns once
# the process is gone; redis_start starts it with build/lib.sh's
# aura_start_redis, as build/run-suite did, and returns once it accepts
# connections.  Both die on failure.
sub redis_stop {
    my $file = redis_pidfile();
    open(my $fh, '<', $file) or die "no redis pid file $file: $!";
    my $pid = <$fh>;
    close $fh;
    die "no pid in $file" unless defined $pid && $pid =~ /^(\d+)\s*$/;
    $pid = $1;
    kill 'TERM', $pid;
    wait_until(10, sub { !pid_alive($pid) })
        or die "redis-server $pid did not stop";
    # Redis removes its pid file itself, but not if it was killed.
    unlink $file;
}

sub redis_start {
    my $run = $ENV{AURA_TEST_RUN} or die 'AURA_TEST_RUN is not set';
    my $port = redis_port();
    # pg_shell runs any function of build/lib.sh.
    pg_shell('aura_start_redis "$1" "$2" >/dev/null', $run, $port)
        or die "redis-server did not start on port $port";
}

sub error_log_path { t_dir() . '/logs/error_log' }

sub error_log_size { -s error_log_path() || 0 }

# The error log written since byte offset $from.
sub error_log_since {
    my ($from) = @_;
    open(my $fh, '<', error_log_path()) or return '';
    seek($fh, $from, 0);
    local $/;
    my $text = <$fh>;
    close $fh;
    return defined $text ? $text : '';
}

1;
