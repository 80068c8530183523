# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Slow clients are bounded (issue #16, point 3), on private servers
# shaped as build/demo's (event MPM, 2 children x 10 threads = 20
# workers, both planes, mod_reqtimeout):
# - one address, 200 connections dribbling headers (slowloris): the
#   listener's cap (AuraMaxConnectionsPerAddress auto: 20 / 3 = 6) holds
#   6 of them, the others and the 201st are closed at once, unanswered;
#   the management plane, and /health from another address, answer
#   within 1 s throughout; the attacking address still reaches the
#   management plane's listener (counted apart) but not the data plane's;
#   one log line for 195 refusals; once the attack's connections close,
#   the address is served again and the count is back to zero; an
#   address in AuraConnectionLimitExempt is never capped;
# - a child SIGKILLed with an address's connections counted: the parent
#   counts them out (AURA00903) and the address has its whole cap again;
# - 200 connections from 50 addresses (4 each, under the cap), re-opened
#   as soon as they are closed: the data listener's connections still
#   reading their first request are capped (AuraMaxReadingConnections
#   auto: two thirds of 20 = 13), the others closed at once, so the
#   management plane keeps a third of the workers and answers within
#   1 s (mod_reqtimeout, 2-4 s here, frees the 13 in turn): the figures
#   of docs/resilience.md.
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

plan tests => 29;

$SIG{PIPE} = 'IGNORE';
my $mods = '/usr/lib/apache2/modules';
my $PARTIAL = "GET /health HTTP/1.1\r\nHost: localhost\r\n";

# A server with both planes; $timeouts is its RequestReadTimeout.
sub server {
    my ($dir, $timeouts) = @_;
    my $mport = free_port();
    # conn_cap '': the cap is left at its default (auto).
    my ($port, $httpd) = private_httpd(dir => $dir, children => 2,
                                       threads => 10, conn_cap => '',
                                       body => <<"CONF");
LoadModule aura_mgmt_module @{[ aura_module('mgmt') ]}
<IfModule !reqtimeout_module>
    LoadModule reqtimeout_module $mods/mod_reqtimeout.so
</IfModule>
Listen 127.0.0.1:$mport
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
RequestReadTimeout $timeouts
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    # A trusted proxy of the test (127.0.0.4): never capped.
    AuraConnectionLimitExempt 127.0.0.4 192.0.2.0/24
    <Location "/health">
        SetHandler aura-health
        AuraPublic On
        AuraHealthDetail On
    </Location>
</VirtualHost>
<VirtualHost 127.0.0.1:$mport>
    AuraPlane management
    <Location "/health">
        SetHandler aura-health
        AuraPublic On
    </Location>
</VirtualHost>
CONF
    system("$httpd -k start") == 0 or die "httpd did not start";
    return ($port, $mport, $httpd);
}

sub connect_from {
    my ($port, $from) = @_;
    return IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
                                 LocalAddr => $from, Proto => 'tcp',
                                 Timeout => 5);
}

