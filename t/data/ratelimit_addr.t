# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Stage 1 on a server of its own:
# - the defaults (zone "default": 100 r/s, burst 1000) with no rate-limit
#   directive at all: a burst then the steady rate, within 2 % of GCRA;
# - IPv6 clients (a real [::1] connection) keyed apart from IPv4 ones;
# - the client address from mod_remoteip behind a trusted proxy, IPv6
#   addresses grouped by their /64.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempdir);
use IO::Socket::IP;
use LWP::UserAgent;
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Time::HiRes qw(time);
use Aura::Test qw(private_httpd free_port wait_until t_dir);

plan tests => 4 + 3 + 6;

my $mods = '/usr/lib/apache2/modules';
my $dir = tempdir(CLEANUP => 1);
my $port6 = free_port();
my ($port, $httpd) = private_httpd(dir => $dir, children => 2,
                                   body => <<"CONF");
Listen [::1]:$port6
LoadModule remoteip_module $mods/mod_remoteip.so
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraRateLimitZone tiny rate=1r/m burst=3
<VirtualHost 127.0.0.1:__PORT__ [::1]:$port6>
    AuraPlane data
    # Requests from 127.0.0.1 with X-Forwarded-For come through a proxy
    # the operator trusts; without the header the address is the
    # connection's.
    RemoteIPHeader X-Forwarded-For
    RemoteIPInternalProxy 127.0.0.1
    <Location "/open/">
        AuraPublic On
    </Location>
    <Location "/tiny/">
        AuraPublic On
        AuraRateLimit tiny
    </Location>
    <Location "/proxied/">
        AuraPublic On
        AuraRateLimit tiny
    </Location>
</VirtualHost>
CONF

system("$httpd -k start") == 0 or die "httpd did not start";
END { system("$httpd -k stop") if -s "$dir/httpd.pid" }
my $ua = LWP::UserAgent->new(keep_alive => 1, timeout => 10);
ok(wait_until(10, sub { $ua->get("http://127.0.0.1:$port/open/")->code
                            == 404 }), 'server up');

# --- defaults: burst 1000, then 100/s --------------------------------------
# Back to back until the first refusal: GCRA admits the burst plus one
# request per 10 ms of the time taken.
my ($admitted, $t0) = (0, time);
my $res;
while (($res = $ua->get("http://127.0.0.1:$port/open/"))->code == 404) {
    $admitted++;
    last if $admitted > 20000;
}
my $code = $res->code;
my $elapsed = time - $t0;
my $allowed = 1000 + 100 * $elapsed;
diag(sprintf('default zone: %d admitted in %.3f s before the first 429',
             $admitted, $elapsed));
is($code, 429, 'the default zone refuses in the end');
ok(abs($admitted - $allowed) <= 0.02 * $allowed,
   sprintf('%d admitted within 2 %% of %.0f (1000 + 100/s)', $admitted,
           $allowed));
is($res->header('RateLimit-Policy'), '"ip";q=1000;w=10',
   'the default policy: 1000 at once, refilled in 10 s');

# --- IPv6: a real [::1] client is its own key -------------------------------
sub get6 {
    my ($path) = @_;
    my $s = IO::Socket::IP->new(PeerHost => '::1', PeerPort => $port6,
                                Timeout => 5) or return 0;
    print $s "GET $path HTTP/1.0\r\nHost: localhost\r\n\r\n";
    my $line = <$s> // '';
    close $s;
    return $line =~ m{^HTTP/1\.\d (\d+)} ? $1 : 0;
}
my @v6 = map { get6('/tiny/x') } 1 .. 4;
is_deeply(\@v6, [404, 404, 404, 429], '[::1]: burst 3, then 429');
my @v4 = map { $ua->get("http://127.0.0.1:$port/tiny/x")->code } 1 .. 4;
is_deeply(\@v4, [404, 404, 404, 429], '127.0.0.1 has a bucket of its own');
is(get6('/tiny/x'), 429, '[::1] still limited');

# --- behind a trusted proxy: mod_remoteip's address -----------------------
sub via {
    my ($xff) = @_;
    return $ua->get("http://127.0.0.1:$port/proxied/x",
                    'X-Forwarded-For' => $xff)->code;
}
is_deeply([map { via('198.51.100.7') } 1 .. 4], [404, 404, 404, 429],
          'one forwarded client: burst 3, then 429');
is(via('198.51.100.8'), 404, 'another forwarded client is not limited');
is_deeply([map { via('2001:db8:1:2::1') } 1 .. 3], [404, 404, 404],
          'an IPv6 client behind the proxy: its burst');
is(via('2001:db8:1:2::ffff'), 429,
   'another address of the same /64 shares the bucket');
is(via('2001:db8:1:3::1'), 404, 'the next /64 does not');
is(via('198.51.100.7'), 429, 'the first client is still limited');
