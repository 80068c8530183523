# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# A key's last-used time (issue #32 point 1): kept approximately, in
# batches, never by the request.  A second httpd with two children
# flushes every second (AuraKeyLastUsedInterval 1s): after 60 requests
# with a key its last_used_at is set, by at most a few UPDATEs (counted
# by a trigger on the key's row, not timed); with Postgres stopped the
# requests of a cached key are still served and the lost batch is
# logged; once Postgres is back the next batch is written.  Each key
# written or lost is counted in aura_key_last_used_total{result}.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempdir);
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use LWP::UserAgent;
use Time::HiRes qw(time);
use Aura::KeyLife qw(answer answers);
use Aura::Test qw(t_dir wait_until psql pg_stop pg_start private_httpd);

plan tests => 12;

my $KEY = 'ak_test_lastused_0123456789abcdef';
my $HASH = "encode(sha256(convert_to('$KEY', 'UTF8')), 'hex')";
my $N = 60;
my $CHILDREN = 2;

# Each UPDATE that touches the key's row leaves one line.
psql(<<"SQL");
create table if not exists t_key_touches (at timestamptz default now());
truncate t_key_touches;
create or replace function t_key_touched() returns trigger
    language plpgsql as \$\$
begin
    insert into t_key_touches default values;
    return new;
end
\$\$;
drop trigger if exists t_key_touched on api_keys;
create trigger t_key_touched after update on api_keys for each row
    when (new.key_hash = $HASH) execute function t_key_touched();
update api_keys set last_used_at = null where key_hash = $HASH;
truncate t_key_touches;
SQL
END {
    psql('drop trigger if exists t_key_touched on api_keys; '
         . 'drop table if exists t_key_touches');
}

my $dir = tempdir(CLEANUP => 1);
my $TOKEN = 'key-last-used-metrics-token-0123';
open(my $tf, '>', "$dir/metrics.token") or die $!;
print $tf "$TOKEN\n";
close $tf;
my ($port, $httpd) = private_httpd(dir => $dir, children => $CHILDREN,
                                   body => <<"CONF");
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraDBParams "$ENV{AURA_TEST_PG_CONNINFO}"
AuraKeyCacheTTL 300s
AuraKeyLastUsedInterval 1s
AuraMetricsTokenFile $dir/metrics.token
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    <Location "/metrics">
        SetHandler aura-metrics
        AuraPublic On
    </Location>
    Include @{[ t_dir() ]}/../conf/aura-routes.conf
</VirtualHost>
CONF
system("$httpd -k start");
sub used_metric {
    my ($result) = @_;
    my $res = LWP::UserAgent->new(timeout => 10)->get(
        "http://127.0.0.1:$port/metrics", Authorization => "Bearer $TOKEN");
    my ($v) = $res->content
        =~ /^aura_key_last_used_total\{result="\Q$result\E"\} (\d+)$/m;
    return $v // -1;
}
my $pg_down = 0;
END {
    pg_start() if $pg_down;
    system("$httpd -k stop") if $httpd && -s "$dir/httpd.pid";
}
ok(wait_until(20, sub {
       answer($port, '/v1/functions/x') eq '401 missing-key' }),
   'second instance up');
is(psql("select count(*) from t_key_touches"), 0, 'no update yet');

my $t0 = time;
my $ok = grep { answer($port, '/v1/functions/x', $KEY) eq '200' } 1 .. $N;
my $spent = time - $t0;
is($ok, $N, "$N requests with the key: 200");
ok(wait_until(15, sub {
       psql("select last_used_at is not null from api_keys where "
            . "key_hash = $HASH") eq 't' }),
   'last_used_at is written');
my $age = psql("select extract(epoch from now() - last_used_at) from "
               . "api_keys where key_hash = $HASH");
diag(sprintf('last_used_at %.2f s old when read', $age)) if length $age;
# Then a full interval more with no request: no flush has anything to
# write, so the count is final.
my $settled = time + 2.5;
wait_until(5, sub { time > $settled });
my $updates = psql("select count(*) from t_key_touches");
my $bound = $CHILDREN * (int($spent) + 3);
diag(sprintf('%d requests in %.2f s: %d UPDATE(s) of the key (bound %d)',
             $N, $spent, $updates, $bound));
ok($updates >= 1 && $updates <= $bound,
   'a few batched UPDATEs, at most one per child and interval');
# One key in use: each batch wrote it once, each UPDATE counted it once.
is(used_metric('written'), $updates,
   'aura_key_last_used_total{result="written"}: one per UPDATE of the key');
is(used_metric('lost'), 0, 'nothing lost yet');

# Postgres stopped: a cached key is still served, the batch is lost and
# said so; requests never wait for the flush.
pg_stop();
$pg_down = 1;
my $during = answers(10, $port, '/v1/functions/x', $KEY);
is($during, '200', 'Postgres down: the cached key is served');
ok(wait_until(20, sub {
       open(my $fh, '<', "$dir/error.log") or return 0;
       local $/;
       my $l = <$fh>;
       return $l =~ /AURA02401: last-used time of \d+ API key\(s\) not written: the key store did not take it/;
   }), 'the lost batch is logged (AURA02401)');
ok(used_metric('lost') >= 1, 'the lost batch is counted');
pg_start();
$pg_down = 0;
my $before = psql("select last_used_at from api_keys where key_hash = $HASH");
ok(wait_until(20, sub {
       answer($port, '/v1/functions/x', $KEY);
       psql("select last_used_at > '$before' from api_keys "
            . "where key_hash = $HASH") eq 't';
   }), 'Postgres back: the next batch is written');
open(my $fh, '<', "$dir/error.log") or die $!;
my $log = do { local $/; <$fh> };
close $fh;
unlike($log, qr/\Q$KEY\E/, 'no key in the log');
