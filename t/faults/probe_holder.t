# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Issue #16 point 4: a half-open probe lost with its child is recovered.
# The auth breaker (t/conf/extra.conf.in: threshold 2, cooldown 3 s) is
# opened by two 503s; while open, Retry-After is the cooldown left (not a
# constant).  After the cooldown a request that hangs (the example
# service delays its reply by a minute; /v1/brk/probe/ has a 20 s budget)
# takes the only probe; /health (AuraHealthDetail) names the httpd child
# holding it, and other requests are refused with Retry-After: 1.  That
# child is SIGKILLed (httpd's parent starts another): within about two
# seconds a request is admitted as the probe (its holder is dead: the
# record says so, long before the 22 s deadline or the 400 s
# probe-timeout), its success closes the breaker, and AURA01000 names the
# dead pid.  Before the fix the service stayed refused for the
# probe-timeout (402 s in the report).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Socket::INET;
use POSIX ();
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Time::HiRes qw(time sleep);
use Aura::Test qw(problem_ok new_reqid exec_count wait_until t_dir
                  error_log_size error_log_since);
use Aura::Load qw(counters health_json);

plan tests => 27;

Apache::TestRequest::module('aura_limits');
my $hostport = Apache::TestRequest::hostport();
my $base = "http://$hostport";
my $cooldown = 3;

sub breaker { health_json($base)->{breakers}{auth} }

# A request left hanging on its own connection: the caller reads it, or
# not, later.
sub send_raw {
    my ($path, %h) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => $hostport, Timeout => 5)
        or die "connect $hostport: $!";
    my $req = "GET $path HTTP/1.1\r\nHost: $hostport\r\nConnection: close\r\n"
              . join('', map { "$_: $h{$_}\r\n" } sort keys %h) . "\r\n";
    print {$s} $req;
    return $s;
}

sub httpd_parent {
    open(my $fh, '<', t_dir() . '/logs/httpd.pid') or return 0;
    my $pid = <$fh>;
    close $fh;
    return ($pid // '') =~ /(\d+)/ ? $1 : 0;
}

# A fault we inject is undone even if the test dies: nothing to thaw
# here (the service only delays one reply), but the killed child's
# connection is ours to close.
my $hung;
END { close $hung if $hung }

# Start from a closed breaker whatever ran before (another test may have
# left it open or half-open for up to a cooldown).
ok(wait_until($cooldown + 3, sub { GET('/v1/brk/probe/x')->code == 200 }),
   'the auth breaker starts closed');
is(breaker()->{state}, 'closed', 'closed in /health');

# --- open: Retry-After is the cooldown left ---------------------------------
my @fail = map { GET('/v1/brk/probe/x', 'X-Example-Status' => 503)->code }
               1 .. 2;
is_deeply(\@fail, [503, 503], 'two 503s from the service');
my $opened = time;
is(breaker()->{state}, 'open', 'opened the breaker');
my $res = GET('/v1/brk/probe/x');
my $left = $cooldown - (time - $opened);
problem_ok($res, 503, 'breaker-open', 'while open');
my $ra = $res->header('Retry-After') // '';
ok($ra =~ /^\d+$/ && abs($ra - $left) <= 1,
   sprintf('Retry-After %s is the cooldown left (%.2f s)', $ra, $left));
sleep 1.5;                      # a known part of the cooldown goes by
$res = GET('/v1/brk/probe/x');
$left = $cooldown - (time - $opened);
$ra = $res->header('Retry-After') // '';
ok($ra =~ /^\d+$/ && abs($ra - $left) <= 1 && $ra < $cooldown,
   sprintf('1.5 s later, Retry-After %s: the cooldown left (%.2f s)', $ra,
           $left));

# --- a probe that hangs, and the child that holds it ------------------------
sleep($opened + $cooldown + 0.2 - time) if time < $opened + $cooldown + 0.2;
my $probe_id = new_reqid('probe');
$hung = send_raw('/v1/brk/probe/x', 'X-Example-Delay-Ms' => 60000,
                 'X-Request-Id' => $probe_id);
my $b;
ok(wait_until(5, sub { $b = breaker();
                       $b->{state} eq 'half-open'
                       && @{ $b->{probe_holders} || [] } == 1 }),
   'the hanging request took the probe');
is($b->{probes}, 1, 'one probe out');
my $holder = $b->{probe_holders}[0] // 0;
my $parent = httpd_parent();
# Never signal 0 or 1 (a process group, init), httpd's parent or this
# test: only a live child that /health named.
my $holder_ok = $holder =~ /^\d+$/ && $holder > 1 && $parent
                && $holder != $parent && $holder != $$ && kill(0, $holder);
ok($holder_ok, "its holder is a live httpd child ($holder, parent $parent)");
ok(wait_until(5, sub { exec_count($probe_id) == 1 }),
   'the probe reached the service');
$res = GET('/v1/brk/probe/x');
problem_ok($res, 503, 'breaker-open', 'while the probe is out');
is($res->header('Retry-After'), '1',
   'Retry-After: 1 while half-open is full, not the cooldown');

# --- SIGKILL the holder -----------------------------------------------------
my $log0 = error_log_size();
my $recovered0 = counters($base)->{breaker_probe_recovered} // 0;
ok($holder_ok && kill('KILL', $holder),
   "SIGKILL the child holding the probe ($holder)");
my $killed = time;
my ($code, $after) = (0, 0);
wait_until(10, sub {
    $code = GET('/v1/brk/probe/x')->code;
    $after = time - $killed;
    return $code == 200;
});
is($code, 200, 'a request is admitted again');
ok($after <= 2.5, sprintf('within %.2f s of the kill (at most 2.5 s)',
                          $after));
is(breaker()->{state}, 'closed', 'its success closed the breaker');
is_deeply([map { GET('/v1/brk/probe/x')->code } 1 .. 3], [200, 200, 200],
          'traffic flows again');
is((counters($base)->{breaker_probe_recovered} // 0) - $recovered0, 1,
   'one probe recovered (breaker_probe_recovered)');
my $log = error_log_since($log0);
like($log, qr/AURA01000: breaker of service auth: the probe held by process \Q$holder\E was lost/,
     'AURA01000 names the dead holder');
my $lines = () = $log =~ /AURA01000/g;
is($lines, 1, 'logged once');
close $hung;
undef $hung;
