# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Every error the gateway itself produces, stage by stage on both planes:
# each is application/problem+json (RFC 9457) whose type is one of
# DESIGN.md section 8's, with the request id of the response and the
# status, with the CORS and security headers of every response, and
# never a secret (the key or token the request used) in the body.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Socket::INET;
use JSON::PP;
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET POST);
use Time::HiRes qw(time);
use Aura::Test qw(mint console_token psql pg_stop pg_start new_reqid
                  ANON_KEY raw_connect);

my %TYPES = map { $_ => 1 } qw(invalid-request payload-too-large
    ip-rate-limit missing-key invalid-key key-not-allowed-in-query
    invalid-token forbidden actor-quota breaker-open no-upstream
    upstream-error upstream-timeout target-unresolved store-unavailable);

my $UNKNOWN = 'ak_test_nowhere_0123456789abcdef';
my $NOTARGET = 'ak_test_problems_notarget_0123456789';
my $tag = "$$-" . int(time);
my $user_token = mint(qw(--alg RS256 --kid r1 --exp-in 300 --project proj-a --sub),
                      "problems-$tag", '--key',
                      "$ENV{AURA_TEST_JWT_DIR}/rsa.key");
my $member = console_token('user-member');
my $owner = console_token('user-owner');

psql(qq{INSERT INTO projects (id, org_id, name, plan, db_kind, topology)
        VALUES ('proj-problems', 'org-test', 'p', 'pro', 'postgres',
                'dedicated');
        INSERT INTO api_keys (project_id, key_hash, role)
        VALUES ('proj-problems', encode(sha256('$NOTARGET'::bytea), 'hex'),
                'anon')});
my $pg_down = 0;
END {
    pg_start() if $pg_down;
    psql(q{DELETE FROM api_keys WHERE project_id = 'proj-problems';
           DELETE FROM projects WHERE id = 'proj-problems'});
}

sub on { Apache::TestRequest::module($_[0]); }

# [ name, status, type, sub returning the response, secrets ]
my @stages = (
    [ 'no key', 401, 'missing-key',
      sub { on('aura_data'); GET('/v1/functions/x') } ],
    [ 'an unknown key', 401, 'invalid-key',
      sub { on('aura_data'); GET('/v1/functions/x', apikey => $UNKNOWN) },
      $UNKNOWN ],
    [ 'a key in the URL', 401, 'key-not-allowed-in-query',
      sub { on('aura_data'); GET('/v1/functions/x?apikey=' . ANON_KEY) },
      ANON_KEY ],
    [ 'a bad token', 401, 'invalid-token',
      sub { on('aura_data'); GET('/v1/functions/x', apikey => ANON_KEY,
                                 Authorization => "Bearer $user_token.x") },
      ANON_KEY, $user_token ],
    [ 'management: no project', 400, 'invalid-request',
      sub { on('aura_mgmt'); GET('/v1/functions/x',
                                 Authorization => "Bearer $owner") },
      $owner ],
    [ 'management: not enough role', 403, 'forbidden',
      sub { on('aura_mgmt');
            POST('/v1/projects/proj-a/keys/rotate',
                 Authorization => "Bearer $member") }, $member ],
    [ 'management: no console token', 401, 'invalid-token',
      sub { on('aura_mgmt'); GET('/v1/functions/x', 'X-Project-Id' => 'proj-a') } ],
    [ 'a body NATS cannot carry', 413, 'payload-too-large',
      sub { on('aura_data'); big_body() } ],
    [ 'the per-address rate', 429, 'ip-rate-limit',
      sub { on('aura_limits');
            my $r;
            for (1 .. 8) {
                $r = GET('/v1/limit/problems/x', apikey => ANON_KEY);
                last if $r->code == 429;
            }
            $r } ],
    [ 'the actor quota', 429, 'actor-quota',
      sub { on('aura_limits');
            my $r;
            for (1 .. 8) {
                $r = GET('/v1/limit/free/x', apikey => ANON_KEY,
                         Authorization => "Bearer $user_token");
                last if $r->code == 429;
            }
            $r }, $user_token ],
    [ 'a malformed reply', 502, 'upstream-error',
      sub { on('aura_data'); GET('/v1/functions/x', apikey => ANON_KEY,
                                 'X-Example-Malformed' => 'missing-status') },
      ANON_KEY ],
    [ 'no responders', 503, 'no-upstream',
      sub { on('aura_data'); GET('/v1/test/nobody/x', apikey => ANON_KEY) } ],
    [ 'an HTTP upstream refusing connections', 503, 'upstream-error',
      sub { on('aura_data'); GET('/v1/test/deadhttp/x', apikey => ANON_KEY) } ],
    [ 'an open breaker', 503, 'breaker-open',
      sub { on('aura_limits');
            GET('/v1/brk/fail/x', 'X-Example-Status' => 503) for 1 .. 3;
            GET('/v1/brk/fail/x') } ],
    [ 'a dedicated project without a target', 503, 'target-unresolved',
      sub { on('aura_data'); GET('/v1/db/todos', apikey => $NOTARGET) },
      $NOTARGET ],
    [ 'the budget spent', 504, 'upstream-timeout',
      sub { on('aura_data'); GET('/v1/test/slow/x', apikey => ANON_KEY,
                                 'X-Example-Delay-Ms' => 1500) } ],
    [ 'the key store down', 503, 'store-unavailable',
      sub { on('aura_data'); pg_stop(); $pg_down = 1;
            my $r = GET('/v1/functions/x',
                        apikey => 'ak_test_never_seen_0123456789abcdef');
            pg_start(); $pg_down = 0;
            $r } ],
);

