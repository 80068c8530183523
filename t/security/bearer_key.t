# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Issue #30: stock SDKs (supabase-js and its kin) send the project key
# both as apikey and as "Authorization: Bearer <key>" when nobody is
# signed in; the gateway answered 401 invalid-token "token malformed".
# Now, on the data plane:
# - a bearer that is byte for byte the API key presented in the same
#   request (apikey or X-API-Key header, ?apikey= on a streaming route)
#   is no user token: the request is what the key makes it (anon,
#   service_role), AURA01850, and neither the key nor Authorization
#   reaches the service, on the NATS and the HTTP path, also where
#   tokens are forwarded (/v1/db);
# - a bearer shaped like a key but another is 401 bearer-key-mismatch
#   (AURA01851), never the key's request, never a lookup of it;
# - every other bearer that is not a valid token stays 401 invalid-token
#   (no silent downgrade); a valid token still makes the request a user's;
# - a key only in Authorization (no apikey header) stays 401 missing-key,
#   with a detail that says where the key belongs.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Aura::Test qw(mint json_body new_reqid exec_count problem_ok
                  error_log_size error_log_since ANON_KEY raw_connect);
use Aura::Upstream qw(upstream_stats upstream_log);

plan tests => 8 * 4 + 2 * 3 + 3 + 4 * 6 + 2 + 6 * 4 + 2 * 3 + 3 + 5 * 2;

my $ANON = ANON_KEY;
my $SERVICE = 'ak_test_service_0123456789abcdef';
my $OTHER = 'ak_test_notakey_0123456789abcdef';     # no row anywhere
my $rsa = "$ENV{AURA_TEST_JWT_DIR}/rsa.key";
my $user = mint(qw(--alg RS256 --kid r1 --exp-in 300 --sub bearer-user
                   --project proj-a --key), $rsa);

Apache::TestRequest::module('aura_data');

# A NATS route: (response, the headers the service received, executions).
sub nats_call {
    my ($path, @h) = @_;
    my $id = new_reqid('bk');
    my $res = GET($path, 'X-Example-Headers' => 'json',
                  'X-Request-Id' => $id, @h);
    return ($res, json_body($res) || {}, exec_count($id));
}

# --- the key again in Authorization: the key's request --------------------
for my $c ([ 'anon key, apikey header', 'anon', '/v1/functions/bk',
             apikey => $ANON, Authorization => "Bearer $ANON" ],
           [ 'anon key, X-API-Key header', 'anon', '/v1/functions/bk',
             'X-API-Key' => $ANON, Authorization => "Bearer $ANON" ],
           [ 'service_role key', 'service_role', '/v1/functions/bk',
             apikey => $SERVICE, Authorization => "Bearer $SERVICE" ],
           [ 'anon key, bearer scheme in lower case', 'anon',
             '/v1/functions/bk',
             apikey => $ANON, Authorization => "bearer $ANON" ],
           [ 'anon key in ?apikey= on a streaming route', 'anon',
             "/v1/test/stream/bk?apikey=$ANON&x=1",
             Authorization => "Bearer $ANON" ],
           [ 'anon key on /v1/db (tokens are forwarded there)', 'anon',
             '/v1/db/todos',
             apikey => $ANON, Authorization => "Bearer $ANON" ],
           [ 'service_role key on /v1/db', 'service_role', '/v1/db/todos',
             apikey => $SERVICE, Authorization => "Bearer $SERVICE" ],
           [ 'a user token still makes a user', 'authenticated',
             '/v1/functions/bk',
             apikey => $ANON, Authorization => "Bearer $user" ]) {
    my ($name, $role, $path, @h) = @$c;
    my ($res, $h, $runs) = nats_call($path, @h);
    is($res->code, 200, "$name: 200");
    is($runs, 1, "$name: the service ran once");
    is_deeply($h->{'Aura-Role'}, [ $role ], "$name: Aura-Role $role");
    if ($role eq 'authenticated') {
        is_deeply($h->{'Aura-Actor'}, [ 'bearer-user' ],
                  "$name: the token's subject acts");
    }
    else {
        ok(!exists $h->{authorization} && !exists $h->{apikey}
           && index($res->content, $role eq 'anon' ? $ANON : $SERVICE) < 0,
           "$name: neither the key nor Authorization reached the service");
    }
}

