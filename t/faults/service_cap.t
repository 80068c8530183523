# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Issue #16, point 1: one service cannot take every worker.  First the
# issue's own case with the default caps (24 callers, 20 workers).  The test's
# own responder of the service "ai" (subject aura.test.frozen) is frozen
# with SIGSTOP; then
# - more callers than the route's cap (AuraServiceMaxInFlight 3): three
#   wait, the others get 503 service-saturated at once (Retry-After,
#   problem+json), are never sent (the responder's execution count), and
#   meanwhile another service, the management plane and /health of both
#   planes answer within 1 s; thawed, the three get their replies and
#   every counter returns to 0;
# - more callers than the data plane's cap (auto: 70 % of the suite's 20
#   workers, 14) on a route without a cap of its own: 14 wait, the rest
#   and every other data-plane service call get 503 service-saturated at
#   once, while the management plane and /health still answer;
# - the same on the management plane (auto: 20 %, 4): the data plane and
#   /health still answer;
# - the HTTP path (the test upstream's /slow/MS) honours its route's cap
#   the same way;
# - a nested Location inherits the cap of the outer one, or turns it off;
# - /metrics and the error log say so (AURA00704, once per interval).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use Time::HiRes qw(time sleep);
use LWP::UserAgent;
use Aura::Test qw(console_token wait_until error_log_size
                  error_log_since natsreq new_reqid);
use Aura::Frozen qw(responder_start freeze thaw callers collect in_flight
                    timed_get);

plan tests => 63;

Apache::TestRequest::module('aura_data');
my $data = 'http://' . Apache::TestRequest::hostport();
Apache::TestRequest::module('aura_mgmt');
my $mgmt = 'http://' . Apache::TestRequest::hostport();
# The callers hold the service_role key, the class that may fill a whole
# cap (AuraShedding): what these tests meet is the cap itself; the shares
# of the less trusted classes are t/faults/shed.t's.
use constant SERVICE_KEY => 'ak_test_service_0123456789abcdef';
my %key = (apikey => SERVICE_KEY);
my %console = (Authorization => 'Bearer ' . console_token('user-owner'),
               'X-Project-Id' => 'proj-a');

sub executed {
    my ($id) = @_;
    my ($rc, $out) = natsreq('aura.test.frozen.count', $id);
    return $rc ? -1 : 0 + $out;
}

# Each within 1 s, while the frozen service holds its share.
sub others_answer {
    my ($what, %o) = @_;
    my @checks = (
        ["$data/health", {}, 200, 'data /health'],
        ["$mgmt/health", {}, 200, 'management /health'],
        ["$mgmt/v1/functions/echo/m", \%console, $o{mgmt_code} // 200,
         'a management-plane service route'],
        ["$data/v1/functions/echo/d", \%key, $o{data_code} // 200,
         'another data-plane service'],
    );
    for my $c (@checks) {
        my ($res, $secs) = timed_get($c->[0], %{ $c->[1] });
        ok($res->code == $c->[2] && $secs < 1,
           sprintf('%s: %s answers %d within 1 s (%d in %.3f s)', $what,
                   $c->[3], $c->[2], $res->code, $secs));
    }
}

# Waits until $n requests are in flight on counter $what ("ai", "data"...)
# and $refused more than $from were refused by its cap: every caller has
# been decided before the test thaws the service (forked callers can be
# slow to start, under the sanitizers above all).
sub settled {
    my ($base, $what, $n, $from, $refused) = @_;
    return wait_until(10, sub {
        my $f = in_flight($base);
        my $now = $f->{services}{$what} // $f->{planes}{$what};
        $now == $n && $f->{refused}{$what} - $from == $refused });
}

sub refused_so_far { in_flight($_[0])->{refused}{$_[1]} }

responder_start();
ok(wait_until(5, sub {
    (timed_get("$data/v1/test/capped/warm", %key))[0]->code == 200 }),
   'the responder answers on the capped route before the freeze');
my $h = in_flight($data);
is($h->{workers}, 20, 'the instance has 20 workers (auto caps derive '
                      . 'from them)');

