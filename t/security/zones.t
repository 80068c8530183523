# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Rate-limit zones cannot starve each other (issue #15, point 8).  Each
# zone has a table of its own in the shared segment: a flood of distinct
# client addresses that fills one zone's table puts that zone, and only
# that zone, into its documented fail-open state (admitted, counted,
# AURA00080 once a minute naming the zone), while another zone keeps
# limiting, also for the flooding addresses themselves.
#
# The flood is the issue's: distinct IPv6 /64s (as mod_remoteip gives
# them from a trusted proxy's X-Forwarded-For) and distinct IPv4 source
# addresses (real connections from 127.0.0.x), into a zone whose entries
# are held for a minute (rate=1r/m).  Before each zone had its own table,
# the same flood filled the one shared table and the other zone's 429
# never came.  Bounded: 340 flood requests, one server of its own.
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
use Aura::Test qw(private_httpd wait_until);

plan tests => 25;

my $mods = '/usr/lib/apache2/modules';
my $dir = tempdir(CLEANUP => 1);
my $token = 'zones-test-metrics-token-0123456789';
open(my $tfh, '>', "$dir/metrics.token") or die "$!";
print $tfh "$token\n";
close $tfh;
my ($port, $httpd) = private_httpd(dir => $dir, children => 2,
                                   body => <<"CONF");
LoadModule remoteip_module $mods/mod_remoteip.so
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraMetricsTokenFile $dir/metrics.token
# Every table small: the default size applies to the built-in zone and
# the actor fallback; signup, the flooded zone, says so itself.
AuraRateLimitEntries 64
AuraRateLimitZone signup rate=1r/m burst=5 entries=64
AuraRateLimitZone login rate=1r/m burst=3
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    RemoteIPHeader X-Forwarded-For
    RemoteIPInternalProxy 127.0.0.1
    <Location "/health">
        SetHandler aura-health
        AuraHealthDetail On
        AuraPublic On
        AuraRateLimit off
    </Location>
    <Location "/metrics">
        SetHandler aura-metrics
        AuraPublic On
        AuraRateLimit off
    </Location>
    <Location "/signup/">
        AuraPublic On
        AuraRateLimit signup
    </Location>
    <Location "/login/">
        AuraPublic On
        AuraRateLimit login
    </Location>
</VirtualHost>
CONF
system("$httpd -k start") == 0 or die "httpd did not start";
END { system("$httpd -k stop") if -s "$dir/httpd.pid" }

my $ua = LWP::UserAgent->new(keep_alive => 1, timeout => 10);
sub health {
    my $res = $ua->get("http://127.0.0.1:$port/health?tables");
    return $res->is_success ? decode_json($res->content)->{shm} : {};
}
sub log_text {
    open(my $fh, '<', "$dir/error.log") or return '';
    local $/;
    return <$fh>;
}
# Through the trusted proxy (127.0.0.1): mod_remoteip's client address.
sub via {
    my ($path, $xff) = @_;
    return $ua->get("http://127.0.0.1:$port$path",
                    'X-Forwarded-For' => $xff)->code;
}
# A real connection from another loopback address.
sub from {
    my ($path, $src) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
                                  LocalAddr => $src, Proto => 'tcp',
                                  Timeout => 5) or return 0;
    print $s "GET $path HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    my $line = <$s> // '';
    close $s;
    return $line =~ m{^HTTP/1\.\d (\d+)} ? $1 : 0;
}

ok(wait_until(10, sub { health()->{zones} }), 'server up');
my $h = health();
is($h->{zones}{signup}{entries}, 64, 'signup has a table of 64 entries');
is($h->{zones}{login}{entries}, 64, 'login has one of its own');

# --- the flood: 240 IPv6 /64s and 100 IPv4 addresses into signup ----------
my (%codes, $n);
for my $i (1 .. 240) {
    $codes{ via('/signup/x', sprintf('2001:db8:0:%x::1', $i)) }++;
    $n++;
}
for my $i (2 .. 101) {
    $codes{ from('/signup/x', "127.0.0.$i") }++;
    $n++;
}
is_deeply(\%codes, { 404 => $n },
          "all $n flood requests admitted (each address's first)");
$h = health();
is($h->{zones}{signup}{used}, 64, 'the signup table is full');
is($h->{zones}{signup}{limited}, 64, 'of addresses still being limited');
is($h->{zones}{signup}{full}, $n - 64,
   'every other flood request was admitted without state (fail-open)');
ok($h->{valid}, 'every table validates after the flood') or diag($h->{invalid});

# --- another zone still limits ---------------------------------------------
is_deeply([map { $ua->get("http://127.0.0.1:$port/login/x")->code } 1 .. 4],
          [404, 404, 404, 429], 'login: burst 3, then 429 (127.0.0.1)');
is_deeply([map { via('/login/x', '2001:db8:0:7::1') } 1 .. 4],
          [404, 404, 404, 429], 'also for a /64 of the flood');
is_deeply([map { from('/login/x', '127.0.0.50') } 1 .. 4],
          [404, 404, 404, 429], 'also for an IPv4 address of the flood');
is(via('/login/x', '2001:db8:0:7::2'), 429,
   'the same /64 under another address shares the bucket');
$h = health();
is($h->{zones}{login}{full}, 0, 'login never failed open');
is($h->{zones}{login}{rejected}, 4, 'login counted its 429s');
is($h->{zones}{login}{used}, 3, 'login holds its three clients');
is($h->{zones}{default}{full}, 0, 'the default zone never failed open');
is($h->{actor_table}{full}, 0, 'nor the actor fallback table');
is($h->{ip_table_full}, $n - 64, 'ip_table_full counts the flood only');

# --- the flooded zone itself: fail-open, as documented ----------------------
# A new address in a full set is admitted however often it comes.
my @open = map { via('/signup/x', '2001:db8:ffff:1::1') } 1 .. 8;
is_deeply([grep { $_ != 404 } @open], [],
          'a newcomer to the full signup zone is admitted past its burst')
    or diag("@open");

# --- the log: once, naming the flooded zone only ----------------------------
my $log = log_text();
my @full = $log =~ /(AURA00080: [^\n]*)/g;
is(scalar @full, 1, 'AURA00080 logged once for the whole flood');
like($full[0] // '', qr/AURA00080: rate-limit zone signup full: requests admitted without a per-address limit in this zone only/,
     'it names the signup zone');
unlike($log, qr/AURA00080: rate-limit zone (?!signup )/,
       'no other zone is said to be full');
unlike($log, qr/AURA00600/, 'nor the actor fallback table');

# --- metrics per zone -------------------------------------------------------
my $res = $ua->get("http://127.0.0.1:$port/metrics",
                   Authorization => "Bearer $token");
my $m = $res->content;
diag('metrics: ' . $res->code) unless $res->is_success;
my $flood = $n - 64 + 8;
like($m, qr/^aura_limiter_table_full_total\{stage="ip",zone="signup"\} $flood$/m,
     'metrics: the signup table full, per zone');
like($m, qr/^aura_limiter_zone_rejections_total\{zone="login"\} 4$/m,
     'metrics: the login zone refused its 4');
