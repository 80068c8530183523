# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Circuit breakers at the network call, retries only on proof of
# non-delivery, and the route budget (VirtualHost aura_limits; breaker
# settings in t/conf/extra.conf.in: notifications opens after 3
# failures, provisioner after 2, both for a 1 s cooldown):
# - failures (503 from the service) open the breaker; while open nothing
#   reaches the service and 503 breaker-open comes back at once; after
#   the cooldown one probe passes; a failing probe reopens it, a
#   successful one closes it;
# - a hung service (timeouts) opens its breaker too;
# - a service answering after the budget: 504, executed exactly once;
# - no responders at first, a responder appearing within the budget:
#   success, the retries counted; nobody ever: 503 after the retries;
# - the same slow service succeeds with a 3 s budget and gets 504 with a
#   1 s one, although httpd's own Timeout in that VirtualHost is 1 s;
# - application errors (500, 501) are successes.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempdir);
use POSIX ();
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Time::HiRes qw(time sleep);
use Aura::Test qw(problem_ok new_reqid exec_count wait_until t_dir natsreq);
use Aura::Load qw(counters health_json);

plan tests => 52;

Apache::TestRequest::module('aura_limits');
my $base = 'http://' . Apache::TestRequest::hostport();

sub state_of { health_json($base)->{breakers}{$_[0]}{state} }

# Cooldown of the test breakers (1 s), with a margin for the clock.
sub wait_cooldown { sleep 1.2 }

# --- failures open it -------------------------------------------------------
my @fail = map { GET('/v1/brk/fail/x', 'X-Example-Status' => 503)->code }
               1 .. 3;
is_deeply(\@fail, [503, 503, 503], 'three 503s from the service');
is(state_of('notifications'), 'open', 'that opened its breaker');

my $id = new_reqid('brk');
my $t0 = time;
my $res = GET('/v1/brk/fail/x', 'X-Request-Id' => $id);
my $took = time - $t0;
ok($took < 0.5, sprintf('refused at once (%.3f s)', $took));
problem_ok($res, 503, 'breaker-open', 'while open');
is($res->header('Retry-After'), '1', 'Retry-After: the cooldown left');
is(exec_count($id), 0, 'the service was not called');
my @ids = map { new_reqid('brk') } 1 .. 10;
my @while = map { GET('/v1/brk/fail/x', 'X-Request-Id' => $_)->code } @ids;
is_deeply(\@while, [(503) x 10], 'refused by every child while open');
is(scalar(grep { exec_count($_) } @ids), 0, 'none reached the service');

# --- the probe: a failure reopens, a success closes --------------------------
wait_cooldown();
my $pid1 = new_reqid('probe');
is(GET('/v1/brk/fail/x', 'X-Example-Status' => 503,
       'X-Request-Id' => $pid1)->code, 503, 'after the cooldown, a probe');
is(exec_count($pid1), 1, 'the probe reached the service');
is(state_of('notifications'), 'open', 'its failure reopened the breaker');
problem_ok(GET('/v1/brk/fail/x'), 503, 'breaker-open', 'refused again');
wait_cooldown();
is(GET('/v1/brk/fail/x')->code, 200, 'a successful probe');
is(state_of('notifications'), 'closed', 'closes the breaker');
is_deeply([map { GET('/v1/brk/fail/x')->code } 1 .. 4], [(200) x 4],
          'traffic flows again');

# An application error is the service working: 500 and 501 never open it.
is_deeply([map { GET('/v1/brk/fail/x', 'X-Example-Status' => $_)->code }
           (500, 501, 500, 500)], [500, 501, 500, 500],
          "the service's own 500s and 501s");
is(state_of('notifications'), 'closed', 'leave the breaker closed');

# --- a hung service opens its breaker too ----------------------------------
my ($h1, $h2) = (new_reqid('hung'), new_reqid('hung'));
problem_ok(GET('/v1/brk/hang/x', 'X-Example-Delay-Ms' => 1500,
               'X-Request-Id' => $h1), 504, 'upstream-timeout',
           'no answer within 300 ms');
is(GET('/v1/brk/hang/x', 'X-Example-Delay-Ms' => 1500,
       'X-Request-Id' => $h2)->code, 504, 'a second timeout');
is(state_of('provisioner'), 'open', 'two timeouts opened the breaker');
problem_ok(GET('/v1/brk/hang/x'), 503, 'breaker-open',
           'a hung service is not waited for again');
is(exec_count($h1) + exec_count($h2), 2, 'each timed-out request ran once');

# --- after the budget: 504, run exactly once ----------------------------
my $late = new_reqid('late');
is(GET('/v1/brk/late/x', 'X-Example-Delay-Ms' => 800,
       'X-Request-Id' => $late)->code, 504, 'answered after the budget');
sleep 0.6;     # the service's answer has come and gone
is(exec_count($late), 1, 'executed exactly once: a timeout is never replayed');

# --- retries: only when nobody received the request ---------------------
my $c0 = counters($base);
my $dir = tempdir(CLEANUP => 1);
my $svc = fork();
die "fork: $!" unless defined $svc;
if (!$svc) {
    sleep 0.4;
    open(STDOUT, '>', '/dev/null');
    open(STDERR, '>', '/dev/null');
    exec(t_dir() . '/services/aura_example_service', '-s',
         $ENV{AURA_TEST_NATS_URL}, '-p', "$dir/appear.pid",
         '-c', 'aura.test.appear.count', 'aura.test.appear')
        or POSIX::_exit(127);
}
END { if ($svc) { kill 'TERM', $svc; waitpid($svc, 0) } }
$t0 = time;
my $appear = GET('/v1/brk/appear/x', 'X-Example-Status' => 201);
$took = time - $t0;
is($appear->code, 201, 'a responder that appears within the budget answers');
ok($took > 0.3 && $took < 5, sprintf('after %.2f s of retries', $took));
my $c1 = counters($base);
ok($c1->{nats_retries} > $c0->{nats_retries},
   sprintf('%d retries counted', $c1->{nats_retries} - $c0->{nats_retries}));
ok($c1->{nats_retries} - $c0->{nats_retries} <= 10, 'at most AuraRetries');
is($c1->{nats_no_responders}, $c0->{nats_no_responders},
   'no request ended without responders');

problem_ok(GET('/v1/brk/gone/x'), 503, 'no-upstream', 'nobody, ever');
my $c2 = counters($base);
is($c2->{nats_retries} - $c1->{nats_retries}, 3, 'after AuraRetries 3');
is($c2->{nats_no_responders} - $c1->{nats_no_responders}, 1,
   'counted as no responders once');

# --- one slow service, two budgets ---------------------------------------
is(GET('/v1/brk/budget3/x', 'X-Example-Delay-Ms' => 2000)->code, 200,
   'a 2 s answer within a 3 s budget (httpd Timeout 1 s there)');
problem_ok(GET('/v1/brk/budget1/x', 'X-Example-Delay-Ms' => 2000), 504,
           'upstream-timeout', 'the same answer with a 1 s budget');
