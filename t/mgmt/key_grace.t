# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Rotation with a grace period (issue #32 point 1), across two gateway
# instances (the test server and a second httpd on the same NATS and key
# store, whose key cache lasts 300 s so that its TTL cannot be what
# ends the old key).  The rotating service's part (the contract in
# docs/security.md): in one transaction it adds the new key and sets the
# old key's expires_at to now() + grace; it answers 2xx, and the gateway
# broadcasts the project's invalidation as for any rotation.  During
# the grace both keys work on both instances; after it only the new one,
# on both, and the old one gets 401 key-expired.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempdir);
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(POST);
use Time::HiRes qw(time);
use Aura::KeyLife qw(answer answers);
use Aura::Test qw(t_dir wait_until psql console_token error_log_size
                  error_log_since private_httpd);

plan tests => 8;

my $OLD = 'ak_test_graceold_0123456789abcdef';
my $NEW = sprintf('ak_test_gracenew_%08x%08x', int(rand(2**32)), $$);
my $GRACE = 6;     # seconds: long enough to ask both instances twice
sub hash_of { "encode(sha256(convert_to('$_[0]', 'UTF8')), 'hex')" }

my $dir = tempdir(CLEANUP => 1);
my ($port, $httpd) = private_httpd(dir => $dir, children => 1, body => <<"CONF");
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraDBParams "$ENV{AURA_TEST_PG_CONNINFO}"
AuraKeyCacheTTL 300s
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    Include @{[ t_dir() ]}/../conf/aura-routes.conf
</VirtualHost>
CONF
system("$httpd -k start");
END {
    system("$httpd -k stop") if $httpd && -s "$dir/httpd.pid";
    psql('update api_keys set expires_at = null where key_hash = '
         . hash_of($OLD));
    psql('delete from api_keys where key_hash = ' . hash_of($NEW));
}
my $first = Apache::Test::config()->{vhosts}{aura_data}{port};
my @both = ($first, $port);
sub on_both {
    my ($key) = @_;
    return join('|', map { answers(3, $_, '/v1/functions/x', $key) } @both);
}

ok(wait_until(20, sub { on_both($OLD) eq '200|200' }),
   'the old key works on both instances (now cached on the second)');

# aura-control's part of a rotation with a grace period.
my $expiry = psql(<<"SQL");
begin;
insert into api_keys (project_id, key_hash, role)
    values ('proj-a', @{[ hash_of($NEW) ]}, 'anon');
update api_keys set expires_at = now() + interval '$GRACE s'
    where key_hash = @{[ hash_of($OLD) ]}
    returning extract(epoch from expires_at);
commit;
SQL
my $log_from = error_log_size();
Apache::TestRequest::module('aura_mgmt');
my $res = POST('/v1/projects/proj-a/keys/rotate',
               Authorization => 'Bearer ' . console_token('user-admin'),
               content => '{"grace": "6s"}');
is($res->code, 200, 'the rotation answered 200 through the management plane');
like(error_log_since($log_from),
     qr/AURA00016: keys of project proj-a rotated: invalidation sent/,
     'the gateway broadcast the invalidation');

# The broadcast is asynchronous: wait for the new key to be known on the
# second instance (its cache of the project was dropped), then check.
ok(wait_until(5, sub { answer($port, '/v1/functions/x', $NEW) eq '200' }),
   'the new key works on the second instance');
my ($old, $new) = (on_both($OLD), on_both($NEW));
my $left = $expiry - time;
diag(sprintf('both keys asked on both instances %.1f s before the grace '
             . 'ended', $left));
SKIP: {
    skip 'the machine took past the grace to get here', 1 if $left <= 0;
    is("$old / $new", '200|200 / 200|200',
       'during the grace both keys work on both instances');
}

ok(wait_until($expiry - time + 20,
              sub { on_both($OLD) eq '401 key-expired|401 key-expired' }),
   'after the grace the old key is refused on both instances (401)');
my $late = time - $expiry;
diag(sprintf('refused on both %.2f s after the grace ended', $late));
ok($late < 15, 'within a generous bound of the grace\'s end');
is(on_both($NEW), '200|200', 'the new key keeps working on both');
