# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Authorization is exactly one well-formed "Bearer <token>", or absent.
# On both planes and both paths (NATS and HTTP), every other form is a
# 401 invalid-token (AURA00300), never an anonymous request, and the
# service or upstream receives nothing: a TAB or a comma after Bearer, a
# second scheme next to the token, two Authorization headers, a bare
# token, "JWT tok", "Basic ...".  A verified token crosses as
# "Bearer <token>" where it crosses at all (a data-plane Location with
# AuraForwardToken On; a console token never does).  Also here: a service_role key in ?apikey= is
# refused even next to a header key (AURA00042), and with AuraJWTAudience
# an aud array with an untrusted extra audience is refused unless
# AuraJWTAudienceMatch any.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use IO::Socket::INET;
use JSON::PP ();
use Aura::Test qw(mint console_token json_body new_reqid exec_count
                  problem_ok error_log_size error_log_since ANON_KEY);
use Aura::Upstream qw(upstream_stats upstream_log);

my $SERVICE = 'ak_test_service_0123456789abcdef';
my $rsa = "$ENV{AURA_TEST_JWT_DIR}/rsa.key";
my $cfg = Apache::Test::config();
my %port = map { $_ => $cfg->{vhosts}{$_}{port} }
           qw(aura_data aura_mgmt aura_aud aura_aud_any);

my $data_tok = mint(qw(--alg RS256 --kid r1 --exp-in 300 --sub authz-user
                       --project proj-a --key), $rsa);
my $mgmt_tok = console_token('user-owner');

