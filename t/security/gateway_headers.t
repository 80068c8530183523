# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Issue #29, point 3: headers the gateway owns are decided by the gateway
# alone, on both planes and both paths.
# - Responses: a NATS service (the example service, x-example-reply-
#   header-N) or an HTTP upstream (x-upstream-reply-header-N) answers
#   with Strict-Transport-Security (includeSubDomains), RateLimit,
#   RateLimit-Policy, Clear-Site-Data, NEL, Report-To, Expect-CT,
#   Public-Key-Pins and X-Project-Id: none reaches the client, on a 200
#   and on the service's own 503 (whose Retry-After is the service's and
#   passes), nor on a WebSocket 101; where the gateway sets HSTS, its
#   value is the only one; with an actor quota the client sees the
#   gateway's RateLimit alone; an operator's mod_headers HSTS is kept.
# - Requests: X-Project-Id reaching a service is the project the gateway
#   verified (the API key's; the path's on project-path Locations), any
#   spelling of the client's dropped, and none where no project was
#   verified (org-path, AuraPublic).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use IO::Select;
use Aura::Test qw(mint console_token json_body new_reqid exec_count
                  raw_connect ANON_KEY);
use Aura::Upstream qw(upstream_stats upstream_log);

# Header name => value, as a compromised service would send them.
my @OWNED = (
    [ 'Strict-Transport-Security', 'max-age=31536000; includeSubDomains' ],
    [ 'RateLimit', '"actor";r=0;t=86400' ],
    [ 'RateLimit-Policy', '"actor";q=1;w=86400' ],
    [ 'Clear-Site-Data', '"cookies", "storage"' ],
    [ 'NEL', '{"report_to":"x","max_age":86400,"include_subdomains":true}' ],
    [ 'Report-To', '{"group":"x","max_age":86400,"endpoints":[{"url":'
                   . '"https://collector.example/r"}]}' ],
    [ 'Expect-CT', 'max-age=86400, enforce' ],
    [ 'Public-Key-Pins', 'pin-sha256="AAAA"; max-age=86400' ],
    [ 'X-Project-Id', 'proj-evil' ],
);
my $KEPT = [ 'X-Service-Own', 'kept' ];

my $per_route = 3 + @OWNED;
# Responses: 2 planes x 2 paths x (200, 503); HSTS 2 x 3, mod_headers
# and a refusal 4, the quota 4, the 101 4; requests: 9 rows x 3.
plan tests => 2 * 2 * 2 * $per_route + 2 * 3 + 4 + 4 + 4 + 9 * 3;

my $owner = console_token('user-owner');
my %cred = (
    aura_data => [ apikey => ANON_KEY ],
    aura_mgmt => [ Authorization => "Bearer $owner",
                   'X-Project-Id' => 'proj-a' ],
);

# Reply header requests: "x-example-reply-header-N" for the NATS service,
# "x-upstream-reply-header-N" for the HTTP upstream.
sub asks {
    my ($prefix, @hdrs) = @_;
    my $n = 0;
    return map { ("$prefix-" . ++$n => "$_->[0]: $_->[1]") } @hdrs;
}

sub values_of {
    my ($res, $name) = @_;
    return [ $res->headers->header($name) ];
}

# --- responses: none of the service's owned headers reaches the client --
for my $vhost (qw(aura_data aura_mgmt)) {
    Apache::TestRequest::module($vhost);
    for my $p ([ 'NATS', '/v1/functions/gh', '/v1/functions/gh',
                 'x-example-reply-header', 'X-Example-Status' ],
               [ 'HTTP', '/v1/storage/gh', '/v1/storage/status/503',
                 'x-upstream-reply-header', undef ]) {
        my ($path, $ok, $err, $prefix, $status_hdr) = @$p;
        for my $case ([ '200', $ok, () ],
                      [ 'the service\'s 503', $err,
                        ($status_hdr ? ($status_hdr => '503') : ()) ]) {
            my ($what, $url, @st) = @$case;
            my $res = GET($url, @{ $cred{$vhost} }, @st,
                          asks($prefix, @OWNED, $KEPT,
                               [ 'Retry-After', '7' ]));
            my $name = "$vhost, $path, $what";
            is($res->code, $what eq '200' ? 200 : 503, "$name: status");
            for my $o (@OWNED) {
                is_deeply(values_of($res, $o->[0]), [],
                          "$name: no $o->[0] of the service's");
            }
            is($res->header($KEPT->[0]), 'kept',
               "$name: the service's own headers pass");
            is_deeply(values_of($res, 'Retry-After'), ['7'],
                      "$name: its Retry-After is its own and passes");
        }
    }
}