# GET $path on a new connection from $from: (status, seconds, body);
# status 0 when the connection was closed unanswered (or not made).
sub timed_get {
    my ($port, $from, $path, $limit) = @_;
    my $t0 = time;
    my $s = connect_from($port, $from) or return (0, time - $t0, '');
    syswrite($s, "GET $path HTTP/1.1\r\nHost: localhost\r\n"
                 . "Connection: close\r\n\r\n");
    my ($buf, $sel) = ('', IO::Select->new($s));
    my $deadline = $t0 + ($limit || 10);
    while ((my $left = $deadline - time) > 0) {
        last unless $sel->can_read($left);
        my $n = sysread($s, $buf, 65536, length $buf);
        last unless $n;
    }
    close $s;
    my ($code) = $buf =~ m{^HTTP/1\.\d (\d{3})};
    my ($body) = $buf =~ m{\r\n\r\n(.*)\z}s;
    return ($code || 0, time - $t0, $body // '');
}

sub detail {
    my ($port, $from) = @_;
    my ($code, undef, $body) = timed_get($port, $from || '127.0.0.2',
                                         '/health', 5);
    return $code == 200 ? (eval { decode_json($body) } || {}) : {};
}

# Has the server closed $s (EOF or reset)?  Waits at most $wait s.
sub closed {
    my ($s, $wait) = @_;
    return 0 unless IO::Select->new($s)->can_read($wait || 0);
    my $n = sysread($s, my $b, 4096);
    return !$n;
}

sub attack {
    my ($port, $from, $n) = @_;
    my @s;
    for (1 .. $n) {
        my $c = connect_from($port, $from) or next;
        syswrite($c, $PARTIAL);
        push @s, $c;
    }
    return @s;
}

sub dribble { syswrite($_, "X-Slow: 1\r\n") for @_ }

# Of @s, those the server has closed, once $n of them are (or after 3 s).
# The children accept in parallel: which of an address's connections is
# the one past its cap is the server's order, not the client's.
sub closed_of {
    my ($n, @s) = @_;
    my %gone;
    wait_until(3, sub {
        for my $i (0 .. $#s) {
            $gone{$i} = 1 if !$gone{$i} && closed($s[$i]);
        }
        return keys(%gone) >= $n;
    });
    sleep 0.3;
    $gone{$_} ||= closed($s[$_]) for 0 .. $#s;
    return (scalar(grep { $gone{$_} } keys %gone),
            map { $s[$_] } grep { !$gone{$_} } 0 .. $#s);
}

sub log_count {
    my ($dir, $re) = @_;
    open(my $fh, '<', "$dir/error.log") or return 0;
    my $n = grep { /$re/ } <$fh>;
    close $fh;
    return $n;
}

# ---- one address ---------------------------------------------------------
my $dir = tempdir(CLEANUP => 1);
my ($port, $mport, $httpd) =
    server($dir, 'handshake=5 header=10-20,MinRate=500 body=20,MinRate=500');
my $stopped;
END { system("$httpd -k stop") if $httpd && !$stopped && -s "$dir/httpd.pid" }
ok(wait_until(10, sub { (timed_get($port, '127.0.0.2', '/health', 2))[0]
                        == 200 }), 'server up');
my $h = detail($port);
is($h->{connections}{auto_cap}, 6, 'auto cap: a third of 20 workers');
is($h->{connections}{auto_reading}, 13,
   'auto reading cap: two thirds of 20 workers');

my @socks = attack($port, '127.0.0.1', 200);
is(scalar @socks, 200, '200 connections from 127.0.0.1 made');
my (%gone, @open);
wait_until(5, sub {
    for my $i (0 .. $#socks) {
        $gone{$i} = 1 if !$gone{$i} && closed($socks[$i]);
    }
    return keys(%gone) >= 194;
});
@open = map { $socks[$_] } grep { !$gone{$_} } 0 .. $#socks;
is(scalar keys %gone, 194, '194 of them closed by the server at once');
my @late = attack($port, '127.0.0.1', 1);
ok(@late && closed($late[0], 2), 'the 201st is closed at once too');

# While the 6 it holds dribble, other clients are served.
my ($worst_m, $worst_d, $bad) = (0, 0, 0);
for my $round (1 .. 4) {
    dribble(@open);
    my ($cm, $tm) = timed_get($mport, '127.0.0.2', '/health', 5);
    my ($cd, $td) = timed_get($port, '127.0.0.2', '/health', 5);
    $bad++ if $cm != 200 || $cd != 200;
    $worst_m = $tm if $tm > $worst_m;
    $worst_d = $td if $td > $worst_d;
    sleep 0.5;
}
diag(sprintf('one-address slowloris: management %.3f s, data /health '
             . '%.3f s (worst of 4, from 127.0.0.2)', $worst_m, $worst_d));
is($bad, 0, 'management and data plane answered every time');
ok($worst_m < 1, 'the management plane answers within 1 s');
ok($worst_d < 1, '/health from another address answers within 1 s');
is((timed_get($mport, '127.0.0.1', '/health', 5))[0], 200,
   'the attacking address still reaches the management listener');
is((timed_get($port, '127.0.0.1', '/health', 5))[0], 0,
   'but not the data listener: closed unanswered');
ok(!grep({ closed($_) } @open), 'the 6 it holds are still open');
$h = detail($port);
is($h->{connections}{largest}, 6, 'the address is counted at its cap');
cmp_ok($h->{shm}{conn_refused}, '>=', 196, 'refusals counted');
is(log_count($dir, qr/AURA00900: connection from 127\.0\.0\.1 /), 1,
   'one AURA00900 line for all the refusals');

close $_ for @socks, @late;
ok(wait_until(5, sub { (timed_get($port, '127.0.0.1', '/health', 2))[0]
                       == 200 }),
   'once its connections are closed, the address is served again');
ok(wait_until(5, sub { (detail($port)->{connections}{counted} // -1) == 1 }),
   'and the count is back to zero (the asking connection only)');

# ---- a child killed with connections counted -------------------------------
my @all = attack($port, '127.0.0.3', 7);
my ($n_closed, @held) = closed_of(1, @all);
is($n_closed, 1, '127.0.0.3 at its cap of 6: one of 7 closed');
open(my $pf, '<', "$dir/httpd.pid") or die "pid file: $!";
chomp(my $parent = <$pf>);
close $pf;
# The children of the httpd this test started (their parent is its pid).
sub ppid_of {
    my ($pid) = @_;
    open(my $fh, '<', "/proc/$pid/stat") or return 0;
    my $stat = <$fh> // '';
    close $fh;
    return $stat =~ /\) \S (\d+)/ ? $1 : 0;
}
my @kids = grep { ppid_of($_) == $parent }
           map { m{/proc/(\d+)$} ? $1 : () } glob('/proc/[0-9]*');
kill 'KILL', @kids;
ok(wait_until(10, sub { !grep { pid_alive($_) } @kids }),
   scalar(@kids) . ' children SIGKILLed');
close $_ for @all;
# The parent counts out a dead child's journal when it reaps it
# (AURA00903); a new child that starts between the reaping and the
# parent's hook finds the owner gone and does it instead (AURA00904).
# Either way once: the journal's owner word is taken by compare-and-swap.
ok(wait_until(10, sub {
       log_count($dir, qr/AURA0090[34]: (?:child|process) \d+ (?:exited|is gone) with \d+ connections/) >= 1 }),
   'what a killed child left was counted out (AURA00903 or AURA00904)')
    or diag(`grep -E 'AURA009' $dir/error.log | tail -20`);
ok(wait_until(10, sub { my $c = detail($port)->{connections} || {};
                        ($c->{counted} // -1) == 1 && $c->{reclaimed} >= 6 }),
   'nothing left counted; reclaimed >= 6');
@all = attack($port, '127.0.0.3', 7);
($n_closed, @held) = closed_of(1, @all);
ok($n_closed == 1 && @held == 6,
   '127.0.0.3 has its whole cap again: 6 held, 1 of 7 closed');
close $_ for @all;
# An exempt address is never capped: 10 held (of the cap's 6).
@held = attack($port, '127.0.0.4', 10);
ok(@held == 10 && !grep({ closed($_, 0.3) } @held),
   'AuraConnectionLimitExempt: 10 connections from 127.0.0.4 held');
close $_ for @held;
system("$httpd -k stop");
$stopped = 1;
wait_until(10, sub { !pid_alive($parent) });

# ---- many addresses --------------------------------------------------------
# 4 connections from each of 50 addresses: under the cap, they would
# take all 20 workers; the data listener lets 13 of them read at once
# and closes the others at once; mod_reqtimeout (header=2-4 here) closes
# each reader after ~2 s; the attacker opens every closed one again.
my $dir2 = tempdir(CLEANUP => 1);
my ($port2, $mport2, $httpd2) =
    server($dir2, 'handshake=5 header=2-4,MinRate=500 body=20,MinRate=500');
END { system("$httpd2 -k stop") if $httpd2 && -s "$dir2/httpd.pid" }
ok(wait_until(10, sub { (timed_get($mport2, '127.0.0.2', '/health', 2))[0]
                        == 200 }), 'second server up');
my $secs = 8;
my $attacker = fork();
die "fork: $!" unless defined $attacker;
if (!$attacker) {
    my @from = map { "127.0.0.$_" } 10 .. 59;
    my @c = map { my $a = $_; [ map { [$a, undef] } 1 .. 4 ] } @from;
    @c = map { @$_ } @c;
    my $end = time + $secs;
    while (time < $end) {
        for my $e (@c) {
            if (!$e->[1] || closed($e->[1])) {
                close $e->[1] if $e->[1];
                $e->[1] = connect_from($port2, $e->[0]);
                syswrite($e->[1], $PARTIAL) if $e->[1];
            }
            else {
                syswrite($e->[1], "X-Slow: 1\r\n");
            }
        }
        sleep 0.3;
    }
    POSIX::_exit(0);
}
sleep 1;
my @lat;
my ($answered, $asked, $data_ok, $data_asked) = (0, 0, 0, 0);
my $end = time + $secs - 1.5;
while (time < $end) {
    my ($c, $t) = timed_get($mport2, '127.0.0.2', '/health', 10);
    $asked++;
    $answered++ if $c == 200;
    push @lat, $t;
    my ($cd) = timed_get($port2, '127.0.0.3', '/health', 5);
    $data_asked++;
    $data_ok++ if $cd == 200;
    sleep 0.2;
}
waitpid($attacker, 0);
my ($worst) = sort { $b <=> $a } @lat;
my @sorted = sort { $a <=> $b } @lat;
diag(sprintf('50-address slowloris (200 connections): management plane '
             . 'answered %d of %d, median %.3f s, worst %.3f s; data '
             . '/health from an uninvolved address: %d of %d answered',
             $answered, $asked, $sorted[int(@sorted / 2)], $worst,
             $data_ok, $data_asked));
is($answered, $asked, 'the management plane answered every request');
ok($worst < 1, 'each within 1 s');
ok(log_count($dir2, qr/AURA00900/) == 0,
   'no address of the 50 reached its cap');
is(log_count($dir2, qr/AURA00906: .* 13 connections of this listener/), 1,
   'the data listener was full of readers: one AURA00906 line');
ok(wait_until(10, sub { my $c = detail($port2, '127.0.0.3')->{shm} || {};
                        ($c->{conn_busy} // 0) > 0 }),
   'conn_busy counted');
