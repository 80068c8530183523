# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The key store down: a key that is not cached cannot be decided, so the
# request is refused with 503 store-unavailable (never let in, never a
# default role); once Postgres is back the pool reconnects by itself.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Aura::Load qw(fan_out);
use Aura::Test qw(new_reqid exec_count problem_ok pg_stop pg_start
                  wait_until);

plan tests => 1 + 4 + 1 + 1 + 1;

Apache::TestRequest::module('aura_data');
my $ANON = 'ak_test_anon_0123456789abcdef';

is(GET('/v1/functions/x', apikey => $ANON)->code, 200, 'served before');

pg_stop();
my $started = 0;
END { pg_start() unless $started }

# A key no test has sent before: since 0.5.0 a key looked up earlier
# (even an unknown one) is served from the cache past its TTL while the
# store is down (AuraKeyCacheStaleMax), so "uncached" must be fresh.
my $fresh = sprintf('ak_test_nowhere_%08x%08x', int(rand(2**32)), $$);
my $id = new_reqid('pgdown');
problem_ok(GET('/v1/functions/x', apikey => $fresh,
               'X-Request-Id' => $id),
           503, 'store-unavailable', 'an uncached key while Postgres is down');
is(exec_count($id), 0, 'nothing was forwarded');

pg_start();
$started = 1;
ok(wait_until(15, sub {
       !grep { GET('/v1/functions/x', apikey => $ANON)->code != 200 } 1 .. 6
   }), 'Postgres back: every child reconnects by itself');

# A restart of Postgres kills every pooled connection of every child at
# once: the first query on one finds it broken, and the one retry must
# open a fresh connection, not take the next dead one from the pool (a
# 503 store-unavailable right after the restart).  Concurrent lookups of
# fresh keys leave several idle connections in each child first.
fan_out(12, sub {
    my ($ua, $i) = @_;
    for my $n (1 .. 6) {
        $ua->get(Apache::TestRequest::resolve_url('/v1/functions/x'),
                 apikey => sprintf('ak_test_fill%02d%02d_%08x%08x', $i, $n,
                                   int(rand(2**32)), $$));
    }
    return 1;
});
pg_stop();
$started = 0;
pg_start();
$started = 1;
my @codes = map {
    GET('/v1/functions/x',
        apikey => sprintf('ak_test_after%02d_%08x%08x', $_, int(rand(2**32)),
                          $$))->code
} 1 .. 8;
is("@codes", join(' ', (401) x 8),
   'right after a Postgres restart, lookups are answered (no dead pooled '
   . 'connection is retried)');
