# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The HTTP path through mod_proxy (conf/aura-routes.conf's storage route,
# pointed at the test upstream by t/conf/extra.conf.in):
# - the request reaches the upstream with the Location's prefix replaced
#   by the upstream's path, the verified identity added and whatever the
#   client claimed in Aura-* headers, and its key, gone;
# - connections to the upstream are pooled: many requests, few
#   connections;
# - the route's budget is the upstream's timeout: 504 upstream-timeout
#   past it, the answer within it;
# - 502/503 answers feed the service's breaker; open, nothing reaches the
#   upstream; after the cooldown a good probe closes it.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET POST);
use Aura::Test qw(problem_ok new_reqid wait_until ANON_KEY);
use Aura::Load qw(health_json);
use Time::HiRes qw(sleep);
use Aura::Upstream qw(upstream_stats upstream_log);

plan tests => 27;

Apache::TestRequest::module('aura_data');

my $s0 = upstream_stats();
my $id = new_reqid('http');
my $res = GET('/v1/storage/object/a.txt?x=1', apikey => ANON_KEY,
              'X-Request-Id' => $id, 'Aura-Role' => 'service_role',
              'aura-project' => 'proj-other');
is($res->code, 200, 'served by the upstream');
is($res->header('X-Upstream'), 'upstream', 'the test upstream answered');
my ($got) = grep { ($_->{headers}{'aura-request-id'} // '') eq $id }
                 @{ upstream_log($s0->{log_lines}) };
ok($got, 'the upstream recorded it');
$got ||= { headers => {} };
is($got->{path}, '/storage/object/a.txt?x=1',
   'path: the Location prefix replaced by the upstream path, query kept');
is($got->{headers}{'aura-project'}, 'proj-a', 'Aura-Project: the key\'s');
is($got->{headers}{'aura-role'}, 'anon', 'Aura-Role: the key\'s, not the '
   . 'client\'s claim');
is($got->{headers}{'aura-plane'}, 'data', 'Aura-Plane');
is($got->{headers}{'x-request-id'}, $id, 'X-Request-Id');
ok(!exists $got->{headers}{apikey}, 'the key is not forwarded');
is($res->header('Access-Control-Allow-Origin'), '*',
   'CORS on the proxied answer');

# Pooled: 40 requests from this client, a handful of upstream connections
# (one per child, give or take).
my $s1 = upstream_stats();
my @codes = map { GET("/v1/storage/object/$_", apikey => ANON_KEY)->code }
                1 .. 40;
my $s2 = upstream_stats();
is_deeply(\@codes, [(200) x 40], '40 requests served');
my $conns = $s2->{connections} - $s1->{connections};
ok($conns <= 4, "over $conns new upstream connection(s), not 40");

# The budget (t/conf/aura-test-routes.inc: 1 s and 3 s).
problem_ok(GET('/v1/test/httpbudget1/slow/2000', apikey => ANON_KEY), 504,
           'upstream-timeout', 'a 2 s answer, 1 s budget');
is(GET('/v1/test/httpbudget3/slow/2000', apikey => ANON_KEY)->code, 200,
   'the same answer within a 3 s budget');

# Breaker (provisioner: threshold 2, cooldown 1 s, t/conf/extra.conf.in).
is(GET('/v1/test/httpbrk/status/502', apikey => ANON_KEY)->code, 502,
   'the upstream says 502');
is(GET('/v1/test/httpbrk/status/503', apikey => ANON_KEY)->code, 503,
   'then 503');
# The verdict is taken once mod_proxy is done with the upstream, which
# may be after the client has the answer (on HTTP/2, often): the breaker
# must be open within a moment, not by the client's next request.
my $base = 'http://' . Apache::TestRequest::hostport();
ok(wait_until(5, sub {
       (health_json($base)->{breakers}{provisioner}{state} || '') eq 'open'
   }), 'two failures opened the breaker');
my $l0 = upstream_stats()->{log_lines};
problem_ok(GET('/v1/test/httpbrk/status/200', apikey => ANON_KEY), 503,
           'breaker-open', 'two failures opened the breaker');
is(upstream_stats()->{log_lines} - $l0, 0, 'the upstream was not called');
sleep 1.2;
is(GET('/v1/test/httpbrk/status/200', apikey => ANON_KEY)->code, 200,
   'after the cooldown a good probe passes');
is(GET('/v1/test/httpbrk/status/204', apikey => ANON_KEY)->code, 204,
   'and the breaker is closed again');
