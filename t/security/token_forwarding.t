# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Issue #29, point 2: tokens stay at the gateway.  A service behind the
# management plane once received the console token of whoever called
# it, and replaying an owner's token to POST .../keys/rotate got 200.
# Now:
# - management plane: no service, NATS or HTTP upstream, receives the
#   console token (not even under AuraForwardToken On) nor a Cookie; it
#   has Aura-Actor, Aura-Role and Aura-Org, and what it received holds
#   nothing to replay (401);
# - data plane: the user's verified token goes on only where the
#   Location says AuraForwardToken On (nested Locations inherit it, Off
#   turns it off again), on both paths; by default only the /v1/db
#   router's Locations forward it, so aura-db and a dedicated PostgREST
#   (the suite's HTTP upstream playing one) still receive it, and /v1/db
#   works;
# - no module can put a token back where it must not travel (mod_headers
#   RequestHeader set Authorization, on both paths).
# The example service echoes the headers it received
# (x-example-headers: json); the HTTP upstream records the raw bytes.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET POST);
use Aura::Test qw(mint console_token json_body new_reqid exec_count
                  problem_ok psql ANON_KEY);
use Aura::Upstream qw(upstream_stats upstream_log);

plan tests => 14 + 8 + 6 + 8 + 3 + 10 + 8 + 6 + 2;

my $rsa = "$ENV{AURA_TEST_JWT_DIR}/rsa.key";
my $owner = console_token('user-owner');
my $user = mint(qw(--alg RS256 --kid r1 --exp-in 300 --sub fwd-user
                   --project proj-a --key), $rsa);
my $COOKIE = 'console_session=s3cr3t-session';

# A NATS route: (response, the headers the service received, executions).
sub nats_call {
    my ($vhost, $path, @h) = @_;
    Apache::TestRequest::module($vhost);
    my $id = new_reqid('fwd');
    my $res = GET($path, 'X-Example-Headers' => 'json',
                  'X-Request-Id' => $id, @h);
    return ($res, json_body($res) || {}, exec_count($id));
}

