# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The plane modules act only where AuraPlane enables them.  The unrelated
# VirtualHost Includes the very same routes file but names no plane: it
# serves its files untouched, its /v1/ paths are plain 404s that never
# reach a service, and nothing of the gateway's (request id, problem+json,
# health) appears there.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Aura::Test qw(default_console exec_count new_reqid);

plan tests => 10;

default_console();

Apache::TestRequest::module('unrelated');

my $res = GET('/unrelated.txt');
is($res->code, 200, 'unrelated: static file served');
is($res->content, "unrelated site\n", 'unrelated: file content');
ok(!defined $res->header('X-Request-Id'), 'unrelated: no request id');

my $id = new_reqid('unrelated');
$res = GET('/v1/functions/echo', 'X-Request-Id' => $id);
is($res->code, 404, 'unrelated: a service path is a plain 404');
unlike($res->header('Content-Type') || '', qr/problem/,
       'unrelated: httpd\'s own error page, not problem+json');
ok(!defined $res->header('X-Example-Subject'), 'unrelated: no service reply');
is(exec_count($id), 0, 'unrelated: the service was never called');
is(GET('/health')->code, 404, 'unrelated: no /health');

# The same path on the plane VirtualHosts does reach the service.
for my $vhost (qw(aura_data aura_mgmt)) {
    Apache::TestRequest::module($vhost);
    $id = new_reqid($vhost);
    GET('/v1/functions/echo', 'X-Request-Id' => $id);
    is(exec_count($id), 1, "$vhost: the same route reaches the service");
}
