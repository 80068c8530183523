# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Issue #16, point 1: the in-flight counters of the caps never leak.
# - Clients that abort while their request waits on a frozen service
#   (NATS path, and the HTTP path): the slots come back when the
#   requests end.
# - Every kind of upstream error (no responders, connection refused,
#   timeouts on both paths, a malformed reply): every counter is back to
#   0 afterwards, never below (a wrap would show as a huge number).
# - A child SIGKILLed while it holds slots (no cleanup of its own runs):
#   the parent gives them back within seconds (AURA00702), and the
#   service takes its full cap again.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use IO::Socket::INET;
use Time::HiRes qw(time sleep);
use Aura::Test qw(wait_until error_log_size error_log_since);
use Aura::Frozen qw(responder_start freeze thaw callers collect in_flight
                    timed_get);

plan tests => 20;

Apache::TestRequest::module('aura_data');
my $hostport = Apache::TestRequest::hostport();
my $data = "http://$hostport";
# The callers hold the service_role key, the class that may fill a whole
# cap (AuraShedding): what these tests meet is the cap itself; the shares
# of the less trusted classes are t/faults/shed.t's.
use constant SERVICE_KEY => 'ak_test_service_0123456789abcdef';
my %key = (apikey => SERVICE_KEY);

sub all_zero {
    my $f = in_flight($data);
    for my $v (values %{ $f->{services} }, values %{ $f->{planes} }) {
        return 0 if $v != 0;
    }
    return 1;
}

sub show {
    my $f = in_flight($data);
    my %all = (%{ $f->{services} }, %{ $f->{planes} });
    return join(' ', map { "$_=$all{$_}" } sort keys %all);
}

# A request on a socket of its own, left open (the caller closes it).
sub raw_request {
    my ($path) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => $hostport, Timeout => 5)
        or die "connect: $!";
    print $s "GET $path HTTP/1.1\r\nHost: localhost\r\napikey: "
             . SERVICE_KEY . "\r\n\r\n";
    return $s;
}

responder_start();
ok(wait_until(5, sub {
    (timed_get("$data/v1/test/capped/warm", %key))[0]->code == 200 }),
   'the responder answers before the freeze');
ok(all_zero(), 'every in-flight counter starts at 0');

# --- clients that abort -----------------------------------------------------
freeze();
my @socks = map { raw_request("/v1/test/cappedshort/abort$_") } 1 .. 3;
# In flight together for about 3 s (the NATS ones' AuraTimeout, the
# HTTP ones' slowness): long enough to be seen at once on a loaded
# machine, where a 1 s window was missed.
push @socks, map { raw_request("/v1/test/cappedhttp/slow/3500/abort$_") }
             1 .. 2;
ok(wait_until(5, sub {
    my $f = in_flight($data);
    $f->{services}{ai} == 3 && $f->{services}{storage} == 2 }),
   'three NATS and two HTTP requests in flight');
close $_ for @socks;
ok(wait_until(10, \&all_zero),
   'the clients went away: every counter returns to 0 ('
   . show() . ')');
thaw();

# --- every kind of error ----------------------------------------------------
my @errors = (
    ['/v1/test/nobody/x', {}, 503, 'no responders'],
    ['/v1/test/deadhttp/x', {}, 503, 'HTTP connection refused'],
    ['/v1/test/httpbudget1/slow/3000', {}, 504, 'HTTP timeout'],
    ['/v1/functions/x', { 'X-Example-Malformed' => 'missing-status' }, 502,
     'malformed reply'],
);
for my $e (@errors) {
    my ($res) = timed_get("$data$e->[0]", %key, %{ $e->[1] });
    is($res->code, $e->[2], "$e->[3]: $e->[2]");
}
freeze();
my ($res) = timed_get("$data/v1/test/cappedshort/late", %key);
is($res->code, 504, 'NATS timeout on the frozen service: 504');
thaw();
ok(wait_until(3, \&all_zero),
   'after every error the counters are 0, none wrapped (' . show() . ')');

