# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The key store blackholed (issue #16, point 6): Postgres behind a proxy
# that accepts connections and never answers.  A second gateway instance
# (one child, so that its key cache is one) reaches the suite's Postgres
# through Aura::Blackhole only, with AuraDBTimeout 1s.
#
# - 10 concurrent requests with uncached keys each get 503
#   store-unavailable within the deadline, not one after the other
#   (connects and queries both have it; the pool's lock is not held
#   while connecting);
# - the key store's breaker then opens: an uncached key is refused at
#   once, with the cooldown left as Retry-After, and no connection is
#   tried;
# - keys cached before the outage keep working past their TTL
#   (AuraKeyCacheTTL 1s), logged once, up to AuraKeyCacheStaleMax (6s)
#   and not after, and so does the /v1/db router's cached topology
#   (5 s TTL);
# - a revocation broadcast removes a stale key at once;
# - once Postgres answers again, the breaker closes by itself.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempdir);
use IO::Select;
use IO::Socket::INET;
use LWP::UserAgent;
use Time::HiRes qw(time sleep);
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Aura::Test qw(private_httpd wait_until t_dir json_body);
use Aura::Blackhole;

plan tests => 36;

my $DEADLINE = 1.0;          # AuraDBTimeout
my $MARGIN = 0.9;            # scheduling, ASan builds; N x would be >= 2 s
my $STALE = 6;               # AuraKeyCacheStaleMax
my $ANON = 'ak_test_anon_0123456789abcdef';     # proj-a
my $MONGO = 'ak_test_mongo_0123456789abcdef';   # proj-mongo

my $bh = Aura::Blackhole->start(target => "127.0.0.1:$ENV{AURA_TEST_PG_PORT}");
my $dir = tempdir(CLEANUP => 1);
my ($port, $httpd) = private_httpd(dir => $dir, children => 1, threads => 16,
                                   body => <<"CONF");
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraDBParams "host=127.0.0.1 port=@{[ $bh->port ]} dbname=aura user=aura"
AuraDBTimeout 1s
AuraKeyCacheTTL 1s
AuraKeyCacheStaleMax ${STALE}s
AuraBreaker store threshold=3 cooldown=3s
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    Include @{[ t_dir() ]}/../conf/aura-routes.conf
    <Location "/health">
        SetHandler aura-health
        AuraHealthDetail On
        AuraPublic On
    </Location>
</VirtualHost>
CONF
system("$httpd -k start") == 0 or die 'httpd did not start';
END { system("$httpd -k stop") if -s "$dir/httpd.pid"; $bh->stop if $bh }