# --- the gateway's HSTS is the only one -----------------------------------
Apache::TestRequest::module('aura_data');
for my $p ([ 'NATS', '/v1/test/hsts/x', 'x-example-reply-header' ],
           [ 'HTTP', '/v1/test/hstshttp/x', 'x-upstream-reply-header' ]) {
    my ($path, $url, $prefix) = @$p;
    my $res = GET($url, apikey => ANON_KEY, asks($prefix, $OWNED[0]));
    is($res->code, 200, "$path, AuraSecurityHeader HSTS: 200");
    is_deeply(values_of($res, 'Strict-Transport-Security'), ['max-age=60'],
              "$path: Strict-Transport-Security is the gateway's, once");
    is_deeply(values_of($res, 'X-Frame-Options'), ['DENY'],
              "$path: the other security headers are the gateway's too");
}
{
    # An operator's mod_headers comes after the gateway and stays.
    my $res = GET('/v1/test/ophsts/x', apikey => ANON_KEY,
                  asks('x-example-reply-header', $OWNED[0]));
    is($res->code, 200, 'mod_headers HSTS: 200');
    is_deeply(values_of($res, 'Strict-Transport-Security'),
              ['max-age=120'], 'the operator\'s HSTS (mod_headers), once');
    # A refusal of the gateway keeps its own headers (the error path).
    $res = GET('/v1/functions/gh', apikey => 'ak_test_unknown_0123456789ab');
    is($res->code, 401, 'the gateway\'s own 401');
    is_deeply(values_of($res, 'X-Frame-Options'), ['DENY'],
              'with its security headers');
}

# --- with an actor quota the RateLimit fields are the gateway's ----------
{
    Apache::TestRequest::module('aura_limits');
    my $sub = "gwh-$$-" . int(time * 1000);
    my $tok = mint(qw(--alg RS256 --kid r1 --exp-in 300 --project proj-a
                      --sub), $sub, '--key', "$ENV{AURA_TEST_JWT_DIR}/rsa.key");
    my $res = GET('/v1/limit/lease/x', apikey => ANON_KEY,
                  Authorization => "Bearer $tok",
                  asks('x-example-reply-header', @OWNED[1, 2]));
    is($res->code, 200, 'a quota Location: 200');
    my $policy = values_of($res, 'RateLimit-Policy');
    like(join('|', @$policy), qr/^"actor";q=\d+;w=60$/,
         'RateLimit-Policy: the gateway\'s alone');
    isnt($policy->[0], $OWNED[2][1], 'not the service\'s');
    like(join('|', @{ values_of($res, 'RateLimit') }),
         qr/^"actor";r=\d+;t=\d+$/, 'RateLimit: the gateway\'s alone');
}

