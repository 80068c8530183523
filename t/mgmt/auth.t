# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The management plane fails closed: a console token (aud exactly
# aurabase-control, the console's own keys) and a role looked up in
# Postgres on every request from the subject's membership in the
# organization concerned; never from the token, never cached, never a
# default when Postgres is down.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET POST);
use Aura::Test qw(json_body new_reqid exec_count problem_ok psql pg_stop
                  pg_start wait_until console_token mint ANON_KEY);

my $dir = $ENV{AURA_TEST_JWT_DIR};
my $owner = console_token('user-owner');
my $admin = console_token('user-admin');
my $member = console_token('user-member');

my @bad_tokens = (
    [ 'aud "authenticated"',
      mint(qw(--alg RS256 --kid c1 --aud authenticated --sub user-owner
              --exp-in 300 --key), "$dir/console.key") ],
    [ 'aud array with an extra member',
      mint(qw(--alg RS256 --kid c1 --aud aurabase-control --aud other
              --sub user-owner --exp-in 300 --key), "$dir/console.key") ],
    [ 'no aud',
      mint(qw(--alg RS256 --kid c1 --sub user-owner --exp-in 300 --key),
           "$dir/console.key") ],
    [ 'signed with the data plane\'s key',
      mint(qw(--alg RS256 --kid r1 --aud aurabase-control --sub user-owner
              --exp-in 300 --key), "$dir/rsa.key") ],
    [ 'expired',
      mint(qw(--alg RS256 --kid c1 --aud aurabase-control --sub user-owner
              --exp-in -60 --key), "$dir/console.key") ],
    [ 'no sub',
      mint(qw(--alg RS256 --kid c1 --aud aurabase-control --exp-in 300
              --key), "$dir/console.key") ],
);

plan tests => 82;

Apache::TestRequest::module('aura_mgmt');

sub call {
    my ($token, $path, @more) = @_;
    my %h = ('X-Example-Headers' => 'json', 'X-Project-Id' => 'proj-a',
             (defined $token ? (Authorization => "Bearer $token") : ()),
             @more);
    my $res = GET($path || '/v1/functions/m', %h);
    return ($res, json_body($res) || {});
}

for my $b (@bad_tokens) {
    my ($name, $token) = @$b;
    my $id = new_reqid('mgmtbad');
    my ($res) = call($token, undef, 'X-Request-Id' => $id);
    problem_ok($res, 401, 'invalid-token', $name);
    is(exec_count($id), 0, "$name: nothing forwarded");
}

my $id = new_reqid('notoken');
problem_ok((call(undef, undef, 'X-Request-Id' => $id))[0], 401,
           'invalid-token', 'no token');
problem_ok((call(undef, undef, apikey => ANON_KEY))[0], 401, 'invalid-token',
           'an API key is no credential here');
my ($res, $h) = call(mint(qw(--alg RS256 --kid c1 --aud aurabase-control
                              --sub user-member --exp-in 300 --claim),
                           'aud=["aurabase-control"]', '--key',
                           "$dir/console.key"));
is($res->code, 200, 'aud as an array whose only member is aurabase-control');
is(exec_count($id), 0, 'the refused request was never forwarded');

# The role comes from the membership, never from the token.
($res, $h) = call(mint(qw(--alg RS256 --kid c1 --aud aurabase-control
                          --sub user-member --exp-in 300 --claim),
                       'role="owner"', '--key', "$dir/console.key"),
                  undef, apikey => ANON_KEY, 'Aura-Role' => 'owner');
is($res->code, 200, 'member on a shared route: 200');
is_deeply($h->{'Aura-Role'}, ['member'],
          'role member from Postgres, not "owner" from the token or a header');
is_deeply($h->{'Aura-Org'}, ['org-test'], 'Aura-Org');
is_deeply($h->{'Aura-Project'}, ['proj-a'], 'Aura-Project from X-Project-Id');
is_deeply($h->{'Aura-Actor'}, ['user-member'], 'Aura-Actor is the sub');
is_deeply($h->{'Aura-Plane'}, ['management'], 'Aura-Plane');
ok(!exists $h->{apikey} && !exists $h->{'Aura-Key-Role'},
   'no API key and no key role on the management plane');

problem_ok(GET('/v1/functions/m', Authorization => "Bearer $member"),
           400, 'invalid-request', 'shared route without X-Project-Id');

$id = new_reqid('stranger');
problem_ok((call(console_token('user-stranger'), undef,
                 'X-Request-Id' => $id))[0],
           403, 'forbidden', 'not a member');
is(exec_count($id), 0, 'not a member: nothing forwarded');

problem_ok((call($owner, undef, 'X-Project-Id' => 'proj-nowhere'))[0],
           403, 'forbidden', 'an unknown project looks like no membership');
is((call($owner, undef, 'X-Project-Id' => '../etc'))[0]->code, 400,
   'a malformed project id: 400');

# Permissions per Location.
is((call($member, '/v1/projects/proj-a/logs'))[0]->code, 200,
   'member reads the logs');
problem_ok((call($member, '/v1/projects/proj-a/keys/rotate'))[0], 403,
           'forbidden', 'member rotates keys');
is((call($admin, '/v1/projects/proj-a/keys/rotate'))[0]->code, 200,
   'admin rotates keys');
($res, $h) = call($admin, '/v1/orgs/org-test/projects');
is($res->code, 200, 'admin creates a project in the org');
is_deeply($h->{'Aura-Role'}, ['admin'], 'with role admin');
is((call($member, '/v1/orgs/org-test/projects'))[0]->code, 403,
   'member creates a project: 403');
is((call($owner, '/v1/orgs/org-test/projects'))[0]->code, 200,
   'owner creates a project');

# A member removed mid-test is refused on the very next request.
psql(q{INSERT INTO memberships (org_id, user_id, role)
       VALUES ('org-test', 'user-temp', 'member')});
my $temp = console_token('user-temp');
is((call($temp))[0]->code, 200, 'temporary member: 200');
psql(q{DELETE FROM memberships WHERE user_id = 'user-temp'});
problem_ok((call($temp))[0], 403, 'forbidden',
           'removed from the org: refused on the next request');

# Postgres down: 503, never a default role, nothing forwarded.
pg_stop();
my $started = 0;
END { pg_start() unless $started }
$id = new_reqid('mgmtpg');
problem_ok((call($owner, undef, 'X-Request-Id' => $id))[0], 503,
           'store-unavailable', 'Postgres stopped');
is(exec_count($id), 0, 'Postgres stopped: the service saw nothing');
pg_start();
$started = 1;
ok(wait_until(15, sub { (call($owner))[0]->code == 200 }),
   'Postgres back: served again');
