# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The NATS proxy end to end, on both planes: a body holding all 256 byte
# values goes through the gateway to the example service and back
# unchanged; method, path, query, plane and request id arrive in the
# envelope; the service ran exactly once.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET POST);
use Aura::Test qw(default_console exec_count new_reqid);

plan tests => 2 * 13;

default_console();

my $body = join('', map { chr } 0 .. 255) x 3;

for my $vhost (qw(aura_data aura_mgmt)) {
    Apache::TestRequest::module($vhost);
    my $plane = $vhost eq 'aura_data' ? 'data' : 'management';
    my $id = new_reqid($vhost);

    my $res = POST('/v1/functions/echo/a%20b?x=1&y=%2F', content => $body,
                   'Content-Type' => 'application/x-bytes',
                   'X-Request-Id' => $id);
    is($res->code, 200, "$plane: 200");
    ok($res->content eq $body, "$plane: 768-byte binary body round trip");
    is(length($res->content), 768, "$plane: body length");
    is($res->header('Content-Type'), 'application/x-bytes',
       "$plane: content type from the reply");
    is($res->header('X-Example-Method'), 'POST', "$plane: Aura-Method");
    is($res->header('X-Example-Path'), '/v1/functions/echo/a%20b',
       "$plane: Aura-Path is the raw path");
    is($res->header('X-Example-Query'), 'x=1&y=%2F', "$plane: Aura-Query");
    is($res->header('X-Example-Plane'), $plane, "$plane: Aura-Plane");
    is($res->header('X-Example-Subject'), 'aura.functions',
       "$plane: the Location's subject");
    is($res->header('X-Example-Request-Id'), $id,
       "$plane: a well-formed X-Request-Id is kept and forwarded");
    is($res->header('X-Request-Id'), $id, "$plane: and returned");
    is(exec_count($id), 1, "$plane: executed exactly once");

    my @bad = ('has space', 'x' x 129, '<script>');
    my @replaced = grep {
        my $r = GET('/v1/db/rows', 'X-Request-Id' => $_);
        ($r->header('X-Request-Id') || '') =~ /^[0-9a-f]{32}$/
    } @bad;
    is(scalar @replaced, scalar @bad,
       "$plane: malformed X-Request-Ids (space, 129 chars, <>) replaced");
}
