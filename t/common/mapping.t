# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Status and header mapping across the envelope, both directions:
# the reply's Aura-Status becomes the HTTP status; reply headers cross
# (repeated ones stay repeated) except Aura-* and hop-by-hop; the request
# headers that reach the service are lower-cased end-to-end headers,
# without hop-by-hop headers, credentials or anything claiming the
# gateway's namespace.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET POST);
use Aura::Test qw(default_console json_body new_reqid proto);

plan tests => 2 + 10 + 18 + 3;

default_console();

Apache::TestRequest::module('aura_data');

# Status from the reply.
my $res = GET('/v1/functions/s', 'X-Example-Status' => '418');
is($res->code, 418, 'Aura-Status 418 becomes the HTTP status');
$res = POST('/v1/db/rows', content => 'x', 'X-Example-Status' => '201');
is($res->code, 201, 'Aura-Status 201 on a POST');

# Reply headers.
$res = GET('/v1/functions/h',
           'X-Example-Reply-Header-1' => 'Set-Cookie: a=1',
           'X-Example-Reply-Header-2' => 'Set-Cookie: b=2',
           'X-Example-Reply-Header-3' => 'Cache-Control: no-cache',
           'X-Example-Reply-Header-4' => 'Connection: x-from-service',
           'X-Example-Reply-Header-5' => 'Keep-Alive: timeout=1',
           'X-Example-Reply-Header-6' => 'Upgrade: h2c',
           'X-Example-Reply-Header-7' => 'Aura-Role: service_role',
           'X-Example-Reply-Header-8' => 'Aura-Internal: secret',
           'X-Example-Reply-Header-9' => 'X-From-Service: hop');
is($res->code, 200, 'reply with extra headers: 200');
is_deeply([sort $res->header('Set-Cookie')], ['a=1', 'b=2'],
          'a repeated reply header stays two headers');
is($res->header('Cache-Control'), 'no-cache', 'an end-to-end header crosses');
unlike($res->header('Connection') || '', qr/x-from-service/i,
       'Connection from the service does not cross');
ok(!defined $res->header('Keep-Alive'), 'Keep-Alive does not cross');
ok(!defined $res->header('X-From-Service'),
   'a header the reply\'s Connection names does not cross');
ok(!defined $res->header('Upgrade'), 'Upgrade does not cross');
ok(!defined $res->header('Aura-Role'), 'Aura-Role from the service dropped');
ok(!defined $res->header('Aura-Internal'), 'Aura-* from the service dropped');
ok(!defined $res->header('Aura-Status'), 'Aura-Status is not a header');

# Request headers, as the service received them.
my $id = new_reqid('hdr');
$res = GET('/v1/functions/h?q=1',
           'X-Example-Headers' => 'json',
           'X-Request-Id'  => $id,
           'X-Multi'       => 'one',
           'X-Multi'       => 'two',
           'X-Custom-Case' => 'Value Kept',
           'apikey'        => Aura::Test::ANON_KEY,
           'X-API-Key'     => Aura::Test::ANON_KEY,
           'Aura-Role'     => 'service_role',
           'AURA-PROJECT'  => 'forged',
           'Aura-Request-Id' => 'forged-id',
           'Connection'    => 'X-Hop',
           'X-Hop'         => 'must-not-cross',
           'TE'            => 'trailers',
           'Status'        => 'forged',
           'X-Empty'       => '',
           'X-After-Empty' => 'still-here');
is($res->code, 200, 'header dump: 200');
my $h = json_body($res) || {};
is_deeply($h->{'Aura-Method'}, ['GET'], 'Aura-Method');
is_deeply($h->{'Aura-Path'}, ['/v1/functions/h'], 'Aura-Path');
is_deeply($h->{'Aura-Query'}, ['q=1'], 'Aura-Query');
is_deeply($h->{'Aura-Request-Id'}, [$id],
          'Aura-Request-Id is the gateway\'s, not a forged one');
is_deeply($h->{'Aura-Plane'}, ['data'], 'Aura-Plane');
# httpd joins a repeated request header into one value (RFC 9110 5.3)
# before any module sees it; that one value crosses as it is.
is_deeply($h->{'x-multi'}, ['one, two'],
          'a repeated request header arrives as httpd combined it');
is_deeply($h->{'x-custom-case'}, ['Value Kept'],
          'names lower-cased, values kept');
is_deeply($h->{'x-after-empty'}, ['still-here'],
          'a header after an empty one survives');
my @names = keys %$h;
ok(!grep({ /^(apikey|x-api-key)$/i } @names), 'no API key crosses');
ok(!grep({ /^aura-/i && !/^Aura-/ } @names)
   && join(',', @{ $h->{'Aura-Role'} || [] }) eq 'anon'
   && join(',', @{ $h->{'Aura-Project'} || [] }) eq 'proj-a',
   'client Aura-* headers are dropped: the verified identity only');
SKIP: {
    # HTTP/2 has no Connection header (RFC 9113 8.2.2): the h1 pass
    # checks what a header it names becomes.
    skip 'no Connection header in HTTP/2', 1 unless proto() eq 'h1';
    ok(!grep({ /^x-hop$/i } @names),
       'a header named by Connection is dropped');
}
ok(!grep({ /^(connection|te|keep-alive)$/i } @names),
   'hop-by-hop headers are dropped');
ok(!grep({ /^status$/i } @names), 'Status (NATS\'s own) is dropped');
ok(!grep({ /^content-length$/i } @names), 'Content-Length is not forwarded');
ok((grep { $_ eq 'host' } @names), 'Host crosses, lower-cased');
my @all_values = map { @{ $h->{$_} } } @names;
ok(!grep({ $_ eq Aura::Test::ANON_KEY } @all_values),
   'no key value anywhere');
ok(!grep({ $_ eq 'forged-id' } @all_values), 'forged request id nowhere');

# An empty query string sends no Aura-Query.
$res = GET('/v1/functions/h', 'X-Example-Headers' => 'json');
$h = json_body($res) || {};
ok(!exists $h->{'Aura-Query'}, 'no query: no Aura-Query');
$res = POST('/v1/functions/h', content => '',
            'X-Example-Headers' => 'json');
$h = json_body($res) || {};
is_deeply($h->{'Aura-Method'}, ['POST'], 'POST with an empty body');
is($res->code, 200, 'empty body: 200');