# --- the service's own cap ------------------------------------------------
my $log_from = error_log_size();
my $tag = new_reqid('cap');
freeze();
my $r0 = refused_so_far($data, 'ai');
my $kids = callers(8, sub { "$data/v1/test/capped/c$_[0]" },
                   sub { +{ %key, 'X-Request-Id' => "$tag-$_[0]" } });
ok(settled($data, 'ai', 3, $r0, 5),
   'three callers wait on the frozen service (its cap), five refused');
others_answer('service cap');
is(in_flight($data)->{services}{ai}, 3, 'still three in flight, no more');
sleep 0.5;
thaw();
my @r = collect($kids);
my @refused = grep { $_->{code} == 503 } @r;
my @served = grep { $_->{code} == 200 } @r;
is(scalar @refused, 5, 'five callers past the cap were refused');
is(scalar @served, 3, 'the three that waited got their replies once thawed');
is(scalar(grep { $_->{type} eq '/problems/service-saturated' } @refused), 5,
   'refusals are /problems/service-saturated');
is(scalar(grep { $_->{ctype} =~ m{^application/problem\+json} } @refused), 5,
   'as problem+json');
is(scalar(grep { $_->{retry} eq '1' } @refused), 5, 'with Retry-After: 1');
is(scalar(grep { $_->{secs} < 2 } @refused), 5,
   'at once (each under 2 s while the service is frozen)');