plan tests => 9 * @stages + 1;

# A declared 2 MiB body on a NATS route: refused before it is sent.
sub big_body {
    my $s = raw_connect(PeerAddr => Apache::TestRequest::hostport(),
                        Timeout => 10) or die "connect: $!";
    print $s "POST /v1/functions/x HTTP/1.1\r\nHost: localhost\r\n"
             . "apikey: " . ANON_KEY . "\r\nContent-Length: 2097152\r\n"
             . "Connection: close\r\n\r\n";
    my $raw = do { local $/; <$s> } // '';
    close $s;
    return HTTP::Response->parse($raw);
}

my %seen;
for my $st (@stages) {
    my ($name, $status, $type, $call, @secrets) = @$st;
    my $res = $call->();
    my $body = $res->content // '';
    my $p = eval { decode_json($body) } || {};
    is($res->code, $status, "$name: $status");
    like($res->header('Content-Type') // '', qr{^application/problem\+json},
         "$name: problem+json");
    is($p->{type}, "/problems/$type", "$name: type $type");
    ok($TYPES{ ($p->{type} // '') =~ s{^/problems/}{}r },
       "$name: a type of DESIGN.md section 8");
    ok(defined $p->{request_id}
       && $p->{request_id} eq ($res->header('X-Request-Id') // '-'),
       "$name: the request id, in body and header");
    is($p->{status}, $status, "$name: status in the body");
    ok($res->header('X-Content-Type-Options')
       && $res->header('Content-Security-Policy'),
       "$name: security headers");
    # CORS: "*" on the data planes; the management plane answers CORS
    # only to listed origins, and these requests send none.
    if ($name =~ /^management/) {
        ok(!defined $res->header('Access-Control-Allow-Origin'),
           "$name: no CORS grant without a listed Origin");
    }
    else {
        is($res->header('Access-Control-Allow-Origin'), '*',
           "$name: CORS header");
    }
    ok(!grep({ length($_) > 8 && index($body, $_) >= 0 } @secrets),
       "$name: no secret in the body");
    $seen{$type}++;
}
is_deeply([sort keys %seen], [sort keys %TYPES],
          'every problem type of DESIGN.md section 8 was produced');
