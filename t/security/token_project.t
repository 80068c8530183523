# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# A data-plane bearer token belongs to the API key's project: it must
# name that project in the claim AuraTokenProjectClaim says (aura_project
# by default).  A user of proj-a sending their token with proj-mongo's
# key is a 401, and the service runs nothing; a token without the claim
# is a 401; the claim's name is configurable per VirtualHost and
# Location, and "off" restores the behaviour before 0.5.0.  Console
# tokens (management plane) carry no project claim and need none.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Aura::Test qw(mint console_token json_body new_reqid exec_count
                  problem_ok error_log_size error_log_since ANON_KEY);

my $MONGO = 'ak_test_mongo_0123456789abcdef';     # proj-mongo
my $SERVICE = 'ak_test_service_0123456789abcdef'; # proj-a, service_role
my $key = "$ENV{AURA_TEST_JWT_DIR}/rsa.key";

sub token {
    my ($sub, @claims) = @_;
    return mint(qw(--alg RS256 --kid r1 --exp-in 300 --sub), $sub,
                '--key', $key, @claims);
}

# GET $path on the current VirtualHost with $apikey and $token; returns
# (response, what the example service received, its execution count).
sub call {
    my ($path, $apikey, $token) = @_;
    my $id = new_reqid('tokproj');
    my $res = GET($path, apikey => $apikey, 'X-Request-Id' => $id,
                  'X-Example-Headers' => 'json',
                  Authorization => "Bearer $token");
    return ($res, json_body($res) || {}, exec_count($id));
}

sub accepted {
    my ($name, $path, $apikey, $token, $project, $sub) = @_;
    my ($res, $h, $n) = call($path, $apikey, $token);
    is($res->code, 200, "$name: 200");
    is_deeply($h->{'Aura-Project'}, [$project], "$name: Aura-Project $project");
    is_deeply($h->{'Aura-Role'}, ['authenticated'], "$name: authenticated");
    is_deeply($h->{'Aura-Actor'}, [$sub], "$name: the sub is the actor");
    ok(!exists $h->{authorization},
       "$name: the token stays at the gateway (AuraForwardToken Off)");
    is($n, 1, "$name: the service ran once");
}

sub refused {
    my ($name, $path, $apikey, $token) = @_;
    my ($res, $h, $n) = call($path, $apikey, $token);
    problem_ok($res, 401, 'invalid-token', $name);
    like(json_body($res)->{detail} // '', qr/project/,
         "$name: the detail names the project");
    is($n, 0, "$name: the service ran nothing");
}

plan tests => 6 * 7 + 6 * 10 + 3;

my $log0 = error_log_size();
Apache::TestRequest::module('aura_data');
my $a_user = token('alice', '--project', 'proj-a');
my $m_user = token('mallory', '--project', 'proj-mongo');

accepted('proj-a token, proj-a key', '/v1/functions/p', ANON_KEY, $a_user,
         'proj-a', 'alice');
accepted('proj-mongo token, proj-mongo key', '/v1/functions/p', $MONGO,
         $m_user, 'proj-mongo', 'mallory');
refused("proj-a's user with proj-mongo's key", '/v1/functions/p', $MONGO,
        $a_user);
refused("proj-mongo's user with proj-a's key", '/v1/functions/p', ANON_KEY,
        $m_user);
refused("proj-mongo's user with proj-a's service_role key",
        '/v1/functions/p', $SERVICE, $m_user);
refused('no project claim', '/v1/functions/p', ANON_KEY, token('nobody'));
refused('the project in an array', '/v1/functions/p', ANON_KEY,
        token('arr', '--claim', 'aura_project=["proj-a"]'));
refused('the project as a prefix', '/v1/functions/p', ANON_KEY,
        token('pre', '--claim', 'aura_project="proj-"'));
refused('the project under another claim name', '/v1/functions/p',
        ANON_KEY, token('oth', '--claim', 'project="proj-a"'));

# AuraTokenProjectClaim off in a Location: as before 0.5.0.
accepted('off: a token without the claim', '/v1/test/noprojclaim/p',
         ANON_KEY, token('legacy'), 'proj-a', 'legacy');
accepted('off: proj-a\'s user with proj-mongo\'s key',
         '/v1/test/noprojclaim/p', $MONGO, $a_user, 'proj-mongo', 'alice');

# Another claim name in a Location.
accepted('claim tenant', '/v1/test/tenantclaim/p', ANON_KEY,
         token('ten', '--claim', 'tenant="proj-a"'), 'proj-a', 'ten');
refused('claim tenant: aura_project is not read', '/v1/test/tenantclaim/p',
        ANON_KEY, $a_user);

# Set for a VirtualHost (with its own audience), overridden by a Location.
Apache::TestRequest::module('aura_aud_any');
my @aud = ('--aud', 'aura-data');
accepted('VirtualHost claim name', '/v1/functions/p', ANON_KEY,
         token('vh', @aud, '--claim', 'https://aura.test/project="proj-a"'),
         'proj-a', 'vh');
refused('VirtualHost claim name: aura_project is not read',
        '/v1/functions/p', ANON_KEY, token('vh2', @aud, '--project', 'proj-a'));
accepted('a Location back to aura_project', '/v1/functions/default-claim/p',
         ANON_KEY, token('loc', @aud, '--project', 'proj-a'), 'proj-a',
         'loc');
refused('a Location back to aura_project: the VirtualHost\'s is not read',
        '/v1/functions/default-claim/p', ANON_KEY,
        token('loc2', @aud, '--claim', 'https://aura.test/project="proj-a"'));

# The management plane: console tokens carry no project claim.
Apache::TestRequest::module('aura_mgmt');
my $res = GET('/v1/functions/p', 'X-Project-Id' => 'proj-a',
              Authorization => 'Bearer ' . console_token('user-owner'));
is($res->code, 200, 'management plane: a console token needs no project '
   . 'claim');
like(error_log_since($log0),
     qr/AURA00053: bearer token refused: token not for the API key's project/,
     'refusals are logged with their reason');

unlike(error_log_since($log0), qr/exit signal|Segmentation fault/,
       'no child died');
