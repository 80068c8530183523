# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Management plane CORS: only listed origins, echoed with Vary: Origin
# and never with credentials; any other origin gets no CORS header, and
# its preflight is refused before any token is asked for.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use HTTP::Request;
use Aura::Test qw(console_token problem_ok);

plan tests => 5 + 4 + 5 + 5;

Apache::TestRequest::module('aura_mgmt');
my $ua = Apache::TestRequest::user_agent();
my $token = console_token('user-owner');

sub preflight {
    my ($origin) = @_;
    my $req = HTTP::Request->new(OPTIONS => Apache::TestRequest::resolve_url(
                                     '/v1/functions/x'));
    $req->header(Origin => $origin);
    $req->header('Access-Control-Request-Method' => 'POST');
    $req->header('Access-Control-Request-Headers' => 'authorization');
    return $ua->request($req);
}

my $res = GET('/v1/functions/x', Origin => 'https://console.example',
              Authorization => "Bearer $token", 'X-Project-Id' => 'proj-a');
is($res->code, 200, 'listed origin: 200');
is($res->header('Access-Control-Allow-Origin'), 'https://console.example',
   'listed origin: echoed');
like($res->header('Vary') || '', qr/\bOrigin\b/, 'listed origin: Vary');
ok(!defined $res->header('Access-Control-Allow-Credentials'),
   'listed origin: never Allow-Credentials');
is(GET('/v1/functions/x', Origin => 'https://studio.example:8443',
       Authorization => "Bearer $token", 'X-Project-Id' => 'proj-a')
       ->header('Access-Control-Allow-Origin'),
   'https://studio.example:8443', 'second listed origin, with a port');

$res = GET('/v1/functions/x', Origin => 'https://evil.example',
           Authorization => "Bearer $token", 'X-Project-Id' => 'proj-a');
is($res->code, 200, 'other origin: the request itself is served');
ok(!defined $res->header('Access-Control-Allow-Origin'),
   'other origin: no CORS header, the browser blocks the read');
like($res->header('Vary') || '', qr/\bOrigin\b/, 'other origin: Vary');
ok(!grep({ /^Access-Control-/i } $res->headers->header_field_names),
   'other origin: no Access-Control-* at all');

$res = preflight('https://console.example');
is($res->code, 204, 'preflight from a listed origin: 204, no token');
is($res->header('Access-Control-Allow-Origin'), 'https://console.example',
   'preflight: origin echoed');
like($res->header('Access-Control-Allow-Headers') || '',
     qr/\bauthorization\b.*\bx-project-id\b/, 'preflight: headers');
like($res->header('Access-Control-Allow-Methods') || '', qr/\bPOST\b/,
     'preflight: methods');
ok(!defined $res->header('Access-Control-Allow-Credentials'),
   'preflight: no credentials');

$res = preflight('https://evil.example');
problem_ok($res, 403, 'forbidden', 'preflight from another origin');
ok(!defined $res->header('Access-Control-Allow-Origin'),
   'refused preflight: no CORS header');
