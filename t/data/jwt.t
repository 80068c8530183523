# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Optional bearer tokens on the data plane: valid RS256, ES256 and HS256
# tokens make the request "authenticated" with the token's sub as actor;
# every bad token is a 401 invalid-token, never a silent downgrade to
# anon: expired, not yet valid, wrong signature, alg none, HS256 signed
# with the RSA public key as the secret, unknown kid (one JWKS refresh
# for many such tokens), garbage, 16 KB.  The API key stays mandatory.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use File::Copy qw(copy);
use Aura::Test qw(json_body new_reqid exec_count problem_ok wait_until
                  error_log_size error_log_since t_dir);

my $ANON = 'ak_test_anon_0123456789abcdef';
my $dir = $ENV{AURA_TEST_JWT_DIR} or die 'AURA_TEST_JWT_DIR not set';
my $mint = t_dir() . '/services/aura_mint_jwt';

# Every token names proj-a, the project of $ANON (AuraTokenProjectClaim's
# default claim): what fails here fails for the reason the row says.
sub mint {
    my @args = @_;
    push @args, '--project', 'proj-a' unless grep { $_ eq '--jwk' } @args;
    open(my $fh, '-|', $mint, @args) or die "$mint: $!";
    my $t = do { local $/; <$fh> };
    close $fh;
    die "aura_mint_jwt @args failed" if $? || !$t;
    $t =~ s/\s+$//;
    return $t;
}

sub call {
    my ($token, @more) = @_;
    # A Location that forwards the verified token (AuraForwardToken On),
    # so the service shows which one crossed.
    my $res = GET('/v1/test/fwdtoken/jwt', apikey => $ANON,
                  'X-Example-Headers' => 'json',
                  (defined $token ? (Authorization => "Bearer $token") : ()),
                  @more);
    return ($res, json_body($res) || {});
}

my @good = (
    [ 'RS256 with kid', mint(qw(--alg RS256 --kid r1 --sub user-rs --exp-in 300
                                --key), "$dir/rsa.key"), 'user-rs' ],
    [ 'ES256 with kid', mint(qw(--alg ES256 --kid e1 --sub user-es --exp-in 300
                                --key), "$dir/ec.key"), 'user-es' ],
    [ 'HS256 with kid', mint(qw(--alg HS256 --kid hs1 --sub user-hs --exp-in 300
                                --key), "$dir/hs.secret"), 'user-hs' ],
    [ 'expired within the leeway', mint(qw(--alg RS256 --kid r1 --sub user-lw
                                --exp-in -2 --key), "$dir/rsa.key"), 'user-lw' ],
);

my @bad = (
    [ 'expired', mint(qw(--alg RS256 --kid r1 --sub u --exp-in -60 --key),
                      "$dir/rsa.key") ],
    [ 'not yet valid', mint(qw(--alg RS256 --kid r1 --sub u --exp-in 600
                               --nbf-in 120 --key), "$dir/rsa.key") ],
    [ 'no exp', mint(qw(--alg RS256 --kid r1 --sub u --no-exp --key),
                     "$dir/rsa.key") ],
    [ 'no sub', mint(qw(--alg RS256 --kid r1 --exp-in 300 --key),
                     "$dir/rsa.key") ],
    [ 'wrong signature', mint(qw(--alg RS256 --kid r1 --sub u --exp-in 300
                                 --key), "$dir/rogue.key") ],
    [ 'alg none', mint(qw(--alg none --kid r1 --sub u --exp-in 300)) ],
    [ 'HS256 signed with the RSA public key as the secret',
      mint(qw(--alg HS256 --kid r1 --sub u --exp-in 300 --key),
           "$dir/rsa.pub") ],
    [ 'ES256 header on an RSA kid', mint(qw(--alg ES256 --kid r1 --sub u
                                            --exp-in 300 --key), "$dir/ec.key") ],
    [ 'garbage', 'not.a.jwt' ],
    [ 'one part', 'abc' ],
    [ 'empty', '' ],
    [ '16 KB', 'eyJ' . ('A' x 16384) . '.e30.sig' ],
);

