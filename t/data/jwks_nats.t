# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# JWKS from the identity service over NATS (AuraJWKSSubject): fetched on
# the first token, once for all children (the others adopt the published
# copy), and not again for tokens with unknown kids within the refresh
# interval.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Aura::Test qw(json_body exec_count error_log_size error_log_since t_dir
                  ANON_KEY);

plan tests => 7;

Apache::TestRequest::module('aura_jwks');
my $dir = $ENV{AURA_TEST_JWT_DIR} or die 'AURA_TEST_JWT_DIR not set';
my $mint = t_dir() . '/services/aura_mint_jwt';

sub mint {
    open(my $fh, '-|', $mint, @_) or die "$mint: $!";
    my $t = do { local $/; <$fh> };
    close $fh;
    $t =~ s/\s+$//;
    return $t;
}

my $log_from = error_log_size();
my $fetches = exec_count('jwks:aura.auth.jwks');
my $token = mint(qw(--alg RS256 --kid r1 --sub user-nats --exp-in 300
                    --project proj-a --key),
                 "$dir/rsa.key");

my $res = GET('/v1/functions/x', apikey => ANON_KEY,
              Authorization => "Bearer $token", 'X-Example-Headers' => 'json');
is($res->code, 200, 'a token checked against keys fetched over NATS');
is_deeply((json_body($res) || {})->{'Aura-Actor'}, ['user-nats'],
          'its sub is the actor');

my @codes = map {
    GET('/v1/functions/x', apikey => ANON_KEY,
        Authorization => "Bearer $token")->code
} 1 .. 10;
is("@codes", join(' ', (200) x 10), 'every child accepts it');

my $unknown = mint(qw(--alg RS256 --kid zz --sub u --exp-in 300 --project proj-a --key),
                   "$dir/rsa.key");
@codes = map {
    GET('/v1/functions/x', apikey => ANON_KEY,
        Authorization => "Bearer $unknown")->code
} 1 .. 5;
is("@codes", '401 401 401 401 401', 'unknown kids are refused');

is(exec_count('jwks:aura.auth.jwks') - $fetches, 1,
   'one fetch from the identity service for all of it');
my $log = error_log_since($log_from);
my @lines = $log =~ /AURA00052: JWKS refreshed from nats:aura\.auth\.jwks/g;
is(scalar @lines, 1, 'logged once');

is(GET('/v1/functions/x', Authorization => "Bearer $token")->code, 401,
   'the API key is still required');
