# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Slow clients cannot lock others out (issue #28, point 3), on a private
# server (event MPM, 2 children x 16 threads, mod_reqtimeout with long
# header timeouts, mod_http2 with h2c by prior knowledge) whose data
# listener has a reading budget of 12 (AuraMaxReadingConnections 12)
# and AuraH2PrefaceTimeout 1s.  A server of its own: the budget, the
# preface timeout and the error log's once-a-minute lines are this
# test's alone, and its attack cannot disturb the suite's other files.
# - HTTP/2: a connection that sent its preface and SETTINGS no longer
#   counts as reading (and stays open past the preface timeout); bare
#   prefaces are closed after the timeout, counted and logged (AURA01503);
# - 3 addresses (127.0.0.2-4) with 6 half-sent requests and 2 bare
#   prefaces each, re-opening whatever the server closes, fill the
#   budget; other clients (127.0.0.9, 127.0.0.10) make 100 requests on
#   new connections: at least 99 % are answered (before issue #28 every
#   one was closed unanswered); the connections shed to admit them are
#   closed by the server, counted in /metrics and logged (AURA01502);
#   /health?detail shows the budget and who holds it, by address;
# - the same over TLS with HTTP/2 by ALPN (a second listener): the
#   preface and SETTINGS end the reading (the filter sees them above
#   mod_ssl), a bare preface and a handshake followed by nothing are
#   closed after AuraH2PrefaceTimeout.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempdir);
use IO::Select;
use IO::Socket::INET;
use JSON::PP;
use POSIX ();
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Time::HiRes qw(time sleep);
use Aura::Test qw(aura_module private_httpd free_port wait_until pid_alive);
use IO::Socket::SSL;

plan tests => 27;

$SIG{PIPE} = 'IGNORE';
my $mods = '/usr/lib/apache2/modules';
my $PARTIAL = "GET /health HTTP/1.1\r\nHost: localhost\r\n";
my $PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
my $SETTINGS = "\0\0\0\x04\0\0\0\0\0";          # empty SETTINGS frame
my $BUDGET = 12;

my $token = do { local (@ARGV, $/) = $ENV{AURA_TEST_METRICS_TOKEN_FILE}; <> };
$token =~ s/\s+\z//;

my $dir = tempdir(CLEANUP => 1);
# A key and a self-signed certificate for the TLS listener.
system("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
       . "-nodes -days 2 -subj /CN=localhost -keyout $dir/tls.key "
       . "-out $dir/tls.crt 2>/dev/null") == 0 or die 'openssl';
my $tport = free_port();
my ($port, $httpd) = private_httpd(dir => $dir, children => 2, threads => 16,
                                   body => <<"CONF");
<IfModule !reqtimeout_module>
    LoadModule reqtimeout_module $mods/mod_reqtimeout.so
</IfModule>
<IfModule !http2_module>
    LoadModule http2_module $mods/mod_http2.so
</IfModule>
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraMetricsTokenFile $ENV{AURA_TEST_METRICS_TOKEN_FILE}
RequestReadTimeout handshake=5 header=40 body=20,MinRate=500
KeepAliveTimeout 30
LogLevel info aura_common:debug
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    Protocols h2c http/1.1
    AuraMaxReadingConnections $BUDGET
    AuraH2PrefaceTimeout 1s
    <Location "/health">
        SetHandler aura-health
        AuraPublic On
        AuraHealthDetail On
    </Location>
    <Location "/metrics">
        SetHandler aura-metrics
        AuraPublic On
    </Location>
</VirtualHost>
<IfModule !ssl_module>
    LoadModule ssl_module $mods/mod_ssl.so
</IfModule>
Listen 127.0.0.1:$tport
<VirtualHost 127.0.0.1:$tport>
    AuraPlane data
    SSLEngine on
    SSLCertificateFile $dir/tls.crt
    SSLCertificateKeyFile $dir/tls.key
    Protocols h2 http/1.1
    AuraMaxReadingConnections 4
    AuraH2PrefaceTimeout 1s
</VirtualHost>
CONF
system("$httpd -k start") == 0 or die "httpd did not start";
END { system("$httpd -k stop") if $httpd && -s "$dir/httpd.pid" }

sub connect_from {
    my ($from) = @_;
    return IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
                                 LocalAddr => $from, Proto => 'tcp',
                                 Timeout => 5);
}

