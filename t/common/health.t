# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# /health on both planes: no key or token, 200 with this child's NATS
# state; ?ready answers 200 while NATS is up (the down case is in
# nats_outage.t).  GET only.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET POST);
use Aura::Test qw(json_body);

plan tests => 2 * 7;

for my $vhost (qw(aura_data aura_mgmt)) {
    Apache::TestRequest::module($vhost);
    my $plane = $vhost eq 'aura_data' ? 'data' : 'management';
    my $res = GET('/health');
    my $h = json_body($res) || {};
    is($res->code, 200, "$plane: /health 200 without any credential");
    like($res->header('Content-Type'), qr{^application/json},
         "$plane: JSON");
    is($h->{nats}, 'connected', "$plane: NATS connected");
    is($h->{plane}, $plane, "$plane: names its plane");
    is(GET('/health?ready')->code, 200, "$plane: ready while NATS is up");
    ok(defined $res->header('X-Request-Id'), "$plane: request id");
    is(POST('/health', content => 'x')->code, 405, "$plane: POST is 405");
}