like($refused[0]{detail} // '', qr/service ai/, 'the detail names the service');
is(join(',', map { executed("$tag-$_->{i}") } @refused), '0,0,0,0,0',
   'no refused request reached the service');
is(join(',', map { executed("$tag-$_->{i}") } @served), '1,1,1',
   'each admitted request ran once');
ok(wait_until(5, sub {
    my $f = in_flight($data);
    $f->{services}{ai} == 0 && $f->{planes}{data} == 0 }),
   'after the thaw the counters of the service and the plane return to 0');
my $log = error_log_since($log_from);
my @lines = $log =~ /(AURA00704: service ai saturated[^\n]*)/g;
is(scalar @lines, 1, 'the saturation is logged once for the burst');

# --- the issue's case, with the defaults: 24 callers, 20 workers ---------
# auto: 50 % of the 20 workers per service (10), 70 % for the data plane.
$tag = new_reqid('auto');
freeze();
$r0 = refused_so_far($data, 'ai');
$kids = callers(24, sub { "$data/v1/test/autocap/a$_[0]" },
                sub { +{ %key, 'X-Request-Id' => "$tag-$_[0]" } });
ok(settled($data, 'ai', 10, $r0, 14),
   'defaults: ten of 24 callers wait on the frozen service');
others_answer('defaults');
thaw();
@r = collect($kids);
my @sat = grep { $_->{code} == 503
                 && $_->{type} eq '/problems/service-saturated' } @r;
my $worst = 0;
for (@sat) { $worst = $_->{secs} if $_->{secs} > $worst }
is(scalar @sat, 14, sprintf('defaults: 14 refused with service-saturated '
                            . '(slowest refusal %.3f s)', $worst));
ok($worst < 2, 'defaults: every refusal at once');
is(scalar(grep { $_->{code} == 200 } @r), 10,
   'defaults: the ten that waited got their replies');
ok(wait_until(5, sub { in_flight($data)->{planes}{data} == 0 }),
   'defaults: the counters return to 0');

# --- the data plane's cap (auto, 70 % of 20 = 14) ------------------------
$tag = new_reqid('plane');
freeze();
$r0 = refused_so_far($data, 'data');
$kids = callers(17, sub { "$data/v1/test/uncapped/p$_[0]" },
                sub { +{ %key, 'X-Request-Id' => "$tag-$_[0]" } });
ok(settled($data, 'data', 14, $r0, 3),
   'fourteen callers wait: the data plane holds its cap');
others_answer('plane cap', data_code => 503);
my ($res, $secs) = timed_get("$data/v1/functions/echo/d", %key);
like($res->content, qr{/problems/service-saturated.*data plane}s,
     'another data-plane service is refused by the plane cap, not sent');
thaw();
@r = collect($kids);
is(scalar(grep { $_->{code} == 503
                 && $_->{type} eq '/problems/service-saturated'
                 && $_->{detail} =~ /data plane/ } @r), 3,
   'three callers past the plane cap: 503 service-saturated (data plane)');
is(scalar(grep { $_->{code} == 503 && $_->{secs} < 2 } @r), 3,
   'refused at once');
is(scalar(grep { $_->{code} == 200 } @r), 14,
   'the fourteen that waited got their replies');
ok(wait_until(5, sub { in_flight($data)->{planes}{data} == 0 }),
   'the data plane counter returns to 0');

# --- the management plane's cap (auto, 20 % of 20 = 4) -------------------
freeze();
$r0 = refused_so_far($mgmt, 'management');
$kids = callers(6, sub { "$mgmt/v1/test/uncapped/m$_[0]" },
                sub { \%console });
ok(settled($mgmt, 'management', 4, $r0, 2),
   'four management-plane callers wait: the plane holds its cap');
others_answer('management plane cap', mgmt_code => 503);
thaw();
@r = collect($kids);
is(scalar(grep { $_->{code} == 503 && $_->{secs} < 2
                 && $_->{detail} =~ /management plane/ } @r), 2,
   'two management callers past the plane cap: 503 at once');
is(scalar(grep { $_->{code} == 200 } @r), 4, 'the four that waited: 200');
ok(wait_until(5, sub { in_flight($mgmt)->{planes}{management} == 0 }),
   'the management plane counter returns to 0');

# --- inheritance: a nested Location keeps or overrides the cap -----------
for my $case (['inner', 2, 2], ['off', 4, 0]) {
    my ($where, $wait, $refused) = @$case;
    freeze();
    $r0 = refused_so_far($data, 'ai');
    $kids = callers(4, sub { "$data/v1/test/capnest/$where/n$_[0]" },
                    sub { \%key });
    ok(settled($data, 'ai', $wait, $r0, $refused),
       "capnest/$where: $wait of 4 wait");
    sleep 0.3;
    is(in_flight($data)->{services}{ai}, $wait, "capnest/$where: no more");
    thaw();
    @r = collect($kids);
    is(scalar(grep { $_->{code} == 503 } @r), $refused,
       "capnest/$where: $refused refused");
    ok(wait_until(5, sub { in_flight($data)->{services}{ai} == 0 }),
       "capnest/$where: back to 0");
}

# --- the HTTP path --------------------------------------------------------
$r0 = refused_so_far($data, 'storage');
$kids = callers(5, sub { "$data/v1/test/cappedhttp/slow/3000/h$_[0]" },
                sub { \%key });
ok(settled($data, 'storage', 2, $r0, 3),
   'HTTP route: two requests in flight to the slow upstream (its cap)');
@r = collect($kids);
is(scalar(grep { $_->{code} == 200 } @r), 2, 'HTTP route: two served');
is(scalar(grep { $_->{code} == 503 && $_->{secs} < 1
                 && $_->{type} eq '/problems/service-saturated' } @r), 3,
   'HTTP route: three refused at once with service-saturated');
ok(wait_until(5, sub {
    my $f = in_flight($data);
    $f->{services}{storage} == 0 && $f->{planes}{data} == 0 }),
   'HTTP route: the counters return to 0');

# --- what operators see ---------------------------------------------------
my $token = do {
    open(my $fh, '<', $ENV{AURA_TEST_METRICS_TOKEN_FILE}) or die "$!";
    local $/;
    my $t = <$fh>;
    $t =~ s/\s+//g;
    $t;
};
$res = LWP::UserAgent->new->get("$data/metrics",
                                Authorization => "Bearer $token");
is($res->code, 200, '/metrics answers');
my ($sat) = $res->content =~ /^aura_saturated_total\{service="ai"\} (\d+)$/m;
ok(defined $sat && $sat >= 5, 'aura_saturated_total{service="ai"} counts '
                              . 'the refusals');
my ($plane) = $res->content
    =~ /^aura_saturated_total\{plane="data"\} (\d+)$/m;
ok(defined $plane && $plane >= 4, 'aura_saturated_total{plane="data"} too');
like($res->content, qr/^aura_upstream_in_flight\{service="ai"\} 0$/m,
     'aura_upstream_in_flight{service="ai"} is back to 0');
$h = in_flight($mgmt);
ok($h->{refused}{ai} >= 5 && $h->{refused}{data} >= 4,
   '/health (either plane) reports the refusals by cap');
