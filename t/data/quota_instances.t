# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Two gateway instances (two httpd processes on two ports) sharing one
# Redis enforce ONE actor quota between them: 10 per 30 s in total, not
# 10 each.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempdir);
use LWP::UserAgent;
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Aura::Test qw(private_httpd wait_until t_dir);

plan tests => 5;

my $KEY = 'ak_test_mongo_0123456789abcdef';
my @servers;
for my $n (1, 2) {
    my $dir = tempdir(CLEANUP => 1);
    my ($port, $httpd) = private_httpd(dir => $dir, children => 2,
                                       body => <<"CONF");
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraDBParams "$ENV{AURA_TEST_PG_CONNINFO}"
AuraRedisServer 127.0.0.1:$ENV{AURA_TEST_REDIS_PORT}
AuraInstances 2
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    Include @{[ t_dir() ]}/../conf/aura-routes.conf
    <Location "/v1/functions/">
        AuraActorQuota 10 30s
    </Location>
</VirtualHost>
CONF
    system("$httpd -k start") == 0 or die "httpd $n did not start";
    push @servers, { port => $port, httpd => $httpd, dir => $dir };
}
END {
    for my $s (@servers) {
        system("$s->{httpd} -k stop") if -s "$s->{dir}/httpd.pid";
    }
}

my $ua = LWP::UserAgent->new(keep_alive => 1, timeout => 10);
sub get {
    my ($s) = @_;
    return $ua->get("http://127.0.0.1:$s->{port}/v1/functions/x",
                    apikey => $KEY);
}
# A gateway answer carries a request id; a refused connection does not.
ok(wait_until(10, sub {
       !grep { !$ua->get("http://127.0.0.1:$_->{port}/nowhere")
                       ->header('X-Request-Id') } @servers
   }), 'both instances up');

# Alternate between the instances.
my (%ok, @codes);
for my $i (0 .. 15) {
    my $s = $servers[$i % 2];
    my $res = get($s);
    push @codes, $res->code;
    $ok{$s->{port}}++ if $res->code == 200;
}
my $admitted = grep { $_ == 200 } @codes;
is($admitted, 10, 'ten admitted in total across both instances');
is_deeply([@codes[10 .. 15]], [(429) x 6], 'every request after is refused');
is($ok{$servers[0]{port}}, 5, 'instance 1 admitted its half');
is($ok{$servers[1]{port}}, 5, 'instance 2 admitted its half');