# --- the 101 of a WebSocket -------------------------------------------------
{
    Apache::TestRequest::module('aura_data');
    my $hp = Apache::TestRequest::hostport();
    my $s = raw_connect(PeerAddr => $hp, Timeout => 15)
        or die "connect: $!";
    binmode $s;
    my $n = 0;
    my $req = "GET /v1/realtime/ws/gh HTTP/1.1\r\nHost: localhost\r\n"
        . "Upgrade: websocket\r\nConnection: Upgrade\r\n"
        . "Sec-WebSocket-Version: 13\r\n"
        . "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        . "apikey: " . ANON_KEY . "\r\n";
    $req .= 'X-Upstream-Reply-Header-' . ++$n . ": $_->[0]: $_->[1]\r\n"
        for @OWNED, $KEPT;
    print $s "$req\r\n";
    my $head = '';
    while ($head !~ /\r\n\r\n/) {
        IO::Select->new($s)->can_read(15) or last;
        sysread($s, $head, 65536, length $head) or last;
    }
    close $s;
    ($head) = split /\r\n\r\n/, $head, 2;
    like($head // '', qr/^HTTP\/1\.1 101 /, '101: switched');
    my @bad = grep { my $o = $_->[0]; ($head // '') =~ /^\Q$o\E:/mi } @OWNED;
    is_deeply([ map { $_->[0] } @bad ], [],
              '101: none of the upstream\'s owned headers');
    like($head // '', qr/^X-Service-Own: kept\r?$/mi,
         '101: the upstream\'s own headers pass');
    like($head // '', qr/^X-Request-Id: /mi, '101: the gateway\'s id');
}

# --- requests: X-Project-Id is the verified project ------------------------
# NATS: (the headers the service got); HTTP: (what the upstream got).
sub nats_seen {
    my ($vhost, $path, @h) = @_;
    Apache::TestRequest::module($vhost);
    my $res = GET($path, 'X-Example-Headers' => 'json', @h);
    return ($res->code, json_body($res) || {});
}
sub http_seen {
    my ($vhost, $path, @h) = @_;
    Apache::TestRequest::module($vhost);
    my $since = upstream_stats()->{log_lines};
    my $id = new_reqid('ghx');
    my $res = GET($path, 'X-Request-Id' => $id, @h);
    my ($got) = grep { ($_->{headers}{'aura-request-id'} // '') eq $id }
                @{ upstream_log($since) };
    return ($res->code, ($got || {})->{headers} || {});
}
# Each spelling a client may claim another project with; ":" keeps LWP
# from turning "_" into "-".
my @claims = ('X-Project-Id' => 'proj-mongo', ':X_Project_Id' => 'proj-evil',
              ':x.project.id' => 'proj-evil2');
sub spellings {
    my ($h) = @_;
    return join ',', sort grep { /^x.project.id$/i } keys %$h;
}

my @rows = (
    [ 'data, NATS', \&nats_seen, 'aura_data', '/v1/functions/gh',
      [ apikey => ANON_KEY, @claims ], ['proj-a'] ],
    [ 'data, HTTP', \&http_seen, 'aura_data', '/v1/storage/gh',
      [ apikey => ANON_KEY, @claims ], 'proj-a' ],
    [ 'management project-path, NATS', \&nats_seen, 'aura_mgmt',
      '/v1/projects/proj-a/logs',
      [ Authorization => "Bearer $owner", @claims ], ['proj-a'] ],
    [ 'management project-path, HTTP', \&http_seen, 'aura_mgmt',
      '/v1/projects/proj-a/httpfiles/x',
      [ Authorization => "Bearer $owner", @claims ], 'proj-a' ],
    [ 'management org-path, NATS', \&nats_seen, 'aura_mgmt',
      '/v1/orgs/org-test/projects',
      [ Authorization => "Bearer $owner", @claims ], undef ],
    [ 'management org-path, HTTP', \&http_seen, 'aura_mgmt',
      '/v1/orgs/org-test/httpfiles/x',
      [ Authorization => "Bearer $owner", @claims ], undef ],
    [ 'management project-header, NATS', \&nats_seen, 'aura_mgmt',
      '/v1/functions/gh',
      [ Authorization => "Bearer $owner", 'X-Project-Id' => 'proj-a',
        ':X_Project_Id' => 'proj-mongo' ], ['proj-a'] ],
    [ 'data, AuraPublic, NATS', \&nats_seen, 'aura_data',
      '/v1/test/public/gh', [ @claims ], undef ],
    [ 'data, AuraPublic, HTTP', \&http_seen, 'aura_data',
      '/v1/test/publichttp/gh', [ @claims ], undef ],
);
for my $row (@rows) {
    my ($name, $call, $vhost, $path, $h, $want) = @$row;
    my ($code, $got) = $call->($vhost, $path, @$h);
    is($code, 200, "$name: 200");
    my ($key) = grep { lc $_ eq 'x-project-id' } keys %$got;
    is_deeply(defined $key ? $got->{$key} : undef, $want,
              "$name: X-Project-Id is "
              . (defined $want ? 'the verified project' : 'not sent'));
    is(spellings($got), defined $want ? ($key // '') : '',
       "$name: no other spelling crossed");
}
