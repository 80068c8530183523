# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The breaker table of dedicated PostgREST targets is bounded
# (AuraTargetBreakerEntries): once it is full, requests to new targets
# still go through, without a breaker of their own, counted and logged
# once; nothing is refused, nothing crashes.  A server of its own with a
# table of 16 entries.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempdir);
use JSON::PP;
use LWP::UserAgent;
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Aura::Test qw(private_httpd free_ports psql wait_until t_dir);
use Aura::Upstream qw(upstream_start upstream_stop);

plan tests => 8;

my $dir = tempdir(CLEANUP => 1);
my ($port, $httpd) = private_httpd(dir => $dir, children => 2,
                                   body => <<"CONF");
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraDBParams "$ENV{AURA_TEST_PG_CONNINFO}"
AuraTargetBreakerEntries 16
AuraTargetSweepInterval 60s
AuraBreaker postgrest threshold=100
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    <Location "/health">
        SetHandler aura-health
        AuraHealthDetail On
        AuraPublic On
    </Location>
    Include @{[ t_dir() ]}/../conf/aura-routes.conf
</VirtualHost>
CONF

my $live = upstream_start('pgrst-live', $dir);
my @ids = map { "proj-full-$_" } 1 .. 21;
END {
    upstream_stop($live);
    system("$httpd -k stop") if -s "$dir/httpd.pid";
    psql("DELETE FROM api_keys WHERE project_id LIKE 'proj-full-%';
          DELETE FROM projects WHERE id LIKE 'proj-full-%'");
}
# Twenty different targets nobody listens on, and a live one.
my @dead = free_ports(20);
for my $i (1 .. 21) {
    my $target = $i == 21 ? "http://127.0.0.1:$live->{port}"
                          : "http://127.0.0.1:$dead[$i - 1]";
    psql(qq{INSERT INTO projects (id, org_id, name, plan, db_kind, topology,
                                  postgrest_target)
            VALUES ('proj-full-$i', 'org-test', 'full $i', 'pro',
                    'postgres', 'dedicated', '$target');
            INSERT INTO api_keys (project_id, key_hash, role)
            VALUES ('proj-full-$i',
                    encode(sha256('ak_test_full_${i}_0123456789abcdef'::bytea),
                           'hex'), 'anon')});
}
system("$httpd -k start") == 0 or die "httpd did not start";

my $ua = LWP::UserAgent->new(timeout => 10);
sub get_as {
    my ($i) = @_;
    return $ua->get("http://127.0.0.1:$port/v1/db/todos",
                    apikey => "ak_test_full_${i}_0123456789abcdef");
}
sub health {
    my $r = $ua->get("http://127.0.0.1:$port/health");
    return $r->is_success ? decode_json($r->content) : {};
}
ok(wait_until(10, sub { health()->{shm} }), 'server up');
is(health()->{shm}{target_entries}, 16, 'a table of 16 targets');

# Status and problem type: a 503 for another reason (the key store, the
# router) would never have reached the table, and is named here.
my @codes = map {
    my $res = get_as($_);
    my $p = eval { decode_json($res->content) } || {};
    $res->code . ' ' . ($p->{type} // '-');
} 1 .. 20;
is_deeply(\@codes, [('503 /problems/upstream-error') x 20],
          'twenty dead targets: 503 each (upstream-error), none refused '
          . 'otherwise');
my $h = health();
cmp_ok($h->{shm}{targets_full}, '>=', 4,
       "$h->{shm}{targets_full} requests went without a breaker");
is(scalar(keys %{ $h->{breakers}{targets} }), 16, 'the table holds 16');
my $walk = decode_json($ua->get("http://127.0.0.1:$port/health?tables")
                          ->content);
ok($walk->{shm}{valid}, 'a walk of every table finds the full one sound')
    or diag($walk->{shm}{invalid});
is(get_as(21)->code, 200, 'a live target is still served with the table '
   . 'full');
my $log = do { local (@ARGV, $/) = "$dir/error.log"; <> } // '';
my @full = $log =~ /AURA00124/g;
is(scalar @full, 1, 'the full table is logged once');