# An HTTP route: (response, what the upstream recorded of the request).
sub http_call {
    my ($vhost, $path, @h) = @_;
    Apache::TestRequest::module($vhost);
    my $since = upstream_stats()->{log_lines};
    my $id = new_reqid('fwdh');
    my $res = GET($path, 'X-Request-Id' => $id, @h);
    my ($got) = grep { ($_->{headers}{'aura-request-id'} // '') eq $id }
                @{ upstream_log($since) };
    return ($res, $got || { headers => {}, raw_head => '' });
}

# --- management plane: nothing of the console's credentials travels -------
my @console = (Authorization => "Bearer $owner", 'X-Project-Id' => 'proj-a',
               Cookie => $COOKIE);
my %seen;       # what each service saw as Authorization, to replay
for my $r ([ 'a shared route', '/v1/functions/fwd' ],
           [ 'a management route', '/v1/projects/proj-a/logs' ]) {
    my ($name, $path) = @$r;
    my ($res, $h, $runs) = nats_call('aura_mgmt', $path, @console);
    is($res->code, 200, "management, NATS, $name: 200");
    is($runs, 1, "management, NATS, $name: the service ran");
    ok(!exists $h->{authorization},
       "management, NATS, $name: no Authorization reached the service");
    ok(index($res->content, $owner) < 0,
       "management, NATS, $name: the token is nowhere in what it got");
    ok(!exists $h->{cookie}, "management, NATS, $name: nor the Cookie");
    is_deeply([ @{$h}{qw(Aura-Actor Aura-Role Aura-Org)} ],
              [ ['user-owner'], ['owner'], ['org-test'] ],
              "management, NATS, $name: the identity headers instead");
    $seen{"nats $name"} = ($h->{authorization} || [])->[0];
}
{
    # AuraForwardToken On changes nothing on the management plane.
    my ($res, $h) = nats_call('aura_mgmt', '/v1/test/fwdtoken/x', @console);
    is($res->code, 200, 'management, AuraForwardToken On: 200');
    ok(!exists $h->{authorization},
       'management, AuraForwardToken On: still no Authorization');
}
for my $r ([ 'a shared route', '/v1/storage/fwd' ],
           [ 'AuraForwardToken On', '/v1/test/fwdtokenhttp/fwd' ]) {
    my ($name, $path) = @$r;
    my ($res, $got) = http_call('aura_mgmt', $path, @console);
    is($res->code, 200, "management, HTTP, $name: 200");
    ok(!exists $got->{headers}{authorization},
       "management, HTTP, $name: no Authorization reached the upstream");
    ok(index($got->{raw_head}, $owner) < 0 && $got->{raw_head} ne '',
       "management, HTTP, $name: the token is nowhere in its bytes");
    ok($got->{raw_head} !~ /^cookie:/mi,
       "management, HTTP, $name: nor the Cookie");
    $seen{"http $name"} = $got->{headers}{authorization};
}
# What a service received, replayed to the key rotation: nothing to
# replay, so nothing but a 401 (the review's replay got 200).
{
    my ($replay) = grep { defined } values %seen;
    Apache::TestRequest::module('aura_mgmt');
    my $id = new_reqid('replay');
    my $res = POST('/v1/projects/proj-a/keys/rotate', 'X-Request-Id' => $id,
                   (defined $replay ? (Authorization => $replay) : ()),
                   content => '');
    problem_ok($res, 401, 'invalid-token',
               'a service replays what it received to keys/rotate');
    is(exec_count($id), 0, 'the rotation never reached aura-control');
    ok(!defined $replay, 'no service received a token at all');
}

# --- data plane: a per-Location choice ------------------------------------
my @user = (apikey => ANON_KEY, Authorization => "Bearer $user");
for my $r ([ 'default (a service route)', '/v1/functions/fwd', 0 ],
           [ 'AuraForwardToken On', '/v1/test/fwdtoken/x', 1 ],
           [ 'a nested Location inherits On', '/v1/test/fwdtoken/inner/x',
             1 ],
           [ 'a nested AuraForwardToken Off', '/v1/test/fwdtoken/off/x',
             0 ]) {
    my ($name, $path, $fwd) = @$r;
    my ($res, $h) = nats_call('aura_data', $path, @user);
    is($res->code, 200, "data, NATS, $name: 200");
    is_deeply($h->{authorization}, $fwd ? ["Bearer $user"] : undef,
              "data, NATS, $name: "
              . ($fwd ? 'the verified token crosses' : 'no token'));
}
{
    my ($res, $h) = nats_call('aura_data', '/v1/functions/fwd', @user);
    is_deeply([ @{$h}{qw(Aura-Actor Aura-Role)} ],
              [ ['fwd-user'], ['authenticated'] ],
              'data, without the token: Aura-Actor and Aura-Role say who');
    ($res, $h) = nats_call('aura_data', '/v1/functions/fwd',
                           apikey => ANON_KEY, Cookie => $COOKIE);
    is_deeply($h->{cookie}, [$COOKIE],
              'data: a Cookie is client input and passes as before');
    ($res, $h) = nats_call('aura_data', '/v1/test/fwdtoken/x',
                           apikey => ANON_KEY);
    ok(!exists $h->{authorization},
       'data, AuraForwardToken On, no token sent: none forwarded');
}
for my $r ([ 'default', '/v1/storage/fwd', 0 ],
           [ 'AuraForwardToken On', '/v1/test/fwdtokenhttp/fwd', 1 ],
           [ 'AuraForwardToken Off', '/v1/test/nofwdhttp/fwd', 0 ]) {
    my ($name, $path, $fwd) = @$r;
    my ($res, $got) = http_call('aura_data', $path, @user);
    is($res->code, 200, "data, HTTP, $name: 200");
    is($got->{headers}{authorization}, $fwd ? "Bearer $user" : undef,
       "data, HTTP, $name: "
       . ($fwd ? 'the verified token crosses' : 'no token'));
    ok($fwd || index($got->{raw_head}, $user) < 0,
       "data, HTTP, $name: the bytes agree");
}
is((http_call('aura_data', '/v1/storage/fwd', apikey => ANON_KEY))[0]->code,
   200, 'data, HTTP, no token at all: 200');

# --- /v1/db keeps what it needs: aura-db and a dedicated PostgREST -------
{
    my ($res, $h, $runs) = nats_call('aura_data', '/v1/db/todos', @user);
    is($res->code, 200, '/v1/db, shared project: 200');
    is($runs, 1, '/v1/db, shared project: by aura-db');
    is_deeply($h->{authorization}, ["Bearer $user"],
              '/v1/db: aura-db receives the user\'s token (the default '
              . 'under AuraDBRouter On)');
}
{
    # The suite's own HTTP upstream plays the project's PostgREST (no
    # upstream of its own to start and wait for).
    my $port = $ENV{AURA_TEST_HTTP_PORT};
    my $project = "proj-fwd-$$";
    my $key = "ak_test_fwd_${$}_0123456789abcdef";
    psql(qq{INSERT INTO projects (id, org_id, name, plan, db_kind, topology,
                                  postgrest_target)
            VALUES ('$project', 'org-test', '$project', 'pro', 'postgres',
                    'dedicated', 'http://127.0.0.1:$port');
            INSERT INTO api_keys (project_id, key_hash, role)
            VALUES ('$project', encode(sha256('$key'::bytea), 'hex'),
                    'anon')});
    my $tok = mint(qw(--alg RS256 --kid r1 --exp-in 300 --sub pgrst-user
                      --project), $project, '--key', $rsa);
    Apache::TestRequest::module('aura_data');
    my $since = upstream_stats()->{log_lines};
    my $id = new_reqid('pgrst');
    my $res = GET('/v1/db/todos?select=id', apikey => $key,
                  'X-Request-Id' => $id, Authorization => "Bearer $tok");
    my @got = grep { ($_->{headers}{'aura-request-id'} // '') eq $id }
              @{ upstream_log($since) };
    psql(qq{DELETE FROM api_keys WHERE project_id = '$project';
            DELETE FROM projects WHERE id = '$project'});
    is($res->code, 200, '/v1/db, dedicated project: 200');
    is(scalar @got, 1, '/v1/db, dedicated project: by its PostgREST');
    is(($got[0] || {})->{path}, '/todos?select=id', 'on PostgREST\'s path');
    is(($got[0] || {})->{headers}{authorization}, "Bearer $tok",
       'the PostgREST receives the token it takes the role from');
    is(($got[0] || {})->{headers}{'aura-role'}, 'authenticated',
       'as authenticated');
}

# --- no module puts it back ------------------------------------------------
# mod_headers sets Authorization on these Locations (t/conf/extra.conf.in)
# after the gateway verified and removed the token.
{
    my ($res, $h) = nats_call('aura_data', '/v1/test/readd/x', @user);
    is($res->code, 200, 'data, NATS, a module re-adds Authorization: 200');
    ok(!exists $h->{authorization}, 'data, NATS: it does not reach the '
       . 'service');
    my $got;
    ($res, $got) = http_call('aura_data', '/v1/test/readdhttp/x', @user);
    is($res->code, 200, 'data, HTTP, a module re-adds Authorization: 200');
    ok(!exists $got->{headers}{authorization},
       'data, HTTP: it does not reach the upstream');
    ($res, $h) = nats_call('aura_mgmt', '/v1/test/readd/x', @console);
    is($res->code, 200, 'management, NATS, a module re-adds it: 200');
    ok(!exists $h->{authorization}, 'management, NATS: not forwarded');
}
unlike(Aura::Test::error_log_since(0), qr/exit signal|Segmentation fault/,
       'no child died');
ok(1, 'done');
