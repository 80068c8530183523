# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# A user is never a key's actor (issue #29 point 6).  A key's actor is
# "key:" and 16 hex digits of its SHA-256 (Aura-Actor, the quota bucket,
# the stream budget); a user's is the token's sub.  A token whose sub
# starts with "key:" (any case) is refused, 401 invalid-token, on both
# planes: it would otherwise get the key's Aura-Actor and spend the key's
# quota in Redis.  On /v1/limit/keyactor/ (VirtualHost aura_limits,
# AuraAnonQuotaPer key, a 7200-s window no other test uses) the anon key
# is its own actor, as a service_role key always is.  Other subs that
# merely look alike ("keys:", "keyholder") are accepted.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Digest::SHA qw(sha256_hex);
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Aura::Test qw(mint console_token json_body new_reqid exec_count
                  problem_ok redis_cli error_log_size error_log_since
                  ANON_KEY);

my $SERVICE = 'ak_test_service_0123456789abcdef';  # proj-a, service_role
my $PATH = '/v1/limit/keyactor/x';
my $tag = "$$-" . int(time);

sub actor_of { 'key:' . substr(sha256_hex($_[0]), 0, 16) }
my $anon_actor = actor_of(ANON_KEY);
my $service_actor = actor_of($SERVICE);

sub token {
    my ($sub) = @_;
    return mint(qw(--alg RS256 --kid r1 --exp-in 300 --project proj-a
                   --sub), $sub, '--key', "$ENV{AURA_TEST_JWT_DIR}/rsa.key");
}

# What Redis counted for the actor id $id in this Location's 7200-s
# windows, all of them.
sub counted {
    my ($id) = @_;
    my $sum = 0;
    for my $k (split /\n/, redis_cli('--scan', '--pattern',
                                     "aura:q:{d:proj-a:$id}:7200:*")) {
        $sum += redis_cli('GET', $k);
    }
    return $sum;
}

# GET $PATH with $apikey and, when given, $token; returns (response,
# what the example service received, its execution count).
sub call {
    my ($apikey, $token) = @_;
    my $id = new_reqid('actorns');
    my $res = GET($PATH, apikey => $apikey, 'X-Request-Id' => $id,
                  'X-Example-Headers' => 'json',
                  (defined $token ? (Authorization => "Bearer $token")
                                  : ()));
    return ($res, json_body($res) || {}, exec_count($id));
}

# The key itself: its actor, its bucket.
sub key_counts {
    my ($name, $apikey, $actor) = @_;
    my $before = counted($actor);
    my ($res, $h, $n) = call($apikey);
    is($res->code, 200, "$name: 200");
    is_deeply($h->{'Aura-Actor'}, [$actor], "$name: Aura-Actor $actor");
    is($n, 1, "$name: the service ran once");
    is(counted($actor), $before + 1, "$name: counted in the key's bucket");
}

# A user whose sub is $sub, a key's actor spelling: refused, the key's
# bucket untouched.
sub refused {
    my ($name, $apikey, $sub, $bucket) = @_;
    my $before = counted($bucket);
    my ($res, $h, $n) = call($apikey, token($sub));
    problem_ok($res, 401, 'invalid-token', $name);
    like(json_body($res)->{detail} // '', qr/reserved for API keys/,
         "$name: the detail says why");
    ok(!exists $h->{'Aura-Actor'}, "$name: no Aura-Actor reached anyone");
    is($n, 0, "$name: the service ran nothing");
    is(counted($bucket), $before, "$name: the key's quota is untouched");
}

plan tests => 4 * 2 + 8 * 4 + 4 * 2 + 4 + 1;

my $log0 = error_log_size();
Apache::TestRequest::module('aura_limits');

key_counts('the anon key', ANON_KEY, $anon_actor);
key_counts('the service_role key', $SERVICE, $service_actor);

refused("a user with the anon key's actor as sub", ANON_KEY, $anon_actor,
        $anon_actor);
refused("a user with the service_role key's actor as sub", ANON_KEY,
        $service_actor, $service_actor);
refused('the same, upper case', ANON_KEY, uc $service_actor,
        $service_actor);
refused('the same, with the service_role key', $SERVICE, $service_actor,
        $service_actor);

# Look-alikes are ordinary users: their own actor, their own bucket.
for my $sub ("keys:$tag", "keyholder-$tag") {
    my ($res, $h, $n) = call(ANON_KEY, token($sub));
    is($res->code, 200, "sub $sub: 200");
    is_deeply($h->{'Aura-Actor'}, [$sub], "sub $sub: its own actor");
    is($n, 1, "sub $sub: the service ran once");
    is(counted($sub), 1, "sub $sub: counted in its own bucket");
}

# The management plane: the console user's sub is its actor too.
Apache::TestRequest::module('aura_mgmt');
{
    my $id = new_reqid('actorns-mgmt');
    my $res = GET('/v1/functions/m', 'X-Project-Id' => 'proj-a',
                  'X-Request-Id' => $id,
                  Authorization => 'Bearer ' . console_token($anon_actor));
    problem_ok($res, 401, 'invalid-token', 'a console token with a key\'s '
               . 'actor as sub');
}

like(error_log_since($log0),
     qr/AURA00053: bearer token refused: token subject reserved for API keys/,
     'the refusal is logged with its reason');
