# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Stage 1, per address, before authentication (VirtualHost aura_limits,
# zones in t/conf/extra.conf.in):
# - a burst then a steady rate admitted within 2 % of what GCRA allows,
#   with four clients racing over both children;
# - the 429 itself: problem+json ip-rate-limit, Retry-After, RateLimit
#   fields of draft-ietf-httpapi-ratelimit-headers-09;
# - a flood without valid credentials is cut without a single key lookup
#   or JWT verification, and nothing reaches the service.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Aura::Test qw(problem_ok new_reqid exec_count mint);
use Aura::Load qw(hammer counters);

plan tests => 3 + 4 + 5 + 7;

Apache::TestRequest::module('aura_limits');
(my $hp = Apache::TestRequest::hostport()) =~ s/^localhost:/127.0.0.1:/;
my $base = "http://$hp";

# --- accuracy: zone tight, 50 r/s, burst 20 -------------------------------
# GCRA admits the burst plus one request per 20 ms while demand lasts.
my $secs = 3;
my $h = hammer(url => "$base/v1/limit/tight/x", seconds => $secs,
               clients => 4, warmup => "$base/health");
my $ok = $h->{codes}{404} || 0;
my $refused = $h->{codes}{429} || 0;
# The window the server saw demand in lies between the clients' inner
# span (first answer to last request sent) and their outer one (first
# request to last answer): GCRA's admissions lie between what it allows
# over each, within 2 %.  On an idle machine the two differ by a few ms;
# a loaded one stretches the requests' latency, which is between them.
my $allowed = 20 + 50 * $h->{elapsed};
my $least = 20 + 50 * $h->{inner};
diag(sprintf('tight: %d sent, %d admitted, %d refused in %.3f s (inner '
             . '%.3f s); GCRA allows %.1f to %.1f', $h->{sent}, $ok,
             $refused, $h->{elapsed}, $h->{inner}, $least, $allowed));
ok($refused > $ok, 'the clients asked for far more than the rate');
is($ok + $refused, $h->{sent}, 'every answer is 404 (admitted) or 429');
ok($ok <= 1.02 * $allowed && $ok >= 0.98 * $least,
   sprintf('admitted %d within 2 %% of %.1f to %.1f (burst 20 + 50/s x '
           . '%.3f to %.3f s)', $ok, $least, $allowed, $h->{inner},
           $h->{elapsed}));

# --- the 429 ---------------------------------------------------------------
# The bucket was empty when the hammer stopped; a credit comes back every
# 20 ms, so spend what came back since.
my $res;
for (1 .. 25) {
    $res = GET('/v1/limit/tight/x');
    last if $res->code == 429;
}
problem_ok($res, 429, 'ip-rate-limit', 'over the rate');
like($res->header('Retry-After') // '', qr/^[1-9]\d*$/,
     'Retry-After in whole seconds');
is($res->header('RateLimit-Policy'), '"ip";q=20;w=1',
   'RateLimit-Policy: the burst, refilled in 1 s');
like($res->header('RateLimit') // '', qr/^"ip";r=0;t=[1-9]\d*$/,
     'RateLimit: nothing remaining');
ok($res->header('X-Request-Id'), 'the 429 carries the request id');
is($res->header('Access-Control-Allow-Origin'), '*',
   'and the CORS header');

# --- a flood never costs authentication work ------------------------------
# Zone flood: 1 r/m, burst 5.  Five requests get through to the key check
# (401 each); everything after is cut before it.
my $bad_key = 'ak_test_nowhere_0123456789abcdef';
my @first = map { GET('/v1/limit/flood/x', apikey => $bad_key)->code } 1 .. 5;
is_deeply(\@first, [(401) x 5], 'the burst reaches authentication');
my $before = counters($base);
my $token = mint(qw(--alg RS256 --kid r1 --sub flooder --exp-in 300 --project proj-a --key),
                 "$ENV{AURA_TEST_JWT_DIR}/rsa.key");
my $id = new_reqid('flood');
my $f = hammer(url => "$base/v1/limit/flood/x", seconds => 1, clients => 2,
               headers => { apikey => $bad_key,
                            'X-Request-Id' => $id });
my $g = hammer(url => "$base/v1/limit/flood/x", seconds => 1, clients => 2,
               headers => { apikey => 'ak_test_anon_0123456789abcdef',
                            Authorization => "Bearer $token" });
my $after = counters($base);
my $n = $f->{sent} + $g->{sent};
diag("flood: $n requests");
is(($f->{codes}{429} || 0) + ($g->{codes}{429} || 0), $n,
   'every flood request is refused with 429');
is($after->{key_cache_hits} + $after->{key_cache_misses},
   $before->{key_cache_hits} + $before->{key_cache_misses},
   'not one key lookup (cache or Postgres)');
is($after->{jwt_verifications}, $before->{jwt_verifications},
   'not one token verification');
is($after->{ip_rejected} - $before->{ip_rejected}, $n,
   'each refusal counted by stage 1');
is(exec_count($id), 0, 'nothing reached the service');
ok($n > 100, 'the flood was a flood');
