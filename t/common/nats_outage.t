# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# NATS stopped and started again under a running gateway: /health?ready
# turns 503 on every child (liveness stays 200), proxied requests get a
# 503 problem, and both come back by themselves once NATS is up.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Aura::Test qw(default_console json_body wait_until nats_stop nats_start problem_ok
                  error_log_size error_log_since);

plan tests => 2 * 2 + 2 * 7 + 2 * 2 + 1;

default_console();

my @planes = qw(aura_data aura_mgmt);

# Ten fresh connections land on both children.
sub all_ready {
    my ($want) = @_;
    for (1 .. 10) {
        return 0 unless GET('/health?ready')->code == $want;
    }
    return 1;
}

for my $vhost (@planes) {
    Apache::TestRequest::module($vhost);
    ok(all_ready(200), "$vhost: ready before the outage");
    is(GET('/v1/functions/x')->code, 200, "$vhost: proxying before");
}

my $log_from = error_log_size();
nats_stop();
my $restarted = 0;
END { nats_start() unless $restarted }

for my $vhost (@planes) {
    Apache::TestRequest::module($vhost);
    ok(wait_until(10, sub { all_ready(503) }),
       "$vhost: ?ready is 503 on every child while NATS is down");
    my $res = GET('/health');
    is($res->code, 200, "$vhost: liveness stays 200");
    isnt((json_body($res) || {})->{nats}, 'connected',
         "$vhost: reports NATS not connected");
    problem_ok(GET('/v1/functions/x'), 503, 'upstream-error',
               "$vhost: a proxied request while NATS is down");
}

nats_start();
$restarted = 1;

for my $vhost (@planes) {
    Apache::TestRequest::module($vhost);
    ok(wait_until(15, sub { all_ready(200) }),
       "$vhost: ready again on every child after NATS is back");
    ok(wait_until(15, sub { GET('/v1/functions/x')->code == 200 }),
       "$vhost: proxying again");
}
like(error_log_since($log_from), qr/AURA00011: NATS connection lost/,
     'the outage is logged');
