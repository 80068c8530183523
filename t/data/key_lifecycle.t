# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# A key's lifecycle (issue #32 point 1): a key past its expires_at gets
# 401 key-expired, on every instance, from the cache as from the store
# and without any broadcast; a key whose scopes do not name the
# Location's service (or its AuraKeyScope group) gets 403
# key-out-of-scope and reaches no service; a key store without the
# migration is refused loudly (503, AURA02403), and the migration makes
# an existing key table work as it did.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempdir);
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Time::HiRes qw(time);
use Aura::KeyLife qw(answer answers);
use Aura::Test qw(t_dir new_reqid exec_count problem_ok psql wait_until
                  error_log_size error_log_since private_httpd);

plan tests => 4 * 5 + 5 + 5 + 4 + 7;

my $EXPIRED  = 'ak_test_expired_0123456789abcdef';
my $SCOPE_FN = 'ak_test_scope_fn_0123456789abcdef';
my $SCOPE_GRP = 'ak_test_scope_grp_0123456789abcdef';
my $NOTHING  = 'ak_test_scope_none_0123456789abcdef';
my $EXPIRING = 'ak_test_expiring_0123456789abcdef';
my $ANON     = 'ak_test_anon_0123456789abcdef';
sub hash_of { "encode(sha256(convert_to('$_[0]', 'UTF8')), 'hex')" }

Apache::TestRequest::module('aura_data');
my $log_from = error_log_size();

# --- refusals on the test server, none reaching the service ----------
my @refused = (
    [ 'an expired key', $EXPIRED, '/v1/functions/x', 401, 'key-expired' ],
    [ 'a key scoped to functions, on auth', $SCOPE_FN, '/v1/auth/x', 403,
      'key-out-of-scope' ],
    [ 'a key scoped to reports and auth, on functions', $SCOPE_GRP,
      '/v1/functions/x', 403, 'key-out-of-scope' ],
    [ 'a key with empty scopes', $NOTHING, '/v1/functions/x', 403,
      'key-out-of-scope' ],
);
for my $c (@refused) {
    my ($name, $key, $path, $status, $type) = @$c;
    my $id = new_reqid('keylife');
    my $res = GET($path, apikey => $key, 'X-Request-Id' => $id);
    problem_ok($res, $status, $type, $name);
    is(exec_count($id), 0, "$name: the service never ran");
}
my $id = new_reqid('keylife');
is(GET('/v1/functions/x', apikey => $SCOPE_FN, 'X-Request-Id' => $id)->code,
   200, 'a key scoped to functions calls functions');
is(exec_count($id), 1, 'and the service ran once');
is(GET('/v1/auth/x', apikey => $SCOPE_GRP)->code, 200,
   'a key scoped to reports and auth calls auth');
my $log = error_log_since($log_from);
ok($log =~ /AURA02404: API key key:[0-9a-f]{16} of project proj-a expired at /
   && $log =~ /AURA02405: API key key:[0-9a-f]{16} of project proj-a is not scoped for \/v1\/auth\/x \(its scopes: functions\): refused/,
   'both refusals are logged with the key\'s hash prefix, never the key');
unlike($log, qr/\Q$EXPIRED\E|\Q$SCOPE_FN\E/, 'no key in the log');

# --- a second instance: AuraKeyScope groups, expiry from the cache -----
my $dir = tempdir(CLEANUP => 1);
my ($port, $httpd) = private_httpd(dir => $dir, children => 1, body => <<"CONF");
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraDBParams "$ENV{AURA_TEST_PG_CONNINFO}"
AuraKeyCacheTTL 300s
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    Include @{[ t_dir() ]}/../conf/aura-routes.conf
    <Location "/v1/functions/reports/">
        AuraKeyScope reports
    </Location>
</VirtualHost>
CONF
system("$httpd -k start");
END {
    system("$httpd -k stop") if $httpd && -s "$dir/httpd.pid";
    psql('update api_keys set expires_at = null where key_hash = '
         . hash_of($EXPIRING));
}
ok(wait_until(20, sub { answer($port, '/v1/functions/x', $ANON) eq '200' }),
   'second instance up');
is(answer($port, '/v1/functions/reports/monthly', $SCOPE_GRP), '200',
   'a key scoped to the group reports calls the Location AuraKeyScope names');
is(answer($port, '/v1/functions/x', $SCOPE_GRP), '403 key-out-of-scope',
   'not the rest of the service');
is(answer($port, '/v1/functions/reports/monthly', $SCOPE_FN), '200',
   'a key scoped to the service calls its group Locations too');
is(answer($port, '/v1/functions/reports/monthly', $NOTHING),
   '403 key-out-of-scope', 'empty scopes: not even the group');

