# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Limiter state across restarts, on a server of its own: a graceful
# restart keeps it (an abuser is not forgiven by a reload), and a
# restart that changes the table's size (AuraRateLimitEntries) rebuilds
# the segment, says so once (AURA00002), and starts afresh.
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

plan tests => 11;

my $dir = tempdir(CLEANUP => 1);
my ($port, $httpd) = private_httpd(dir => $dir, children => 2,
                                   body => <<"CONF");
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraRateLimitZone tiny rate=1r/m burst=2
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
    my $res = $ua->get("http://127.0.0.1:$port/health");
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

ok(wait_until(10, sub { health()->{shm} }), 'server up');
my $first = health()->{shm};
is($first->{limiter_entries}, 1024, 'the table has the configured size');
is_deeply([map { tiny() } 1 .. 3], [404, 404, 429], 'burst 2, then limited');

ok(graceful(), 'graceful restart');
is(tiny(), 429, 'still limited after a graceful restart');
is(health()->{shm}{id}, $first->{id}, 'the same segment');

# Another table size: the segment cannot be kept.
my $conf = do { local (@ARGV, $/) = "$dir/httpd.conf"; <> };
$conf =~ s/AuraRateLimitEntries 1024/AuraRateLimitEntries 4096/ or die;
open(my $fh, '>', "$dir/httpd.conf") or die "$!";
print $fh $conf;
close $fh;
ok(graceful(), 'graceful restart with a bigger table');
my $now = health()->{shm};
isnt($now->{id}, $first->{id}, 'a new segment');
is($now->{limiter_entries}, 4096, 'of the new size');
is(tiny(), 404, 'and limiter state starts afresh');
my @rebuilt = log_text() =~ /(AURA00002: shared segment rebuilt: size \d+ -> \d+)/g;
is(scalar @rebuilt, 1, 'the rebuild is logged once');
