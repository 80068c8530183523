# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The data plane's API key: mandatory but on public Locations, from the
# apikey or X-API-Key header, from ?apikey= only on streaming Locations
# and never for a service_role key; unknown, revoked and malformed keys
# refused; the verified identity reaches the service, forged identity
# headers never do; a key never reaches a log line.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Digest::SHA ();
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET POST);
use Aura::Test qw(json_body new_reqid exec_count problem_ok psql wait_until
                  error_log_size error_log_since t_dir);

my $ANON    = 'ak_test_anon_0123456789abcdef';
my $SERVICE = 'ak_test_service_0123456789abcdef';
my $REVOKED = 'ak_test_revoked_0123456789abcdef';
my $REVOKEME = 'ak_test_revokeme_0123456789abcdef';
my $UNKNOWN = 'ak_test_unknown_0123456789abcdef';

plan tests => 59;

Apache::TestRequest::module('aura_data');
my $log_from = error_log_size();

sub envelope {
    my ($path, @headers) = @_;
    my $res = GET($path, 'X-Example-Headers' => 'json', @headers);
    return ($res, json_body($res) || {});
}

# Refusals, each a problem+json 401 that never reaches the service.
my @refused = (
    [ 'no key',          [],                            'missing-key' ],
    [ 'malformed key',   [ apikey => 'short' ],         'invalid-key' ],
    [ 'unknown key',     [ apikey => $UNKNOWN ],        'invalid-key' ],
    [ 'revoked key',     [ apikey => $REVOKED ],        'invalid-key' ],
    [ 'two different keys', [ apikey => $ANON, 'X-API-Key' => $SERVICE ],
      'ambiguous-key' ],
    [ 'anon key in the query of a non-streaming route',
      [], 'key-not-allowed-in-query', "?apikey=$ANON" ],
);
for my $c (@refused) {
    my ($name, $headers, $type, $query) = @$c;
    my $id = new_reqid('refused');
    my $res = GET('/v1/functions/x' . ($query || ''), @$headers,
                  'X-Request-Id' => $id);
    problem_ok($res, 401, $type, $name);
    is(exec_count($id), 0, "$name: the service never ran");
}

# The identity the service receives.
my ($res, $h) = envelope('/v1/functions/who', apikey => $ANON,
                         'Aura-Project' => 'proj-evil',
                         'Aura-Role' => 'service_role',
                         'aura-actor' => 'admin',
                         'AURA-KEY-ROLE' => 'service_role');
is($res->code, 200, 'anon key in the apikey header: 200');
is_deeply($h->{'Aura-Project'}, ['proj-a'], 'Aura-Project from the key store');
is_deeply($h->{'Aura-Org'}, ['org-test'], 'Aura-Org from the key store');
is_deeply($h->{'Aura-Key-Role'}, ['anon'], 'Aura-Key-Role anon');
is_deeply($h->{'Aura-Role'}, ['anon'], 'Aura-Role anon without a JWT');
is(($h->{'Aura-Actor'} || [''])->[0],
   'key:' . substr(Digest::SHA::sha256_hex($ANON), 0, 16),
   'Aura-Actor is a prefix of the key\'s SHA-256, not the key');
my (undef, $again) = envelope('/v1/functions/who', apikey => $ANON);
is_deeply($again->{'Aura-Actor'}, $h->{'Aura-Actor'},
          'the same actor when the key comes from the cache');
my %own = map { $_ => 1 } qw(Aura-Method Aura-Path Aura-Query
    Aura-Request-Id Aura-Plane Aura-Project Aura-Org Aura-Role Aura-Key-Role
    Aura-Actor);
my @forged = grep { /^aura-/i && !$own{$_} } keys %$h;
is("@forged", '', 'forged aura-* headers in any case are dropped');
ok(!exists $h->{apikey} && !exists $h->{'x-api-key'},
   'the key header is not forwarded');

($res, $h) = envelope('/v1/functions/who', 'X-API-Key' => $SERVICE);
is($res->code, 200, 'service_role key in X-API-Key: 200');
is_deeply($h->{'Aura-Role'}, ['service_role'], 'Aura-Role service_role');

# Streaming route: the key may come in the query, never a service_role one.
($res, $h) = envelope("/v1/test/stream/ch?x=1&apikey=$ANON&y=2");
is($res->code, 200, 'streaming route: anon key in the query accepted');
is_deeply($h->{'Aura-Query'}, ['x=1&y=2'],
          'the key is taken out of the forwarded query');
is_deeply($h->{'Aura-Project'}, ['proj-a'], 'and it authenticated');

my $id = new_reqid('svcq');
$res = GET("/v1/test/stream/ch?apikey=$SERVICE", 'X-Request-Id' => $id);
problem_ok($res, 401, 'key-not-allowed-in-query',
           'streaming route: service_role key in the query');
is(exec_count($id), 0, 'service_role key in the query: never forwarded');

# Public Locations need no key.
is(GET('/health')->code, 200, '/health is public');
($res, $h) = envelope('/v1/auth/signup');
is($res->code, 200, 'a public Location is served without a key');
ok(!exists $h->{'Aura-Project'}, 'and carries no identity');
is(GET('/v1/auth/other')->code, 401, 'its sibling Location is not public');

# Revoked while the server runs: refused once the 1 s cache TTL is over.
is(GET('/v1/functions/x', apikey => $REVOKEME)->code, 200,
   'key valid before revocation');
psql(q{UPDATE api_keys SET revoked_at = now()
        WHERE key_hash = encode(sha256('} . $REVOKEME . q{'::bytea), 'hex')});
ok(wait_until(5, sub {
       # Both children must have let it go.
       !grep { GET('/v1/functions/x', apikey => $REVOKEME)->code != 401 }
           1 .. 6;
   }), 'revoked in the database: refused on every child after the TTL');
psql(q{UPDATE api_keys SET revoked_at = NULL
        WHERE key_hash = encode(sha256('} . $REVOKEME . q{'::bytea), 'hex')});
ok(wait_until(5, sub { GET('/v1/functions/x', apikey => $REVOKEME)->code
                       == 200 }), 'restored: accepted again');

# No key value in any log.
my $errlog = error_log_since($log_from);
like($errlog, qr/AURA00042: service_role key of project proj-a sent in a URL/,
     'the service_role key in a URL is logged as an event');
# The data plane's own access logs (t/conf/extra.conf.in: the aura and
# aura_json formats).
my $access = '';
for my $log ('aura_access.log', 'aura_access.json') {
    open(my $fh, '<', t_dir() . "/logs/$log") or die "$log: $!";
    $access .= do { local $/; <$fh> };
    close $fh;
}
like($access, qr{/v1/test/stream/ch\?x=1&apikey=REDACTED&y=2},
     'the access log shows the request line redacted');
my @leaks = grep { index($access, $_) >= 0 || index($errlog, $_) >= 0 }
            ($ANON, $SERVICE, $REVOKED, $REVOKEME, $UNKNOWN);
is("@leaks", '', 'no key appears in the access or error log');