# GET $path on a new connection from $from: (status, body); status 0
# when the connection was closed unanswered (or not made).
sub get {
    my ($from, $path, %h) = @_;
    my $s = connect_from($from) or return (0, '');
    my $extra = join('', map { "$_: $h{$_}\r\n" } sort keys %h);
    syswrite($s, "GET $path HTTP/1.1\r\nHost: localhost\r\n$extra"
                 . "Connection: close\r\n\r\n");
    my ($buf, $sel) = ('', IO::Select->new($s));
    my $deadline = time + 5;
    while ((my $left = $deadline - time) > 0) {
        last unless $sel->can_read($left);
        my $n = sysread($s, $buf, 65536, length $buf);
        last unless $n;
    }
    close $s;
    my ($code) = $buf =~ m{^HTTP/1\.\d (\d{3})};
    my ($body) = $buf =~ m{\r\n\r\n(.*)\z}s;
    return ($code || 0, $body // '');
}

sub detail {
    my ($code, $body) = get('127.0.0.8', '/health');
    return $code == 200 ? (eval { decode_json($body) } || {}) : {};
}

# The data listener's reading record in /health?detail.
sub reading {
    my ($p) = @_;
    my ($list) = (detail()->{connections} || {})->{reading} || [];
    my ($l) = grep { $_->{listener} eq '127.0.0.1:' . ($p || $port) } @$list;
    return $l || { reading => 0, holders => [] };
}

sub holder {
    my ($l, $prefix) = @_;
    my ($h) = grep { $_->{prefix} eq $prefix } @{ $l->{holders} };
    return $h || { reading => 0, http2 => 0 };
}

sub metric {
    my ($name) = @_;
    my ($code, $body) = get('127.0.0.8', '/metrics',
                            Authorization => "Bearer $token");
    return $body =~ /^\Q$name\E (\d+)/m ? $1 : -1;
}

# Has the server closed $s (EOF or reset)?  Waits at most $wait s.
# (An HTTP/2 connection gets the server's SETTINGS first: read past.)
sub closed {
    my ($s, $wait) = @_;
    my ($sel, $w) = (IO::Select->new($s), $wait || 0);
    while ($sel->can_read($w)) {
        my $n = sysread($s, my $b, 65536);
        return 1 unless $n;
        $w = 0.05;
    }
    return 0;
}

sub open_partial {
    my ($from, $what) = @_;
    my $s = connect_from($from) or return;
    syswrite($s, $what);
    return $s;
}

sub log_count {
    my ($re) = @_;
    open(my $fh, '<', "$dir/error.log") or return 0;
    my $n = grep { /$re/ } <$fh>;
    close $fh;
    return $n;
}

ok(wait_until(10, sub { (get('127.0.0.8', '/health'))[0] == 200 }),
   'server up');
ok(detail()->{connections}{shedding}, 'the reader watchdog runs');

# ---- HTTP/2: reading only until the preface and SETTINGS ------------------
my $h2 = open_partial('127.0.0.5', $PREFACE . $SETTINGS);
my @bare = map { open_partial('127.0.0.6', $PREFACE) } 1 .. 3;
ok(wait_until(3, sub { holder(reading(), '127.0.0.6/32')->{http2} == 3 }),
   'three bare prefaces count as reading, as HTTP/2')
    or diag(explain(reading()));
is(holder(reading(), '127.0.0.5/32')->{reading}, 0,
   'a connection that sent its preface and SETTINGS does not');
my $t0 = time;
ok(wait_until(6, sub { !grep { !closed($_) } @bare }),
   'the bare prefaces are closed after AuraH2PrefaceTimeout (1 s)');
diag(sprintf('bare prefaces closed after %.2f s', time - $t0));
ok(!closed($h2, 0.2), 'the HTTP/2 connection with SETTINGS stays open');
close $h2;
close $_ for @bare;
ok(wait_until(5, sub { metric('aura_connections_h2_preface_timeout_total')
                       >= 3 }),
   'preface timeouts counted in /metrics');
ok(wait_until(5, sub { log_count(qr/AURA01503: \d+ HTTP\/2 connection/)
                       == 1 }),
   'one AURA01503 line');

# ---- the same over TLS, HTTP/2 by ALPN ---------------------------------------
sub tls_from {
    my ($from, $send) = @_;
    my $s = IO::Socket::SSL->new(PeerAddr => '127.0.0.1', PeerPort => $tport,
                                 LocalAddr => $from, Timeout => 5,
                                 SSL_alpn_protocols => ['h2'],
                                 SSL_verify_mode => SSL_VERIFY_NONE)
        or return;
    syswrite($s, $send) if length $send;
    return $s;
}
my $t_ok = tls_from('127.0.0.5', $PREFACE . $SETTINGS);
ok($t_ok && $t_ok->alpn_selected eq 'h2', 'TLS: h2 negotiated by ALPN');
my @t_bare = (tls_from('127.0.0.6', $PREFACE), tls_from('127.0.0.6', ''));
ok(wait_until(3, sub { holder(reading($tport), '127.0.0.6/32')->{http2}
                       == 2 }),
   'TLS: a bare preface and a silent h2 handshake count as reading')
    or diag(explain(reading($tport)));
is(holder(reading($tport), '127.0.0.5/32')->{reading}, 0,
   'TLS: the connection that sent its preface and SETTINGS does not');
my $tls_closed = sub {
    my ($s) = @_;
    my $sel = IO::Select->new($s);
    while ($sel->can_read(0.05)) {
        my $n = sysread($s, my $b, 65536);
        return 1 unless $n;
    }
    return 0;
};
ok(wait_until(6, sub { !grep { !$tls_closed->($_) } @t_bare }),
   'TLS: both closed after AuraH2PrefaceTimeout');
ok(!$tls_closed->($t_ok), 'TLS: the one with SETTINGS stays open');
close $_ for $t_ok, @t_bare;

# ---- 3 addresses fill the budget -------------------------------------------
my @from = qw(127.0.0.2 127.0.0.3 127.0.0.4);
my @held;
for my $a (@from) {
    push @held, [$a, $PARTIAL, open_partial($a, $PARTIAL)] for 1 .. 6;
    push @held, [$a, $PREFACE, open_partial($a, $PREFACE)] for 1 .. 2;
}
my $shed0 = metric('aura_connections_shed_total');

# The attacker keeps every connection it loses open again, for 12 s.
# (The 100 requests below take 3 s or so.)
my $attacker = fork();
die "fork: $!" unless defined $attacker;
if (!$attacker) {
    my $end = time + 12;
    while (time < $end) {
        for my $e (@held) {
            if (!$e->[2] || closed($e->[2])) {
                close $e->[2] if $e->[2];
                $e->[2] = open_partial($e->[0], $e->[1]);
            }
        }
        sleep 0.01;
    }
    POSIX::_exit(0);
}
# (Asking /health?detail sheds one of them too.)
ok(wait_until(5, sub { reading()->{reading} >= $BUDGET - 1 }),
   "the attack fills the budget of $BUDGET");
my $l = reading();
is($l->{budget}, $BUDGET, '/health?detail shows the budget');
is(join(' ', sort map { $_->{prefix} } @{ $l->{holders} }),
   '127.0.0.2/32 127.0.0.3/32 127.0.0.4/32',
   'and who holds it, by address prefix')
    or diag(explain($l));

# The other clients: 100 requests, each on a new connection, 20 ms
# apart (the attacker re-opens what it lost meanwhile).
my ($asked, $answered) = (0, 0);
for my $i (1 .. 100) {
    my ($code) = get($i % 2 ? '127.0.0.9' : '127.0.0.10', '/health');
    $asked++;
    $answered++ if $code == 200;
    sleep 0.02;
}
my $still = kill(0, $attacker);
diag(sprintf('other clients: %d of %d answered (%.1f %%) while 3 '
             . 'addresses held the budget of %d', $answered, $asked,
             100 * $answered / $asked, $BUDGET));
ok($answered >= 0.99 * $asked, 'at least 99 % of the other clients served');
ok($still, 'the attack lasted the whole measurement');
$l = reading();
cmp_ok($l->{reading}, '<=', $BUDGET + int($BUDGET / 4) + 1,
       'readers stay within the budget and a quarter');
waitpid($attacker, 0);

# What the shed connections got: the server closed them.
my $gone = grep { closed($_->[2], 0.05) } @held;
cmp_ok($gone, '>=', 1, "the server closed $gone of the attack's first "
                        . 'connections (shed, or preface timeout)');
my $shed = metric('aura_connections_shed_total');
cmp_ok($shed - $shed0, '>=', 10, 'sheds counted in /metrics ('
                                . ($shed - $shed0) . ')');
cmp_ok($shed - $shed0, '<', 3 * $asked,
       'not more sheds than newcomers could ask for');
my $logged = log_count(qr/AURA01502: connection of 127\.0\.0\.[234]\/32 /);
ok($logged >= 1 && $logged <= 2,
   "the shedding logged once a minute ($logged AURA01502 lines)");
ok(log_count(qr/AURA01501: reading budget/) >= 1,
   'each shed at debug (AURA01501)');
close $_->[2] for grep { $_->[2] } @held;
ok(wait_until(10, sub { reading()->{reading} == 0 }),
   'once the attack is gone, nothing counts as reading');
is((get('127.0.0.2', '/health'))[0], 200,
   'and the attacking address is served again');
ok(metric('aura_connections_busy_total') >= 1,
   'the attackers\' own newcomers were refused (busy)');
