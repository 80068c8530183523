# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# CORS and security headers on the data plane: a preflight is answered
# before any key is asked for; every response, 401 and 5xx and proxied
# ones included, carries Access-Control-Allow-Origin: * (and never
# Allow-Credentials) and the security headers, replacing whatever a
# service sent under those names; AuraSecurityHeader overrides one.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use HTTP::Request;
use IO::Socket::INET;
use Aura::Test qw(new_reqid exec_count raw_connect);

plan tests => 11 + 5 * 6 + 5 + 3 + 3;

Apache::TestRequest::module('aura_data');
my $ANON = 'ak_test_anon_0123456789abcdef';
my $ua = Apache::TestRequest::user_agent();

# Preflight: no key, answered before anything else.
my $id = new_reqid('preflight');
my $req = HTTP::Request->new(OPTIONS => Apache::TestRequest::resolve_url(
                                 '/v1/functions/x'));
$req->header(Origin => 'https://app.example');
$req->header('Access-Control-Request-Method' => 'POST');
$req->header('Access-Control-Request-Headers' => 'apikey, content-type');
$req->header('X-Request-Id' => $id);
my $res = $ua->request($req);
is($res->code, 204, 'preflight: 204 without a key');
is($res->header('Access-Control-Allow-Origin'), '*', 'preflight: origin *');
like($res->header('Access-Control-Allow-Methods') || '', qr/\bPOST\b/,
     'preflight: methods');
like($res->header('Access-Control-Allow-Headers') || '', qr/\bapikey\b/,
     'preflight: apikey allowed');
like($res->header('Access-Control-Allow-Headers') || '', qr/\bauthorization\b/,
     'preflight: authorization allowed');
like($res->header('Access-Control-Max-Age') || '', qr/^\d+$/,
     'preflight: max-age');
ok(!defined $res->header('Access-Control-Allow-Credentials'),
   'preflight: never Allow-Credentials');
is($res->header('X-Request-Id'), $id, 'preflight: request id');
is($res->content, '', 'preflight: no body');
is(exec_count($id), 0, 'preflight: the service never ran');
is($res->header('X-Frame-Options'), 'DENY', 'preflight: security headers');

# Every class of response carries CORS and security headers.
my @responses = (
    [ '401', GET('/v1/functions/x') ],
    [ '200 proxied', GET('/v1/functions/x', apikey => $ANON,
        'X-Example-Reply-Header-1' => 'Access-Control-Allow-Origin: https://evil',
        'X-Example-Reply-Header-2' => 'Access-Control-Allow-Credentials: true',
        'X-Example-Reply-Header-3' => 'X-Frame-Options: ALLOWALL',
        'X-Example-Reply-Header-4' => 'Content-Security-Policy: default-src *') ],
    [ '503', GET('/v1/test/nobody/x', apikey => $ANON) ],
    [ '404', GET('/nothing/here', apikey => $ANON) ],
    [ '500 from the service', GET('/v1/functions/x', apikey => $ANON,
                                  'X-Example-Status' => '500') ],
);
for my $r (@responses) {
    my ($name, $res) = @$r;
    is(join(',', $res->header('Access-Control-Allow-Origin')), '*',
       "$name: exactly one Access-Control-Allow-Origin: *");
    ok(!defined $res->header('Access-Control-Allow-Credentials'),
       "$name: no Allow-Credentials");
    is($res->header('Content-Security-Policy'),
       "default-src 'none'; frame-ancestors 'none'", "$name: CSP");
    is(join(',', $res->header('X-Frame-Options')), 'DENY',
       "$name: X-Frame-Options DENY");
    is($res->header('X-Content-Type-Options'), 'nosniff', "$name: nosniff");
    is($res->header('Referrer-Policy'), 'no-referrer', "$name: no-referrer");
}
is($responses[1][1]->code, 200, 'the proxied response was a 200');
is($responses[0][1]->code, 401, 'the first was a 401');
is($responses[2][1]->code, 503, 'the third a 503');
is($responses[3][1]->code, 404, 'the fourth a 404');
is($responses[4][1]->code, 500, 'the fifth a 500');

# Overrides per Location.
$res = GET('/v1/test/framed/x', apikey => $ANON);
is($res->header('X-Frame-Options'), 'SAMEORIGIN', 'override: a new value');
ok(!defined $res->header('Referrer-Policy'), 'override: off removes it');
is($res->header('X-Content-Type-Options'), 'nosniff',
   'override: the others are kept');

# A 413 refused before the body is read carries them too.
my $sock = raw_connect(PeerAddr => Apache::TestRequest::hostport(),
                       Timeout => 10) or die "connect: $!";
print $sock "POST /v1/functions/big HTTP/1.1\r\nHost: localhost\r\n"
          . "apikey: $ANON\r\nContent-Length: 2097152\r\n\r\n";
my $head = '';
while (my $line = <$sock>) {
    $head .= $line;
    last if $line eq "\r\n";
}
close $sock;
like($head, qr{^HTTP/1\.1 413 }, '413 before the body');
like($head, qr{^Access-Control-Allow-Origin: \*\r$}mi, '413: CORS');
like($head, qr{^X-Frame-Options: DENY\r$}mi, '413: security headers');
