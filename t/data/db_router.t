# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The /v1/db router, row by row of DESIGN.md section 3, asserted on WHICH
# upstream received each request: the NATS example service (its
# execution count by request id) or a dedicated PostgREST played by a
# test HTTP upstream (what it recorded).  The dedicated projects are
# inserted while httpd runs: no restart, no reload.
# - admin routes, PUT, MongoDB and shared projects: NATS;
# - a dedicated project with a target: straight to it, path rewritten;
# - a dedicated project without one: 503 target-unresolved, nothing sent;
# - 200 requests to a target that appeared at run time ride a handful of
#   pooled connections;
# - PostgREST A dead: A's own breaker opens while project B on PostgREST
#   B keeps working; idle targets leave the breaker table (swept every
#   second in the test config), an open one stays.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempdir);
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET PUT);
use Aura::Test qw(problem_ok new_reqid exec_count psql ANON_KEY free_port
                  wait_until);
use Aura::Load qw(health_json);
use Aura::Upstream qw(upstream_stats upstream_log upstream_start
                      upstream_stop);

plan tests => 39;

Apache::TestRequest::module('aura_data');

my $dir = tempdir(CLEANUP => 1);
my $pg = upstream_start('pgrst-b', $dir);
END { upstream_stop($pg) }

my $DED = 'ak_test_dedicated_0123456789abcdef';
my $NONE = 'ak_test_notarget_0123456789abcdef';
my $MONGO = 'ak_test_mongo_0123456789abcdef';
sub add_project {
    my ($id, $target, $key) = @_;
    my $t = defined $target ? "'$target'" : 'null';
    psql(qq{INSERT INTO projects (id, org_id, name, plan, db_kind, topology,
                                  postgrest_target)
            VALUES ('$id', 'org-test', '$id', 'pro', 'postgres',
                    'dedicated', $t);
            INSERT INTO api_keys (project_id, key_hash, role)
            VALUES ('$id', encode(sha256('$key'::bytea), 'hex'), 'anon')});
}
add_project('proj-ded-b', "http://127.0.0.1:$pg->{port}", $DED);
add_project('proj-ded-none', undef, $NONE);
# Nothing listens on A's port.
my $DEAD = 'ak_test_deadtarget_0123456789abcdef';
my $dead_target = 'http://127.0.0.1:' . free_port();
add_project('proj-ded-a', $dead_target, $DEAD);
END {
    psql(q{DELETE FROM api_keys WHERE project_id IN
               ('proj-ded-a', 'proj-ded-b', 'proj-ded-none');
           DELETE FROM projects WHERE id IN
               ('proj-ded-a', 'proj-ded-b', 'proj-ded-none')});
}

# Sends one request; returns (response, NATS executions, requests the
# dedicated upstream recorded).
sub route {
    my ($method, $path, $key) = @_;
    my $id = new_reqid('db');
    my $before = upstream_stats($pg->{port})->{log_lines};
    my $res = $method eq 'PUT'
        ? PUT($path, apikey => $key, 'X-Request-Id' => $id, content => '{}')
        : GET($path, apikey => $key, 'X-Request-Id' => $id);
    my @got = @{ upstream_log($before, $pg->{port}) };
    return ($res, exec_count($id), \@got);
}

for my $row (
    [ 'an admin route', 'GET', '/v1/db/schema', $DED ],
    [ 'PUT', 'PUT', '/v1/db/todos?id=eq.1', $DED ],
    [ 'a MongoDB project', 'GET', '/v1/db/todos', $MONGO ],
    [ 'a shared Postgres project', 'GET', '/v1/db/todos', ANON_KEY ],
    [ 'raw SQL of a dedicated project', 'GET', '/v1/db/sql', $DED ],
) {
    my ($name, $method, $path, $key) = @$row;
    my ($res, $runs, $got) = route($method, $path, $key);
    is($runs, 1, "$name: to aura-db over NATS");
    is(scalar @$got, 0, "$name: not to the PostgREST");
}

my ($res, $runs, $got) = route('GET', '/v1/db/todos?select=id', $DED);
is($res->code, 200, 'a dedicated project: answered');
is($runs, 0, 'not over NATS');
is(scalar @$got, 1, 'by its PostgREST');
is($got->[0]{path} // '', '/todos?select=id',
   'path rewritten to PostgREST\'s');
is($got->[0]{headers}{'aura-project'} // '', 'proj-ded-b',
   'with the project');
ok(!exists $got->[0]{headers}{apikey}, 'and without the key');

my $main0 = upstream_stats()->{log_lines};
($res, $runs, $got) = route('GET', '/v1/db/todos', $NONE);
problem_ok($res, 503, 'target-unresolved',
           'a dedicated project without a target');
is($runs + @$got + upstream_stats()->{log_lines} - $main0, 0,
   'sent nowhere: no shared fallback');
is($res->header('Retry-After'), '5', 'Retry-After');

# Pooled although the target came from Postgres at run time.
my $c0 = upstream_stats($pg->{port})->{connections};
my @codes = map { GET("/v1/db/items?id=eq.$_", apikey => $DED)->code }
                1 .. 200;
my $conns = upstream_stats($pg->{port})->{connections} - $c0;
is(scalar(grep { $_ == 200 } @codes), 200, '200 requests to it served');
ok($conns <= 4, "over $conns connection(s): pooled, not one each");

# --- one dead PostgREST: its breaker, not the others' ---------------------
my $base = 'http://' . Apache::TestRequest::hostport();
my $b_target = "http://127.0.0.1:$pg->{port}";
sub target_state {
    my $t = health_json($base)->{breakers}{targets}{$_[0]};
    return $t ? $t->{state} : 'absent';
}
problem_ok(GET('/v1/db/todos', apikey => $DEAD), 503, 'upstream-error',
           'PostgREST A refuses connections');
is(GET('/v1/db/todos', apikey => $DEAD)->code, 503, 'twice');
is(target_state($dead_target), 'open', "A's breaker opened");
problem_ok(GET('/v1/db/todos', apikey => $DEAD), 503, 'breaker-open',
           'A is not called for now');
is(GET('/v1/db/todos', apikey => $DED)->code, 200,
   'project B on PostgREST B is served meanwhile');
is(target_state($b_target), 'closed', "B's breaker is closed");
is(health_json($base)->{breakers}{db}{state}, 'closed',
   "the db service's breaker is not involved");

# B idle: swept; A open: kept.
ok(wait_until(6, sub { target_state($b_target) eq 'absent' }),
   'an idle target leaves the table');
is(target_state($dead_target), 'open', 'an open one stays');