my $ua = LWP::UserAgent->new(keep_alive => 0, timeout => 10);
sub get {
    my ($key, $path) = @_;
    my $t0 = time;
    my $res = $ua->get("http://127.0.0.1:$port" . ($path // '/v1/functions/x'),
                       apikey => $key);
    return ($res, time - $t0);
}
sub store_state {
    my $res = $ua->get("http://127.0.0.1:$port/health");
    return ((json_body($res) || {})->{breakers}{store}{state}) // '';
}
sub problem_type { (json_body($_[0]) || {})->{type} // '' }
sub log_text {
    open(my $fh, '<', "$dir/error.log") or return '';
    local $/;
    return <$fh> // '';
}
sub log_count { my ($tag) = @_; my @m = log_text() =~ /AURA$tag\b/g; scalar @m }

# A well-formed key the store does not know (never cached).
my $junk = 0;
sub fresh_key { sprintf('ak_test_nowhere_%016d', ++$junk) }

ok(wait_until(10, sub { (get($ANON))[0]->header('X-Request-Id') }),
   'instance up');

# --- before: both keys cached (TTL 1 s) ------------------------------
my ($r1) = get($ANON);
my ($r2) = get($MONGO);
my ($r3) = get($MONGO, '/v1/db/todos');
my $cached_at = time;
is($r3->code, 200, 'the db router looked up the proj-mongo topology');
is($r1->code, 200, 'proj-a key served while the store answers');
is($r2->code, 200, 'proj-mongo key served while the store answers');
is((get(fresh_key()))[0]->code, 401, 'an unknown key is refused (401)');

# --- blackhole: 10 concurrent uncached keys ---------------------------
$bh->blackhole;
my $accepted0 = $bh->accepted;
my $t0 = time;
my %sock;
for my $i (1 .. 10) {
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Timeout => 5)
        or die "connect: $!";
    my $key = fresh_key();
    print $s "GET /v1/functions/x HTTP/1.0\r\nHost: localhost\r\n"
           . "apikey: $key\r\n\r\n";
    $sock{$s} = { s => $s, buf => '' };
}
my $sel = IO::Select->new(map { $_->{s} } values %sock);
while ($sel->count && time - $t0 < 10) {
    for my $s ($sel->can_read(0.05)) {
        my $n = sysread($s, my $chunk, 65536);
        if ($n) { $sock{$s}{buf} .= $chunk; next; }
        $sock{$s}{done} = time - $t0;
        $sel->remove($s);
        close $s;
    }
}
my @done = map { $_->{done} // 99 } values %sock;
my @status = map { $_->{buf} =~ m{^HTTP/1\.\d (\d+)} ? $1 : 0 } values %sock;
my $worst = (sort { $b <=> $a } @done)[0];
is_deeply([sort @status], [(503) x 10],
          '10 concurrent uncached keys: all 503');
is(scalar(grep { m{"type":\s*"/problems/store-unavailable"} }
          map { $_->{buf} } values %sock), 10, 'all store-unavailable');
ok($worst <= $DEADLINE + $MARGIN,
   sprintf('each answered within the deadline, not N times it '
           . '(slowest %.2f s, deadline %.1f s)', $worst, $DEADLINE));
ok($bh->accepted > $accepted0, 'new connections were tried (and held)');
ok(log_count('01200') >= 1, 'connect deadline logged (AURA01200)');
ok(log_count('01201') >= 1,
   'the pooled connection ran out of time on its query (AURA01201)');
is(log_count('01202'), 1, 'the key store breaker opened, logged once');
is(store_state(), 'open', '/health shows the key store breaker open');

# --- breaker open: fail fast, no connection tried ---------------------
my $accepted1 = $bh->accepted;
my ($fast, $fast_t) = get(fresh_key());
is($fast->code, 503, 'breaker open: an uncached key gets 503');
is(problem_type($fast), '/problems/store-unavailable',
   'breaker open: store-unavailable');
ok($fast_t < 0.3, sprintf('breaker open: refused at once (%.3f s)', $fast_t));
my $retry = $fast->header('Retry-After') // 0;
ok($retry >= 1 && $retry <= 3, "Retry-After is the cooldown left ($retry)");

# --- stale keys past their TTL ----------------------------------------
my $wait = $cached_at + 1.2 - time;
sleep $wait if $wait > 0;         # the configured 1 s TTL, not a hope
my ($stale, $stale_t) = get($ANON);
is($stale->code, 200, 'a cached key works past its TTL while the store '
                    . 'is down');
ok($stale_t < 0.3, sprintf('served at once (breaker open, %.3f s)',
                           $stale_t));
is((get($MONGO))[0]->code, 200, 'another cached key too');
is($bh->accepted, $accepted1, 'no connection tried while the breaker is open');
is(log_count('01205'), 1, 'serving stale keys logged once (AURA01205)');
ok(log_count('01205') == 1 && (get($ANON))[0]->code == 200,
   'a second stale hit logs nothing more');

# --- revocation broadcast removes the stale key at once ---------------
nats_publish('aura.keys.invalidate', 'proj-a');
my $revoked;
ok(wait_until(3, sub { ($revoked) = get($ANON); $revoked->code == 503 }),
   'after the broadcast the proj-a key is no longer served stale');
is(problem_type($revoked), '/problems/store-unavailable',
   'it gets store-unavailable (never let in unchecked)');
is((get($MONGO))[0]->code, 200, 'the other project\'s key is still served');

# --- the router's topology past its own 5 s TTL -------------------------
$wait = $cached_at + 5.3 - time;
sleep $wait if $wait > 0;         # the router's fixed 5 s TTL
is((get($MONGO, '/v1/db/todos'))[0]->code, 200,
   'the /v1/db router uses its cached topology past its TTL too');

# --- the bound: AuraKeyCacheStaleMax ----------------------------------
$wait = $cached_at + 1 + $STALE + 0.3 - time;
sleep $wait if $wait > 0;         # the configured bound, not a hope
my ($late, $late_t) = get($MONGO);
is($late->code, 503, "past TTL + AuraKeyCacheStaleMax the key is no "
                   . "longer served");
is(problem_type($late), '/problems/store-unavailable',
   'past the bound: store-unavailable');
ok($late_t <= $DEADLINE + $MARGIN,
   sprintf('within the deadline (%.2f s)', $late_t));

# --- Postgres answers again --------------------------------------------
$bh->forward;
ok(wait_until(15, sub { (get($ANON))[0]->code == 200 }),
   'back: the proj-a key works (probe succeeded)');
is((get($MONGO))[0]->code, 200, 'back: the proj-mongo key works');
is((get(fresh_key()))[0]->code, 401, 'back: an unknown key is refused again');
ok(log_count('01204') >= 1, 'the key store breaker closed (AURA01204)');
is(store_state(), 'closed', '/health shows it closed');
unlike(log_text(), qr/password/i, 'no password in the log');

# One message on a NATS subject, straight to the bus.
sub nats_publish {
    my ($subject, $payload) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$ENV{AURA_TEST_NATS_PORT}",
                                  Timeout => 5) or die "nats: $!";
    my $info = <$s>;
    print $s "CONNECT {\"verbose\":false,\"pedantic\":false}\r\n"
           . "PUB $subject " . length($payload) . "\r\n$payload\r\nPING\r\n";
    while (my $line = <$s>) {
        last if $line =~ /^PONG/;
    }
    close $s;
}
