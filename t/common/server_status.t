# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# mod_status's server-status shows mod_aura's section (issue #31,
# point 1; docs/status.md), in its machine format (?auto) and in HTML,
# from the live state of the instance.  On a server of its own (one
# child, mod_status loaded, server-status on the data plane's
# VirtualHost), state driven for real:
# - a breaker opened: storage routed to a closed port (503
#   upstream-error), threshold 2;
# - in-flight against its cap: three slow requests (the example
#   service's x-example-delay-ms) fill functions's cap of 3, a fourth
#   is refused with 503 service-saturated;
# - a limiter refusing: zone "tight" (1 request a minute) refuses the
#   second request with 429;
# - the Redis fallback: AuraRedisServer on a closed port, so the first
#   actor-quota decision falls back to the local table;
# - NATS: this child's connection and node.
# Both renderings carry these values (and /health?detail, rendered from
# the same collection), the ?auto lines are all "Key:
# value" with stable names, the HTML section is escaped tables, and no
# API key or token appears anywhere on the page.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempdir);
use IO::Socket::INET;
use JSON::PP;
use LWP::UserAgent;
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Aura::Test qw(private_httpd wait_until free_ports);

plan tests => 41;

my $ANON = 'ak_test_anon_0123456789abcdef';       # proj-a
my $SERVICE = 'ak_test_service_0123456789abcdef'; # proj-a, service_role
my $dir = tempdir(CLEANUP => 1);
my ($dead_http, $dead_redis) = free_ports(2);
my ($port, $httpd) = private_httpd(dir => $dir, children => 1, threads => 8,
                                   body => <<"CONF");
LoadModule status_module /usr/lib/apache2/modules/mod_status.so
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraDBParams "$ENV{AURA_TEST_PG_CONNINFO}"
AuraRedisServer 127.0.0.1:$dead_redis
AuraRedisTimeout 1s
AuraRedisRetryInterval 600s
AuraBreaker storage threshold=2 cooldown=600s
AuraRateLimitZone tight rate=1r/m burst=1
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    <Location "/health">
        SetHandler aura-health
        AuraHealthDetail On
        AuraPublic On
        AuraRateLimit off
    </Location>
    <Location "/server-status">
        SetHandler server-status
        AuraPublic On
        AuraRateLimit off
    </Location>
    <Location "/v1/functions/">
        AuraService functions nats:aura.functions
        AuraServiceMaxInFlight 3
        AuraTimeout 120s
        AuraRateLimit off
    </Location>
    <Location "/v1/storage/">
        AuraService storage http://127.0.0.1:$dead_http
        AuraRateLimit off
    </Location>
    <Location "/v1/ai/">
        AuraService ai nats:aura.functions
        AuraRateLimit tight
        AuraActorQuota 100 60s
    </Location>
</VirtualHost>
CONF
system("$httpd -k start") == 0 or die 'httpd did not start';
my @slow;
END {
    close $_ for @slow;
    system("$httpd -k stop") if -s "$dir/httpd.pid";
}

my $base = "http://127.0.0.1:$port";
my $ua = LWP::UserAgent->new(keep_alive => 1, timeout => 30);

# server-status?auto as { key => value }, and the lines themselves.
sub status_auto {
    my $res = $ua->get("$base/server-status?auto");
    my @lines = split /\n/, $res->content;
    my %kv = map { /^([^:]+): (.*)$/ ? ($1 => $2) : () } @lines;
    return (\%kv, \@lines, $res);
}

ok(wait_until(20, sub { $ua->get("$base/server-status?auto")->is_success }),
   'server-status answers');