plan tests => 6 * @good + 5 * @bad + 4 + 2 + 3 + 3;

Apache::TestRequest::module('aura_data');

for my $g (@good) {
    my ($name, $token, $sub) = @$g;
    my ($res, $h) = call($token);
    is($res->code, 200, "$name: 200");
    is_deeply($h->{'Aura-Role'}, ['authenticated'], "$name: authenticated");
    is_deeply($h->{'Aura-Actor'}, [$sub], "$name: the sub is the actor");
    is_deeply($h->{'Aura-Key-Role'}, ['anon'], "$name: key role kept");
    is_deeply($h->{'Aura-Project'}, ['proj-a'], "$name: project from the key");
    is(($h->{authorization} || [''])->[0], "Bearer $token",
       "$name: the token reaches a service it is forwarded to");
}

for my $b (@bad) {
    my ($name, $token) = @$b;
    my $id = new_reqid('badjwt');
    my ($res) = call($token, 'X-Request-Id' => $id);
    problem_ok($res, 401, 'invalid-token', $name);
    like($res->header('WWW-Authenticate') || '', qr/^Bearer error="invalid_token"/,
         "$name: WWW-Authenticate");
}

# A token never replaces the key.
my ($res) = GET('/v1/functions/jwt',
                Authorization => 'Bearer ' . $good[0][1]);
problem_ok($res, 401, 'missing-key', 'a valid token without an API key');

# Unknown kids: many tokens, one refresh of the JWKS file.
my $log_from = error_log_size();
my $unknown = mint(qw(--alg RS256 --kid nope --sub u --exp-in 300 --key),
                   "$dir/rsa.key");
my @codes = map { (call($unknown))[0]->code } 1 .. 8;
is("@codes", join(' ', (401) x 8), 'unknown kid: refused every time');
my @refreshes = error_log_since($log_from) =~ /AURA00052: JWKS refreshed/g;
is(scalar @refreshes, 1, 'eight unknown kids, one JWKS refresh');

# The issuer rotates: a new key in the JWKS file is picked up on its kid.
copy("$dir/jwks.json", "$dir/jwks.json.orig") or die $!;
my $jwk = mint('--jwk', "$dir/rogue.pub", '--kid', 'r2');
open(my $in, '<', "$dir/jwks.json.orig") or die $!;
my $doc = do { local $/; <$in> };
close $in;
$doc =~ s/\]\}\s*$/,$jwk]}\n/ or die 'unexpected JWKS layout';
open(my $out, '>', "$dir/jwks.json.new") or die $!;
print $out $doc;
close $out;
rename("$dir/jwks.json.new", "$dir/jwks.json") or die $!;
my $rotated = mint(qw(--alg RS256 --kid r2 --sub user-r2 --exp-in 300 --key),
                   "$dir/rogue.key");
my $h;
ok(wait_until(10, sub { (($res, $h) = call($rotated)) && $res->code == 200 }),
   'a token signed with the new key is accepted after the refresh');
is_deeply($h->{'Aura-Actor'}, ['user-r2'], 'and its sub is the actor');
rename("$dir/jwks.json.orig", "$dir/jwks.json") or die $!;
my @all = error_log_since($log_from) =~ /AURA00052: JWKS refreshed/g;
cmp_ok(scalar @all, '<=', 5, 'refreshes stay rate-limited (one per 3 s)');

# No token in any log.
my $logs = error_log_since(0);
for my $log ('access_log', 'aura_access.log', 'aura_access.json') {
    open(my $fh, '<', t_dir() . "/logs/$log") or die "$log: $!";
    $logs .= do { local $/; <$fh> };
    close $fh;
}
my @leaked = grep { index($logs, $_->[1]) >= 0 && length $_->[1] > 20 }
             (@good, @bad);
is(scalar @leaked, 0, 'no token appears in the access or error log');
like(error_log_since($log_from), qr/AURA00053: bearer token refused: /,
     'refusals are logged with a reason');
unlike(error_log_since($log_from), qr/eyJ/, 'and without token content');
