# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# A key rotation through the management plane ends the old key on the
# data plane of EVERY gateway instance within about a second: a second
# httpd (same NATS, same key store, a key cache TTL of five minutes, so
# the TTL cannot be what passes) refuses the old key right after the
# rotation answered.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(POST);
use File::Temp qw(tempdir);
use IO::Socket::INET;
use Time::HiRes qw(time);
use Aura::Test qw(t_dir wait_until psql console_token error_log_size
                  error_log_since private_httpd);

plan tests => 7;

my $OLD = 'ak_test_revokeme_0123456789abcdef';
my $dir = tempdir(CLEANUP => 1);
# One child, so that "cached" is certain (which child accepts a
# connection is the kernel's choice); every child subscribes alike.
my ($port, $httpd) = private_httpd(dir => $dir, children => 1, body => <<"CONF");
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraDBParams "$ENV{AURA_TEST_PG_CONNINFO}"
AuraKeyCacheTTL 300s
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    Include @{[ t_dir() ]}/../conf/aura-routes.conf
</VirtualHost>
CONF

sub get_second {
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port") or return 0;
    print $s "GET /v1/functions/x HTTP/1.0\r\napikey: $OLD\r\n\r\n";
    my $line = <$s> // '';
    close $s;
    return $line =~ m{^HTTP/1\.\d (\d+)} ? $1 : 0;
}
sub all_second {
    my ($want) = @_;
    return !grep { get_second() != $want } 1 .. 10;
}

system("$httpd -k start");
my $pid;
END {
    if (-s "$dir/httpd.pid") {
        system("$httpd -k stop");
    }
    psql(qq{UPDATE api_keys SET revoked_at = NULL
            WHERE key_hash = encode(sha256('$OLD'::bytea), 'hex')});
}
ok(wait_until(20, sub { all_second(200) }),
   'second instance: the key works (now cached)');

# aura-control's part of a rotation: the old key is revoked in the store.
psql(qq{UPDATE api_keys SET revoked_at = now()
        WHERE key_hash = encode(sha256('$OLD'::bytea), 'hex')});
ok(all_second(200), 'revoked in the store, still cached on the second one');

my $log_from = error_log_size();
Apache::TestRequest::module('aura_mgmt');
my $res = POST('/v1/projects/proj-a/keys/rotate',
               Authorization => 'Bearer ' . console_token('user-admin'),
               content => '{}');
my $t0 = time;
is($res->code, 200, 'rotation answered 200 through the management plane');
like(error_log_since($log_from),
     qr/AURA00016: keys of project proj-a rotated: invalidation sent/,
     'the gateway broadcast the invalidation');

ok(wait_until(1, sub { all_second(401) }),
   'second instance: the old key is refused within a second');
my $elapsed = time - $t0;
diag(sprintf('refused on the second instance after %.0f ms', 1000 * $elapsed));

open(my $fh, '<', "$dir/error.log") or die $!;
my $second = do { local $/; <$fh> };
close $fh;
like($second, qr/AURA00041: unknown or revoked API key/,
     'it asked the store again instead of trusting its cache');

# A rotation the control service refused (non-2xx) broadcasts nothing.
$log_from = error_log_size();
POST('/v1/projects/proj-a/keys/rotate',
     Authorization => 'Bearer ' . console_token('user-admin'),
     'X-Example-Status' => '409', content => '{}');
unlike(error_log_since($log_from), qr/AURA00016/,
       'a refused rotation broadcasts nothing');