# Expiry without any broadcast: the key's expiry is in the store when
# both instances cache it (the second for 300 s); then it passes.
my $expiry = psql("update api_keys set expires_at = now() + interval '5 s'"
                  . ' where key_hash = ' . hash_of($EXPIRING)
                  . ' returning extract(epoch from expires_at)');
my $first = answers(4, Apache::Test::config()->{vhosts}{aura_data}{port},
                    '/v1/functions/x', $EXPIRING);
my $second = answers(4, $port, '/v1/functions/x', $EXPIRING);
my $left = $expiry - time;
diag(sprintf('both instances asked %.1f s before the expiry', $left));
SKIP: {
    skip 'the machine took past the expiry to get here', 1 if $left <= 0;
    is("$first|$second", '200|200', 'before its expiry: 200 on both');
}
# The store forgets the expiry: only the second instance's cache (TTL
# 300 s) still knows it, so a refusal there comes from the cache.
ok(wait_until($expiry - time + 20, sub {
       answer($port, '/v1/functions/x', $EXPIRING) eq '401 key-expired' }),
   'after it: 401 key-expired on the second instance');
my $late = time - $expiry;
psql('update api_keys set expires_at = null where key_hash = '
     . hash_of($EXPIRING));
is(answers(4, $port, '/v1/functions/x', $EXPIRING), '401 key-expired',
   'refused from its cache: the store no longer says it expired');
diag(sprintf('refused %.2f s after expires_at', $late));
ok($late < 15, 'within a generous bound of its expiry (no TTL, no message)');

# --- a key store without the migration --------------------------------
# The tables of the previous conf/schema.sql in a schema of their own;
# a third instance looks keys up there (search_path).
my $OLD = 'ak_test_oldschema_0123456789abcdef';
psql(<<"SQL");
drop schema if exists mig cascade;
create schema mig;
create table mig.projects (id text primary key, org_id text not null,
    name text not null, plan text not null default 'free');
create table mig.api_keys (id bigserial primary key,
    project_id text not null references mig.projects (id),
    key_hash text not null unique, role text not null,
    created_at timestamptz not null default now(), revoked_at timestamptz);
insert into mig.projects values ('proj-a', 'org-test', 'A', 'pro');
insert into mig.api_keys (project_id, key_hash, role)
    values ('proj-a', @{[ hash_of($OLD) ]}, 'anon');
SQL
END { psql('drop schema if exists mig cascade') }
my $dir3 = tempdir(CLEANUP => 1);
my ($port3, $httpd3) = private_httpd(dir => $dir3, children => 1,
                                     body => <<"CONF");
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraDBParams "$ENV{AURA_TEST_PG_CONNINFO} options='-c search_path=mig'"
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    Include @{[ t_dir() ]}/../conf/aura-routes.conf
</VirtualHost>
CONF
system("$httpd3 -k start");
END { system("$httpd3 -k stop") if $httpd3 && -s "$dir3/httpd.pid" }
ok(wait_until(20, sub {
       answer($port3, '/v1/functions/x') eq '401 missing-key' }),
   'an instance on the unmigrated key store is up');
is(answer($port3, '/v1/functions/x', $OLD), '503 store-unavailable',
   'without the migration a key is refused (503), never accepted unchecked');
ok(wait_until(5, sub {
       open(my $fh, '<', "$dir3/error.log") or return 0;
       local $/;
       my $l = <$fh>;
       return $l =~ /AURA02403: the key store's schema is older than this mod_aura_common: aura_key_lookup cannot run \(column k\.expires_at does not exist\); apply conf\/migrations\/0002-key-lifecycle\.sql/;
   }), 'and the error log names the migration to apply');

open(my $fh, '<', t_dir() . '/../conf/migrations/0002-key-lifecycle.sql')
    or die $!;
my $migration = do { local $/; <$fh> };
close $fh;
psql("set search_path = mig;\n$migration");
psql("set search_path = mig;\n$migration");
is(psql("select count(*) from information_schema.columns where "
        . "table_schema = 'mig' and table_name = 'api_keys' and column_name "
        . "in ('expires_at', 'scopes', 'last_used_at')"), 3,
   'the migration adds the three columns, and applies twice');
is(psql("select coalesce(expires_at::text, 'null') || coalesce(scopes::text, "
        . "'null') from mig.api_keys"), 'nullnull',
   'an existing key: no expiry, every service');
is(answer($port3, '/v1/functions/x', $OLD), '200',
   'the existing key works after the migration, without a restart');
ok(!eval { psql("insert into mig.api_keys (project_id, key_hash, role, "
                . "scopes) values ('proj-a', 'x', 'anon', "
                . "'{\"db,storage\"}')"); 1 },
   'a scope holding a comma is refused by the store');
