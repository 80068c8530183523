# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# /metrics: Prometheus text format behind its own bearer token (no key,
# no JWT), summed across children from the shared segment; promtool
# (Debian package prometheus) checks a real scrape.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempfile);
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Aura::Test qw(problem_ok ANON_KEY);

plan tests => 4 + 4 + 3 + 4 + 11 + 2 + 2 + 1;

Apache::TestRequest::module('aura_data');
my $token = do { local (@ARGV, $/) = $ENV{AURA_TEST_METRICS_TOKEN_FILE}; <> };

problem_ok(GET('/metrics'), 401, 'invalid-token', 'no token');
problem_ok(GET('/metrics', Authorization => 'Bearer wrong-token-of-any-size'),
           401, 'invalid-token', 'a wrong token');
my $res = GET('/metrics', apikey => ANON_KEY);
is($res->code, 401, 'an API key is no substitute');
is($res->header('WWW-Authenticate'), 'Bearer', 'says how to authenticate');
ok($res->header('X-Request-Id'), 'with the request id');

sub scrape {
    my $r = GET('/metrics', Authorization => "Bearer $token");
    return $r;
}
sub value {
    my ($text, $series) = @_;
    return $text =~ /^\Q$series\E (\S+)$/m ? $1 : undef;
}

my $before = scrape()->content;
GET('/v1/functions/x', apikey => ANON_KEY) for 1 .. 5;
GET('/v1/functions/x') for 1 .. 3;
$res = scrape();
is($res->code, 200, 'the right token: 200');
like($res->header('Content-Type') // '', qr{^text/plain; version=0\.0\.4},
     'Prometheus text format');
my $m = $res->content;
my $ok2 = 'aura_requests_total{plane="data",service="functions",class="2xx"}';
my $ok4 = 'aura_requests_total{plane="data",service="functions",class="4xx"}';
cmp_ok((value($m, $ok2) // 0) - (value($before, $ok2) // 0), '>=', 5,
       'the 2xx counted, across children');
cmp_ok((value($m, $ok4) // 0) - (value($before, $ok4) // 0), '>=', 3,
       'and the 401s');
for my $family (qw(aura_request_duration_seconds_bucket
                   aura_limiter_rejections_total aura_breaker_state
                   aura_breaker_transitions_total aura_nats_retries_total
                   aura_nats_timeouts_total aura_nats_no_responders_total
                   aura_jwt_verifications_total aura_key_cache_lookups_total
                   aura_requests_abandoned_total
                   aura_late_replies_dropped_total)) {
    like($m, qr/^\Q$family\E/m, "$family is exposed");
}
like($m, qr/^aura_redis_fallback [01]$/m, 'the Redis fallback state');
like($m, qr/^aura_request_duration_seconds_bucket\{plane="data",le="\+Inf"\} \d+$/m,
     'the histogram ends at +Inf');

# promtool on the real scrape.
my ($promtool) = map { "$_/promtool" } grep { -x "$_/promtool" }
                 split /:/, "$ENV{PATH}:/usr/bin";
ok($promtool, 'promtool is installed (Debian package prometheus)');
$promtool ||= 'promtool';
my ($fh, $file) = tempfile(UNLINK => 1);
print $fh $m;
close $fh;
my $out = `$promtool check metrics < $file 2>&1`;
is($?, 0, 'promtool check metrics accepts the scrape') or diag($out);

Apache::TestRequest::module('aura_mgmt');
is(GET('/metrics', Authorization => "Bearer $token")->code, 200,
   'the management plane has it too, with no console token');
