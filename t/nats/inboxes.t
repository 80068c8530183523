# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The reply inboxes (mod_aura_common/nats/aura_inbox.c, issue #29): each
# request subscribes to a subject of its own, "<prefix>.<child>.<token>"
# with 128 random bits, right before it is sent, and unsubscribes when it
# ends; so no service can tell another request's reply subject from its
# own, and nothing published on any other subject reaches the gateway.
# Seen from nats-server's trace and monitoring (/connz?subs=1) on a
# server of its own, with one gateway child:
# - 60 requests one after another: every reply is the request's own; the
#   trace shows 60 distinct reply subjects of 32 hex digits after the
#   child's id, no two alike in their first 8, each subscribed literally
#   (no wildcard) before its request and unsubscribed after;
# - 6 clients at once, 20 requests each: every reply is its own, and
#   once they are answered the gateway holds no request inbox
#   subscription (the one other inbox it holds is the incident controls'
#   sync inbox of its child, for the child's life);
# - two replies that come after their 1 s budget (504) find nobody
#   listening: the next requests get their own replies, and still no
#   inbox subscription is left.
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
use Aura::Load qw(fan_out);

plan tests => 12;

my $d = tempdir(CLEANUP => 1);
chmod 0755, $d;
my $mport = free_port();
my $nats = nats_server(dir => $d, name => 'inboxes',
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

# The inbox subscriptions the gateway holds, from nats-server's
# monitoring port.
# The inbox subscriptions the gateway holds: a request's,
# "_INBOX.<child>.<32 hex digits>", and others (the incident controls'
# sync inbox: one per child, "_INBOX.<nuid>", for as long as the child
# lives).
sub inboxes {
    my $res = $ua->get("http://127.0.0.1:$mport/connz?subs=1");
    return () unless $res->is_success;
    return map { grep { /^_INBOX\./ } @{ $_->{subscriptions_list} || [] } }
               @{ decode_json($res->decoded_content)->{connections} || [] };
}
sub inbox_subs {
    return scalar grep { /^_INBOX\.[^.]+\.[0-9a-f]{32}$/ } inboxes();
}
sub standing_inboxes {
    return scalar grep { !/^_INBOX\.[^.]+\.[0-9a-f]{32}$/ } inboxes();
}

# What the server's trace says so far: the reply subjects of the
# requests (in order), the inbox SUBs (subject => sid) and the UNSUBs.
sub trace {
    my (@replies, %sub, %unsub);
    open(my $fh, '<', $nats->{log}) or return;
    while (<$fh>) {
        push @replies, $1 if /\[H?PUB aura\.lanes\.test (\S+) /;
        $sub{$1} = $2 if /\[SUB (_INBOX\.\S+)\s+(\d+)\]/;
        $unsub{$1} = 1 if /\[UNSUB (\d+)/;
    }
    close $fh;
    return (\@replies, \%sub, \%unsub);
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

# --- one after another ----------------------------------------------------
my $tag = "$$-" . int(time);
my $own = grep { own_reply($ua, "inbox-seq-$tag-$_") } 1 .. 60;
is($own, 60, '60 requests one after another: each got its own reply');
my ($replies, $sub, $unsub);
ok(wait_until(3, sub {
       ($replies, $sub, $unsub) = trace();
       @$replies >= 61 && !grep { !$sub->{$_} || !$unsub->{$sub->{$_}} }
                                @$replies }),
   'each reply subject was subscribed to, literally, and unsubscribed')
    or diag(scalar(@$replies) . ' requests in the trace');
my @seq = @$replies[-60 .. -1];
my %seen;
my @tokens = map { /^_INBOX\.[A-Za-z0-9]+\.([0-9a-f]{32})$/ ? $1 : () } @seq;
is(scalar @tokens, 60, 'every reply subject ends in 128 bits (32 hex '
   . 'digits) after the child\'s id') or diag("@seq[0 .. 2]");
is(scalar(grep { !$seen{substr($_, 0, 8)}++ } @tokens), 60,
   'no two of them alike in their first 32 bits (no counter)');

# --- at once ------------------------------------------------------------------
my @res = fan_out(6, sub {
    my ($ua, $i) = @_;
    my $ok = grep { own_reply($ua, "inbox-par-$tag-$i-$_",
                              'X-Example-Delay-Ms' => 30) } 1 .. 20;
    return $ok;
});
my $sum = 0;
$sum += $_ for @res;
is($sum, 120, '6 clients x 20 requests at once: each got its own reply');
ok(wait_until(3, sub { inbox_subs() == 0 }),
   'once answered, the gateway holds no request inbox subscription')
    or diag('inbox subscriptions: ' . inbox_subs());

# --- late replies: nobody listens ---------------------------------------------
my @late = fan_out(2, sub {
    my ($ua, $i) = @_;
    return $ua->get("$base/v1/l/late$i", 'X-Example-Delay-Ms' => 1500)->code;
});
is_deeply(\@late, [504, 504], 'two requests past their 1 s budget: 504');
$own = grep { own_reply($ua, "inbox-after-$tag-$_",
                        'X-Example-Delay-Ms' => 50) } 1 .. 20;
is($own, 20, 'the next requests, while those replies come, get their own');
ok(wait_until(3, sub { inbox_subs() == 0 }),
   'and no request inbox subscription is left');
is(standing_inboxes(), 1,
   'the one other inbox is the incident controls\' sync inbox of the child');
unlike(`cat $dir/error.log`, qr/exit signal|Segmentation fault/,
       'no child died');
