# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The reply inboxes are lanes (mod_aura_common/nats/aura_inbox.c, issue
# #19): a synchronous subscription per request waiting at once, made
# once and reused, so that a reply goes from nats.c's reader thread to
# the waiting worker directly.  Seen from nats-server's monitoring
# (/connz?subs=1) on a server of its own, with one gateway child:
# - 60 requests one after another: every reply is the request's own, and
#   nats-server's trace shows at most 2 inbox SUBs, not one per request
#   (2: the next request may come in before the last one's pool, which
#   gives its lane back, is destroyed);
# - 6 clients at once, 20 requests each, 30 ms of service time: every
#   reply is its own, and the child holds at most one inbox subscription
#   per worker thread (8), at least 2;
# - two replies that come after their 1 s budget (504): counted as late
#   replies within 3 s with no other NATS request (the per-child
#   mod_watchdog sweep of free lanes), and the next requests get their
#   own replies;
# - the subscriptions stay: after all of that, still at most 8.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use JSON::PP qw(decode_json);
use LWP::UserAgent;
use POSIX ();
use Aura::Test qw(t_dir private_httpd wait_until free_port);
use Aura::SecureNats qw(nats_server stop_server);
use Aura::Load qw(counters fan_out);

plan tests => 11;

my $d = tempdir(CLEANUP => 1);
chmod 0755, $d;
my $mport = free_port();
my $nats = nats_server(dir => $d, name => 'lanes',
                       body => "http: \"127.0.0.1:$mport\"\ntrace: true");
my $url = "nats://127.0.0.1:$nats->{port}";

my $svc = fork();
die "fork: $!" unless defined $svc;
if (!$svc) {
    open(STDOUT, '>', '/dev/null');
    open(STDERR, '>', "$d/service.err");
    exec(t_dir() . '/services/aura_example_service', '-s', $url,
         '-c', 'aura.lanes.count', 'aura.lanes.test') or POSIX::_exit(127);
}

my $dir = "$d/httpd";
mkdir $dir or die "$dir: $!";
my ($port, $httpd) = private_httpd(dir => $dir, children => 1, threads => 8,
    body => <<"CONF");
AuraNATSServers $url
AuraRateLimitZone default rate=100000r/s burst=100000
AuraServiceMaxInFlight off
AuraPlaneMaxInFlight off
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    <Location "/health">
        SetHandler aura-health
        AuraHealthDetail On
        AuraPublic On
        AuraRateLimit off
    </Location>
    <Location "/v1/l/">
        AuraService functions nats:aura.lanes.test
        AuraPublic On
        AuraTimeout 1s
    </Location>
</VirtualHost>
CONF
system("$httpd -k start") == 0 or die 'httpd did not start';
END {
    local $?;
    system("$httpd -k stop") if $httpd && -s "$dir/httpd.pid";
    if ($svc) { kill 'TERM', $svc; waitpid($svc, 0) }
    stop_server($nats) if $nats;
}

my $base = "http://127.0.0.1:$port";
my $ua = LWP::UserAgent->new(timeout => 10);

# The inbox subscriptions the gateway holds (its replies' subjects:
# _INBOX.<unique>.<lane>.*), from nats-server's monitoring port.
sub inbox_subs {
    my $res = $ua->get("http://127.0.0.1:$mport/connz?subs=1");
    return -1 unless $res->is_success;
    my $n = 0;
    for my $c (@{ decode_json($res->decoded_content)->{connections} || [] }) {
        $n += grep { /^_INBOX\.[^.]+\.[0-9a-f]+\.\*$/ }
                   @{ $c->{subscriptions_list} || [] };
    }
    return $n;
}

# The inbox SUBs the server was sent so far (its trace log).
sub inbox_sub_lines {
    open(my $fh, '<', $nats->{log}) or return -1;
    my $n = grep { /\[SUB _INBOX\.[^.]+\.[0-9a-f]+\.\* / } <$fh>;
    close $fh;
    return $n;
}

# A request whose reply must echo its own request id.
sub own_reply {
    my ($ua, $id, @h) = @_;
    my $res = $ua->get("$base/v1/l/echo", 'X-Request-Id' => $id, @h);
    return $res->code == 200
           && ($res->header('X-Example-Request-Id') // '') eq $id;
}

ok(wait_until(15, sub { $ua->get("$base/v1/l/echo")->code == 200 }),
   'the gateway answers through its own NATS server')
    or diag(`tail -n 20 $dir/error.log`);

# --- one after another: one lane ------------------------------------------
my $tag = "$$-" . int(time);
my $own = grep { own_reply($ua, "lane-seq-$tag-$_") } 1 .. 60;
is($own, 60, '60 requests one after another: each got its own reply');
my $sub_lines = inbox_sub_lines();
ok($sub_lines >= 1 && $sub_lines <= 2, "at most 2 inbox SUBs on the wire"
   . " for 60 requests ($sub_lines): the subscription is reused");

# --- at once: at most one lane per worker thread --------------------------
my @res = fan_out(6, sub {
    my ($ua, $i) = @_;
    my $ok = grep { own_reply($ua, "lane-par-$tag-$i-$_",
                              'X-Example-Delay-Ms' => 30) } 1 .. 20;
    return $ok;
});
my $sum = 0;
$sum += $_ for @res;
is($sum, 120, '6 clients x 20 requests at once: each got its own reply');
my $subs = inbox_subs();
cmp_ok($subs, '<=', 8, "at most one inbox subscription per worker thread"
       . " ($subs)");
cmp_ok($subs, '>=', 2, 'more than one while requests waited at once');

# --- late replies: counted by the sweep, no traffic needed ----------------
my $late0 = counters($base)->{late_replies} // 0;
my @late = fan_out(2, sub {
    my ($ua, $i) = @_;
    return $ua->get("$base/v1/l/late$i", 'X-Example-Delay-Ms' => 1500)->code;
});
is_deeply(\@late, [504, 504], 'two requests past their 1 s budget: 504');
ok(wait_until(3, sub { (counters($base)->{late_replies} // 0) - $late0 >= 2 }),
   'their replies, come later, counted as late within 3 s with no other'
   . ' NATS request (the sweep)');
$own = grep { own_reply($ua, "lane-after-$tag-$_") } 1 .. 20;
is($own, 20, 'the next requests get their own replies');
$subs = inbox_subs();
cmp_ok($subs, '<=', 8, "still at most 8 inbox subscriptions ($subs)");
unlike(`cat $dir/error.log`, qr/exit signal|Segmentation fault/,
       'no child died');