# ---- before anything happened --------------------------------------------
my ($kv, $lines, $res) = status_auto();
like($res->header('Content-Type') // '', qr{^text/plain}, '?auto is text');
like($kv->{AuraChildPid} // '', qr/^\d+$/, 'AuraChildPid is a pid');
ok(wait_until(20, sub {
       ((status_auto())[0]{AuraNATSState} // '') eq 'connected' }),
   'AuraNATSState: connected');
($kv) = status_auto();
like($kv->{AuraNATSServer} // '', qr{^nats://127\.0\.0\.1:\d+ \S+$},
     'AuraNATSServer: the node this child uses, and its id');
is($kv->{AuraBreakerState_storage}, 'closed', 'storage breaker closed');
is($kv->{AuraInFlight_functions}, '0/3', 'functions: 0 of its cap 3');
is($kv->{AuraInFlight_db}, '0/-', 'db: no Location routes to it');
like($kv->{AuraPlaneInFlight_data} // '', qr{^0/\d+$},
     'the data plane against its auto cap');
is($kv->{AuraPlaneInFlight_management}, '0/-', 'no management plane');
is($kv->{AuraActorQuotaRedis}, 'on', 'Redis configured');
is($kv->{AuraActorQuotaFallback}, 'no', 'no fallback yet');
is($kv->{AuraRateLimitRefused_tight}, '0', 'zone tight refused nothing');

# ---- a breaker opened ----------------------------------------------------
for my $i (1, 2) {
    my $r = $ua->get("$base/v1/storage/x", apikey => $ANON);
    like($r->code . ' ' . $r->content, qr/^503 .*upstream-error/s,
         "storage request $i: 503 upstream-error, nothing listens");
}
like($ua->get("$base/v1/storage/x", apikey => $ANON)->content,
     qr/breaker-open/, 'third storage request refused by the open breaker');
($kv) = status_auto();
is($kv->{AuraBreakerState_storage}, 'open', 'AuraBreakerState_storage: open');
is($kv->{AuraBreakerState_functions}, 'closed', 'the others stay closed');

# ---- a limiter refusing, and the Redis fallback --------------------------
is($ua->get("$base/v1/ai/x", apikey => $ANON)->code, 200,
   'first request of zone tight passes (the quota on the fallback)');
is($ua->get("$base/v1/ai/x", apikey => $ANON)->code, 429,
   'second one refused by zone tight');
($kv) = status_auto();
is($kv->{AuraRateLimitRefused_tight}, '1', 'AuraRateLimitRefused_tight: 1');
ok(($kv->{AuraRateLimitUsed_tight} // 0) >= 1, 'zone tight has an entry');
is($kv->{AuraActorQuotaFallback}, 'yes', 'AuraActorQuotaFallback: yes');
is($kv->{AuraBreakerState_redis}, 'open', "Redis's breaker open");
ok(($kv->{AuraActorQuotaByFallback} // 0) >= 1,
   'decided by the fallback');

# ---- in-flight filling the cap -------------------------------------------
for my $i (1 .. 3) {
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
                                  Proto => 'tcp') or die "connect: $!";
    print $s "GET /v1/functions/slow$i HTTP/1.1\r\nHost: localhost\r\n"
             . "apikey: $SERVICE\r\nx-example-delay-ms: 60000\r\n\r\n";
    push @slow, $s;
}
ok(wait_until(30, sub {
       ((status_auto())[0]{AuraInFlight_functions} // '') eq '3/3' }),
   'AuraInFlight_functions: 3/3 while three requests wait');
my $r = $ua->get("$base/v1/functions/one-more", apikey => $SERVICE);
is($r->code, 503, 'a fourth is refused');
like($r->content, qr/service-saturated/, '... service-saturated');
($kv, $lines) = status_auto();
is($kv->{AuraSaturated_functions}, '1', 'AuraSaturated_functions: 1');

# Every Aura line of ?auto is "Key: value", each key once.
my @ours = grep { /^Aura/ } @$lines;
ok(@ours > 40, 'the Aura lines are there (' . scalar(@ours) . ')');
my @bad = grep { !/^Aura[A-Za-z0-9_.-]+: \S.*$/ } @ours;
is_deeply(\@bad, [], 'every Aura line is Key: value');
note(join("\n", @ours));
my %seen;
my @dup = grep { /^(Aura[^:]*):/ && $seen{$1}++ } @$lines;
is_deeply(\@dup, [], 'no Aura key twice');

# ---- the HTML page ---------------------------------------------------------
my $html = $ua->get("$base/server-status")->content;
my ($sec) = $html =~ m{(<h2>mod_aura</h2>.*)}s;
ok($sec, 'the HTML page has the mod_aura section');
$sec //= '';
my $storage = '<tr><td>storage</td><td>open</td><td>\d+</td><td>0</td>'
              . '<td>\d+</td><td>0</td></tr>';
like($sec, qr{$storage}, 'storage row: open');
my $functions = '<tr><td>functions</td><td>closed</td><td>0</td><td>3</td>'
                . '<td>3</td><td>1</td></tr>';
like($sec, qr{$functions}, 'functions row: 3 of 3, 1 refused');
my $zone = '<tr><td>zone tight</td><td>\d+</td><td>[1-9]\d*</td>'
           . '<td>\d+</td><td>1</td>';
like($sec, qr{$zone}, 'zone tight row: 1 refused');
# Escaped: the only markup is the section's own tags.
my @tags = $sec =~ m{<(/?[a-z0-9]+)[^>]*>}g;
my @odd = grep { !/^\/?(?:h2|h3|hr|table|tr|th|td|p|dl|dt|dd|address|body|html)$/ } @tags;
is_deeply(\@odd, [], 'only table markup in the section');

# ---- /health?detail: the same collection, as JSON ---------------------------
my $h = eval { decode_json($ua->get("$base/health")->content) } || {};
is($h->{in_flight}{caps}{functions}, 3, '/health: in_flight.caps.functions');
is(($h->{breakers}{redis} || {})->{state}, 'open', '/health: breakers.redis');
ok(($h->{actor_quota} || {})->{fallback}, '/health: actor_quota.fallback');

# ---- nothing secret ------------------------------------------------------
my $all = $html . join("\n", @$lines);
ok($all !~ /ak_test_|Bearer|eyJ/, 'no API key or token on the page');