# The HTTP path: the upstream's bytes hold neither.
for my $c ([ 'anon', $ANON ], [ 'service_role', $SERVICE ]) {
    my ($role, $key) = @$c;
    my $since = upstream_stats()->{log_lines};
    my $id = new_reqid('bkh');
    my $res = GET('/v1/storage/bk', apikey => $key,
                  Authorization => "Bearer $key", 'X-Request-Id' => $id);
    my ($got) = grep { ($_->{headers}{'aura-request-id'} // '') eq $id }
                @{ upstream_log($since) };
    $got ||= { headers => {}, raw_head => '' };
    is($res->code, 200, "HTTP path, $role key twice: 200");
    is($got->{headers}{'aura-role'}, $role, "HTTP path: Aura-Role $role");
    ok($got->{raw_head} ne '' && index($got->{raw_head}, $key) < 0
       && $got->{raw_head} !~ /^authorization:/mi,
       "HTTP path, $role: neither the key nor Authorization in its bytes");
}

# Logged at debug as such, without the key.
{
    my $from = error_log_size();
    my $id = new_reqid('bklog');
    my $res = GET('/v1/functions/bk', apikey => $ANON,
                  Authorization => "Bearer $ANON", 'X-Request-Id' => $id);
    is($res->code, 200, 'the SDK form: 200');
    my $log = error_log_since($from);
    like($log, qr/AURA01850: Authorization bearer is the request's API key \(key:[0-9a-f]{16}\): no user token/,
         'AURA01850 names the key by its hash prefix');
    ok(index($log, $ANON) < 0, 'the key is in no log line');
}

# --- another key in Authorization: bearer-key-mismatch --------------------
for my $c ([ 'anon apikey, service_role bearer', $ANON, $SERVICE ],
           [ 'service_role apikey, anon bearer', $SERVICE, $ANON ],
           [ 'anon apikey, a bearer shaped like a key but none', $ANON,
             $OTHER ],
           [ 'anon apikey, the key with one byte changed', $ANON,
             'ak_test_anon_0123456789abcdeF' ]) {
    my ($name, $key, $bearer) = @$c;
    my $from = error_log_size();
    my $id = new_reqid('bkmm');
    my $res = GET('/v1/functions/bk', apikey => $key,
                  Authorization => "Bearer $bearer", 'X-Request-Id' => $id);
    problem_ok($res, 401, 'bearer-key-mismatch', $name);
    like($res->header('WWW-Authenticate') // '', qr/^Bearer error="invalid_token"/,
         "$name: WWW-Authenticate");
    is(exec_count($id), 0, "$name: the service never ran");
}
{
    my $from = error_log_size();
    my $res = GET('/v1/functions/bk', apikey => $ANON,
                  Authorization => "Bearer $SERVICE",
                  'X-Request-Id' => new_reqid('bkmml'));
    is($res->code, 401, 'mismatch again: 401');
    my $log = error_log_since($from);
    ok($log =~ /AURA01851: Authorization bearer is an API key other than the request's \(key:[0-9a-f]{16} of project proj-a\): refused/
       && index($log, $SERVICE) < 0 && index($log, $ANON) < 0,
       'AURA01851, and neither key in the log');
}

# --- anything else that is not a valid token: still invalid-token ---------
for my $c ([ 'a JWS-shaped junk token', 'aaaaaaaaaa.bbbbbbbbbb.cccccccccc' ],
           [ 'the key with padding after it', "$ANON==" ],
           [ 'a short bearer', 'ak_short' ],
           [ 'a bearer of token characters only', "$ANON/x" ],
           [ 'an expired token',
             mint(qw(--alg RS256 --kid r1 --exp-in -600 --sub u
                     --project proj-a --key), $rsa) ],
           [ 'a token of another project',
             mint(qw(--alg RS256 --kid r1 --exp-in 300 --sub u
                     --project proj-b --key), $rsa) ]) {
    my ($name, $bearer) = @$c;
    my $id = new_reqid('bkit');
    my $res = GET('/v1/functions/bk', apikey => $ANON,
                  Authorization => "Bearer $bearer", 'X-Request-Id' => $id);
    problem_ok($res, 401, 'invalid-token', $name);
}

# --- the key only in Authorization: missing-key, as before ----------------
for my $c ([ 'anon key only as a bearer', $ANON ],
           [ 'service_role key only as a bearer', $SERVICE ]) {
    my ($name, $key) = @$c;
    my $id = new_reqid('bkmk');
    my $res = GET('/v1/functions/bk', Authorization => "Bearer $key",
                  'X-Request-Id' => $id);
    my $p = json_body($res) || {};
    is($res->code, 401, "$name: 401");
    like($p->{type} // '', qr{^/problems/missing-key$}, "$name: missing-key");
    is(exec_count($id), 0, "$name: the service never ran");
}
{
    my $res = GET('/v1/functions/bk', Authorization => "Bearer $ANON");
    like((json_body($res) || {})->{detail} // '', qr/apikey header.*looks like an API key/,
         'missing-key: the detail says where the key belongs');
    my $res2 = GET('/v1/functions/bk', Authorization => "Bearer $user");
    is((json_body($res2) || {})->{type}, '/problems/missing-key',
       'a user token without a key: missing-key as ever');
    unlike((json_body($res2) || {})->{detail} // '', qr/looks like/,
           'and no key hint there');
}

# --- hostile spellings, as raw bytes: never the key's request -------------
# The key rule reads exactly one well-formed "Authorization: Bearer";
# any other spelling that carries the key is refused (401, or httpd's
# 400 for control bytes), and the service never runs.
my $hp = Apache::TestRequest::hostport(Apache::Test::config());
sub raw_status {
    my ($id, @lines) = @_;
    my $s = raw_connect(PeerAddr => $hp, Timeout => 15) or return 0;
    print {$s} join("\r\n", "GET /v1/functions/bk HTTP/1.1",
                    'Host: localhost', "apikey: $ANON",
                    "X-Request-Id: $id", 'Connection: close', @lines),
               "\r\n\r\n";
    my $head = '';
    while (sysread($s, $head, 4096, length $head)) {
        last if $head =~ /\r\n\r\n/;
    }
    close $s;
    return ($head =~ m{^HTTP/1\.1 (\d{3})})[0] // 0;
}
for my $c (
    [ 'two Authorization headers, both the key',
      "Authorization: Bearer $ANON", "Authorization: Bearer $ANON" ],
    [ 'the key, then a tab and a control byte',
      "Authorization: Bearer $ANON\t\x01" ],
    [ 'the key, one more byte and DEL',
      "Authorization: Bearer ${ANON}x\x7f" ],
    [ 'an over-long bearer of key characters',
      'Authorization: Bearer ' . ('a' x 7000) ],
    [ 'the key twice in one header',
      "Authorization: Bearer $ANON, Bearer $ANON" ],
) {
    my ($name, @lines) = @$c;
    my $id = new_reqid('bkraw');
    # httpd itself answers 400 to control bytes in a field value
    # (HttpProtocolOptions Strict), before any module reads it.
    my $want = "@lines" =~ /[\x00-\x08\x0a-\x1f\x7f]/ ? 400 : 401;
    is(raw_status($id, @lines), $want, "$name: $want");
    is(exec_count($id), 0, "$name: the service never ran");
}