# --- a child killed while it holds slots ------------------------------------
my $before = in_flight($data)->{reclaimed};
my $log_from = error_log_size();
freeze();
my $kids = callers(3, sub { "$data/v1/test/capped/kill$_[0]" },
                   sub { \%key });
ok(wait_until(5, sub { in_flight($data)->{services}{ai} == 3 }),
   'three requests wait on the frozen service');
my $children = in_flight($data)->{children};
my @holders = grep { $children->{$_} > 0 } keys %$children;
my $held = 0;
$held += $children->{$_} for @holders;
is($held, 3, 'the children records account for the three ('
             . join(',', map { "$_:$children->{$_}" } @holders) . ')');
my $t0 = time;
kill 'KILL', @holders;
my $back = wait_until(5, sub {
    my $f = in_flight($data);
    $f->{services}{ai} == 0 && $f->{planes}{data} == 0 });
ok($back, sprintf('the parent gave back the dead children\'s slots within '
                  . '5 s (%.2f s)', time - $t0));
is(in_flight($data)->{reclaimed} - $before, 3, 'three reclaimed, counted');
my $log = error_log_since($log_from);
is(scalar(grep { $log =~ /AURA00702: child $_ ended holding \d+ in-flight upstream request\(s\) \(reaped\)/ } @holders),
   scalar @holders, 'AURA00702 names each killed child');
collect($kids);
thaw();
# The service has its whole cap again: three at once are all admitted.
ok(wait_until(10, sub {
    (timed_get("$data/v1/test/capped/back", %key))[0]->code == 200 }),
   'the service answers again');
freeze();
my $r0 = in_flight($data)->{refused}{ai};
$kids = callers(4, sub { "$data/v1/test/capped/again$_[0]" },
                sub { \%key });
ok(wait_until(10, sub {
    my $f = in_flight($data);
    $f->{services}{ai} == 3 && $f->{refused}{ai} == $r0 + 1 }),
   'three slots are free again after the reclaim (the fourth refused)');
thaw();
my @r = collect($kids);
is(join(',', sort map { "$_->{code}$_->{type}" } @r),
   '200,200,200,503/problems/service-saturated',
   'three served, the fourth refused by the cap');

# --- reclaimed at the next refusal, before the parent reaps ------------------
# The parent reaps at its once-a-second maintenance; until then a killed
# child is a zombie and its slots would refuse a healthy service (build/
# chaos child-kill: ~1,800 503s in 0.9 s).  A request that finds the
# cap full takes back the slots of a holder that is dead already.
sub zombie {
    my ($pid) = @_;
    open(my $fh, '<', "/proc/$pid/stat") or return 1;     # reaped: gone
    my $st = <$fh> // '';
    return $st =~ /\) [ZX] /;
}
freeze();
$log_from = error_log_size();
$before = in_flight($data)->{reclaimed};
$kids = callers(3, sub { "$data/v1/test/capped/zkill$_[0]" }, sub { \%key });
wait_until(5, sub { in_flight($data)->{services}{ai} == 3 });
$children = in_flight($data)->{children};
@holders = grep { $children->{$_} > 0 } keys %$children;
kill 'KILL', @holders;
wait_until(2, sub { !grep { !zombie($_) } @holders });
thaw();
my ($next) = timed_get("$data/v1/test/capped/znext", %key);
is($next->code, 200, 'a request right after the kill is admitted: the dead '
   . 'holders\' slots came back at once');
collect($kids);
$log = error_log_since($log_from);
my ($how) = $log =~ /AURA00702: child \d+ ended holding \d+ in-flight upstream request\(s\) \((found dead at a refusal|reaped)\)/;
# The parent's hook and a refusal may both find a dead holder: its slots
# must come back once, never twice (the cap would then admit more than
# it should, for good).
wait_until(3, sub { in_flight($data)->{reclaimed} - $before >= 3 });
is(in_flight($data)->{reclaimed} - $before, 3,
   'the three slots were given back exactly once ('
   . ($how // 'not logged') . ')');