# One request on a fresh connection, bytes as given.  Returns (status,
# parsed JSON body or {}).
sub raw {
    my ($port, $path, $id, @lines) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
                                  Timeout => 10) or die "connect: $!";
    print $s join("\r\n", "GET $path HTTP/1.1", 'Host: localhost',
                  "X-Request-Id: $id", 'Connection: close', @lines, '', '');
    local $/;
    my $resp = <$s> // '';
    close $s;
    my ($code) = $resp =~ m{^HTTP/1\.\d (\d{3})};
    my (undef, $body) = split /\r\n\r\n/, $resp, 2;
    my $json = eval { JSON::PP->new->decode($body // '') } || {};
    return ($code // 0, $json);
}

# Each malformed form: [name, header lines], with $t the plane's token.
sub forms {
    my ($t) = @_;
    return (
        [ 'TAB after Bearer',          "Authorization: Bearer\t$t" ],
        [ 'comma after Bearer',        "Authorization: Bearer,$t" ],
        [ 'two spaces then a TAB',     "Authorization: Bearer  \t$t" ],
        [ 'Bearer, then Basic',
          "Authorization: Bearer $t, Basic dXNlcjpwdw==" ],
        [ 'Basic, then Bearer',
          "Authorization: Basic dXNlcjpwdw==, Bearer $t" ],
        [ 'two Authorization headers, both the token',
          "Authorization: Bearer $t", "Authorization: Bearer $t" ],
        [ 'two Authorization headers, Bearer and Basic',
          "Authorization: Bearer $t", 'Authorization: Basic dXNlcjpwdw==' ],
        [ 'a bare token',              "Authorization: $t" ],
        [ 'JWT scheme',                "Authorization: JWT $t" ],
        [ 'Basic',                     'Authorization: Basic dXNlcjpwdw==' ],
        [ 'Bearer alone',              'Authorization: Bearer' ],
        [ 'something after the token', "Authorization: Bearer $t x" ],
        [ 'a quoted token',            "Authorization: Bearer \"$t\"" ],
    );
}

my @planes = (
    [ 'data', $port{aura_data}, $data_tok, "apikey: " . ANON_KEY ],
    [ 'management', $port{aura_mgmt}, $mgmt_tok, 'X-Project-Id: proj-a' ],
);
my $n_forms = () = forms('x');

plan tests => 2 * $n_forms * 6 + 2 + 2 * 2 * 6 + 2 + 1 + 2 * 6 + 2 + 8 + 2
    + 5;

my $log0 = error_log_size();
my $up0 = upstream_stats()->{log_lines};
my @http_ids;
for my $p (@planes) {
    my ($plane, $port, $tok, $cred) = @$p;
    for my $f (forms($tok)) {
        my ($name, @lines) = @$f;
        # The NATS path: the example service counts what it executes.
        my $id = new_reqid('authz');
        my ($code, $j) = raw($port, '/v1/functions/authz', $id, $cred, @lines);
        is($code, 401, "$plane, NATS, $name: 401");
        is($j->{type}, '/problems/invalid-token', "$plane, NATS, $name: "
           . 'invalid-token');
        is(exec_count($id), 0, "$plane, NATS, $name: the service ran nothing");
        # The HTTP path: the upstream records what it receives.
        $id = new_reqid('authzh');
        ($code, $j) = raw($port, '/v1/storage/authz', $id, $cred, @lines);
        is($code, 401, "$plane, HTTP, $name: 401");
        is($j->{type}, '/problems/invalid-token', "$plane, HTTP, $name: "
           . 'invalid-token');
        push @http_ids, $id;
        ok(1, "$plane, HTTP, $name: checked below");
    }
}
my %seen = map { ($_->{headers}{'aura-request-id'} // '') => 1 }
           @{ upstream_log($up0) };
is(scalar(grep { $seen{$_} } @http_ids), 0,
   'the HTTP upstream received none of the refused requests');
my @tagged = error_log_since($log0)
    =~ /AURA00300: Authorization refused: not exactly one 'Bearer <token>'/g;
is(scalar @tagged, 2 * 2 * $n_forms, 'each refusal is logged (AURA00300)');

# The one accepted form, with any number of spaces and any case of
# "Bearer": what crosses is "Bearer <token>" exactly, on the data plane's
# Locations that forward it; a console token never crosses
# (t/security/token_forwarding.t).
for my $p (@planes) {
    my ($plane, $port, $tok, $cred) = @$p;
    my ($h, $v) = split /: /, $cred, 2;
    my $fwd = $plane eq 'data';
    my ($nats, $http) = $fwd
        ? ('/v1/test/fwdtoken/authz', '/v1/test/fwdtokenhttp/authz')
        : ('/v1/functions/authz', '/v1/storage/authz');
    for my $form ("Bearer $tok", "bearer   $tok") {
        my $id = new_reqid('authzok');
        Apache::TestRequest::module($plane eq 'data' ? 'aura_data'
                                                     : 'aura_mgmt');
        my $res = GET($nats, $h => $v, 'X-Request-Id' => $id,
                      'X-Example-Headers' => 'json', Authorization => $form);
        (my $shown = $form) =~ s/ey[\w.-]+/<token>/;
        is($res->code, 200, "$plane, '$shown': 200");
        is_deeply((json_body($res) || {})->{authorization},
                  $fwd ? ["Bearer $tok"] : undef,
                  $fwd ? "$plane: the service received exactly "
                         . "'Bearer <token>'"
                       : "$plane: the service received no token");
        is(exec_count($id), 1, "$plane: the service ran once");
        # The same on the HTTP path.
        my $up = upstream_stats()->{log_lines};
        $id = new_reqid('authzokh');
        $res = GET($http, $h => $v, 'X-Request-Id' => $id,
                   Authorization => $form);
        is($res->code, 200, "$plane, HTTP: 200");
        my ($got) = grep { ($_->{headers}{'aura-request-id'} // '') eq $id }
                    @{ upstream_log($up) };
        is(($got || {})->{headers}{authorization},
           $fwd ? "Bearer $tok" : undef,
           $fwd ? "$plane, HTTP: the upstream received exactly "
                  . "'Bearer <token>'"
                : "$plane, HTTP: the upstream received no token");
        ok($got, "$plane, HTTP: the upstream received it");
    }
}

# No Authorization at all: anonymous with the key, as always.
Apache::TestRequest::module('aura_data');
my $res = GET('/v1/functions/authz', apikey => ANON_KEY,
              'X-Example-Headers' => 'json');
is($res->code, 200, 'data plane without Authorization: 200');
is_deeply((json_body($res) || {})->{'Aura-Role'}, ['anon'], 'as anon');

# An AuraPublic service route reads no credential, so it forwards none:
# a token there would reach the service unverified (forged here).
{
    my $forged = 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9.';
    my $id = new_reqid('pubnats');
    my $res = GET('/v1/test/public/x', Authorization => "Bearer $forged",
                  'X-Example-Headers' => 'json', 'X-Request-Id' => $id);
    is($res->code, 200, 'public NATS route with a token: 200');
    my $b = json_body($res) || {};
    ok(exists $b->{'Aura-Request-Id'} && !exists $b->{authorization},
       'public NATS route: the service received no Authorization');
    is(exec_count($id), 1, 'public NATS route: the service ran once');
    my $up = upstream_stats()->{log_lines};
    $id = new_reqid('pubhttp');
    $res = GET('/v1/test/publichttp/x', Authorization => "Bearer $forged",
               'X-Request-Id' => $id);
    is($res->code, 200, 'public HTTP route with a token: 200');
    my ($got) = grep { ($_->{headers}{'aura-request-id'} // '') eq $id }
                @{ upstream_log($up) };
    ok($got && !exists $got->{headers}{authorization},
       'public HTTP route: the upstream received no Authorization');
}

# /metrics keeps its own token (AuraPublic: no bearer parsing there).
{
    open(my $fh, '<', $ENV{AURA_TEST_METRICS_TOKEN_FILE}) or die $!;
    my $mt = do { local $/; <$fh> };
    $mt =~ s/\s+$//;
    is(GET('/metrics', Authorization => "Bearer $mt")->code, 200,
       '/metrics answers to its token');
}

# --- a service_role key in the URL, next to a header key ----------------------
my $log1 = error_log_size();
for my $r ([ 'a plain route', '/v1/functions/q' ],
           [ 'a streaming route', '/v1/test/stream/q' ]) {
    my ($name, $path) = @$r;
    my $id = new_reqid('qkey');
    $res = GET("$path?apikey=$SERVICE", apikey => ANON_KEY,
               'X-Request-Id' => $id);
    problem_ok($res, 401, 'key-not-allowed-in-query',
               "$name: service_role key in the query, anon key in the header");
    is(exec_count($id), 0, "$name: the service ran nothing");
    ok(index($res->content, $SERVICE) < 0, "$name: the key is not echoed");
}
my $id = new_reqid('qkeyanon');
$res = GET('/v1/functions/q?apikey=' . ANON_KEY, apikey => ANON_KEY,
           'X-Request-Id' => $id);
is($res->code, 200, 'an anon key in the query next to the header key: as '
   . 'before (the header key is used)');
my @warn = error_log_since($log1)
    =~ /AURA00042: service_role key of project proj-a sent in a URL/g;
is(scalar @warn, 2, 'each is logged as a leaked service_role key');

# --- aud arrays (AuraJWTAudience aura-data) ---------------------------------------
sub aud_call {
    my ($vhost, @aud) = @_;
    Apache::TestRequest::module($vhost);
    my $t = mint(qw(--alg RS256 --kid r1 --exp-in 300 --sub aud-user
                    --project proj-a --key), $rsa,
                 '--claim', 'https://aura.test/project="proj-a"',
                 map { ('--aud', $_) } @aud);
    return GET('/v1/functions/aud', apikey => ANON_KEY,
               Authorization => "Bearer $t")->code;
}
is(aud_call('aura_aud', 'aura-data'), 200, 'aud "aura-data": 200');
is(aud_call('aura_aud', 'aura-data', 'aura-data'), 200,
   'aud ["aura-data","aura-data"]: 200');
is(aud_call('aura_aud', 'aura-data', 'other-api'), 401,
   'aud ["aura-data","other-api"]: 401 (an untrusted extra audience)');
is(aud_call('aura_aud', 'other-api', 'aura-data'), 401,
   'aud ["other-api","aura-data"]: 401');
is(aud_call('aura_aud', 'other-api'), 401, 'aud "other-api": 401');
is(aud_call('aura_aud_any', 'aura-data', 'other-api'), 200,
   'AuraJWTAudienceMatch any: ["aura-data","other-api"]: 200');
is(aud_call('aura_aud_any', 'other-api', 'x'), 401,
   'AuraJWTAudienceMatch any: ["other-api","x"]: 401');
is(aud_call('aura_aud', ()), 401, 'no aud at all: 401');

like(error_log_since($log0), qr/AURA00053: bearer token refused: token audience not accepted/,
     'audience refusals are logged');
unlike(error_log_since($log0), qr/exit signal|Segmentation fault/,
       'no child died');
