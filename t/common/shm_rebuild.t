# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Limiter state across restarts, on a server of its own.  The segment is
# kept when the new generation would lay it out identically (the same
# fingerprint: structures and geometry, docs/resilience.md), and rebuilt,
# with AURA00002 saying why, when the geometry changes:
# - a graceful restart keeps it (an abuser is not forgiven by a reload),
#   also when zones are reordered or a zone's rate or burst changes;
# - AuraRateLimitEntries (every table without entries=) rebuilds it;
# - a zone's own size (entries=) rebuilds it;
# - a new zone rebuilds it.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempdir);
use JSON::PP;
use LWP::UserAgent;
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Aura::Test qw(private_httpd wait_until);

plan tests => 33;

my $dir = tempdir(CLEANUP => 1);
my ($port, $httpd) = private_httpd(dir => $dir, children => 2,
                                   body => <<"CONF");
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraRateLimitZone tiny rate=1r/m burst=2
AuraRateLimitZone other rate=10r/s burst=10 entries=64
AuraRateLimitEntries 1024
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    <Location "/health">
        SetHandler aura-health
        AuraHealthDetail On
        AuraPublic On
        AuraRateLimit off
    </Location>
    <Location "/tiny/">
        AuraPublic On
        AuraRateLimit tiny
    </Location>
</VirtualHost>
CONF
system("$httpd -k start") == 0 or die "httpd did not start";
END { system("$httpd -k stop") if -s "$dir/httpd.pid" }

my $ua = LWP::UserAgent->new(timeout => 10);
sub health {
    my $res = $ua->get("http://127.0.0.1:$port/health?tables");
    return $res->is_success ? decode_json($res->content) : {};
}
sub tiny { $ua->get("http://127.0.0.1:$port/tiny/x")->code }
sub log_text {
    open(my $fh, '<', "$dir/error.log") or return '';
    local $/;
    return <$fh>;
}
sub graceful {
    my $gen = health()->{generation};
    system("$httpd -k graceful") == 0 or die "graceful failed";
    return wait_until(30, sub { (health()->{generation} // -1) > $gen });
}
# Rewrite the configuration with an edit of $_ (dies if it did nothing).
sub reconfigure {
    my ($edit) = @_;
    local $_ = do { local (@ARGV, $/) = "$dir/httpd.conf"; <> };
    $edit->() or die 'the edit changed nothing';
    open(my $fh, '>', "$dir/httpd.conf") or die "$!";
    print $fh $_;
    close $fh;
}
sub rebuilds { scalar(() = log_text() =~ /AURA00002: shared segment rebuilt/g) }

ok(wait_until(10, sub { health()->{shm} }), 'server up');
my $first = health()->{shm};
is($first->{zones}{tiny}{entries}, 1024,
   'a zone without entries= has AuraRateLimitEntries');
is($first->{zones}{other}{entries}, 64, 'a zone with entries= has its own');
is($first->{zones}{default}{entries}, 1024, 'the built-in zone has a table');
is($first->{actor_table}{entries}, 1024, 'and so has the actor fallback');
is($first->{limiter_entries}, 3 * 1024 + 64, 'limiter_entries: all tables');
ok($first->{valid}, 'the segment validates');
like($first->{fingerprint}, qr/^[0-9a-f]{16}$/, 'it has a fingerprint');
is_deeply([map { tiny() } 1 .. 3], [404, 404, 429], 'burst 2, then limited');

ok(graceful(), 'graceful restart');
is(tiny(), 429, 'still limited after a graceful restart');
is(health()->{shm}{id}, $first->{id}, 'the same segment');

# Zones reordered, another rate and burst: the same geometry.
reconfigure(sub {
    s{(AuraRateLimitZone tiny rate=1r/m burst=2)\n(AuraRateLimitZone other) rate=10r/s burst=10 entries=64}
     {$2 rate=20r/s burst=30 entries=64\n$1};
});
ok(graceful(), 'graceful restart with zones reordered, a burst changed');
my $now = health()->{shm};
is($now->{id}, $first->{id}, 'the same segment');
is($now->{fingerprint}, $first->{fingerprint}, 'the same fingerprint');
is(tiny(), 429, 'still limited');
is(rebuilds(), 0, 'nothing rebuilt so far');

# Another default table size: the segment cannot be kept.
reconfigure(sub { s/AuraRateLimitEntries 1024/AuraRateLimitEntries 4096/ });
ok(graceful(), 'graceful restart with a bigger AuraRateLimitEntries');
$now = health()->{shm};
isnt($now->{id}, $first->{id}, 'a new segment');
isnt($now->{fingerprint}, $first->{fingerprint}, 'another fingerprint');
is($now->{zones}{tiny}{entries}, 4096, 'of the new size');
is($now->{zones}{other}{entries}, 64, 'a zone with entries= kept its own');
is(tiny(), 404, 'and limiter state starts afresh');
like(log_text(), qr/AURA00002: shared segment rebuilt: size \d+ -> \d+ bytes, fingerprint [0-9a-f]{16} -> [0-9a-f]{16}, because the actor fallback table \(AuraRateLimitEntries\): 1024 -> 4096 entries, zone default: 1024 -> 4096 entries, zone tiny: 1024 -> 4096 entries \(/,
     'the rebuild names the tables that changed');
is(rebuilds(), 1, 'the rebuild is logged once');

# One zone's own size.
my $second = $now;
reconfigure(sub { s{(other rate=20r/s burst=30) entries=64}{$1 entries=128} });
ok(graceful(), 'graceful restart with a zone resized');
$now = health()->{shm};
isnt($now->{id}, $second->{id}, 'a new segment');
is($now->{zones}{other}{entries}, 128, 'the zone has its new size');
like(log_text(), qr/AURA00002: .*because zone other: 64 -> 128 entries \(/,
     'the rebuild names the zone');

# A new zone.
my $third = $now;
reconfigure(sub {
    s{(AuraRateLimitEntries 4096)}{$1\nAuraRateLimitZone fresh rate=1r/s};
});
ok(graceful(), 'graceful restart with a zone added');
$now = health()->{shm};
isnt($now->{id}, $third->{id}, 'a new segment');
like(log_text(), qr/AURA00002: .*because zone fresh added \(/,
     'the rebuild names the new zone');
is(rebuilds(), 3, 'three rebuilds, one per change of geometry');
