# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Issue #28, point 2: streams do not take what other requests need.
# Before, a stream held its service's in-flight slot for its whole life,
# and anyone could open them: ten SSE streams bought with the anon key
# put realtime at 503 service-saturated for every caller.
#
# Here one visitor with the project's anon key opens streams from three
# loopback addresses (client sockets bound to 127.0.0.2, .3 and .4) on
# the VirtualHost aura_streams (AuraStreamMaxPerAddress 2,
# AuraStreamMaxPerActor 4, budgets auto: 5 streams per service, 7 for
# the data plane): four attempts per address, a streamed NATS reply of
# the realtime service (Aura-Stream: begin), an SSE stream through the
# HTTP realtime route, another SSE, another NATS stream.  Expected: the
# first two of .2 and of .3 open (4 streams: the actor's cap), every
# other attempt 429 /problems/stream-limit with Retry-After (4 by the
# address cap, 4 by the actor's; the NATS ones refused at their begin
# message).  While the four are open:
# - service_role calls to every service of the data plane (the NATS
#   routes, and the HTTP realtime and storage routes) answer 200;
# - the streams are counted in the long-lived budget (/health detail
#   "streams": by service, by plane, by address prefix, by actor hash),
#   not in realtime's in-flight slots; the upstream saw exactly the two
#   admitted SSE requests; /metrics and the log (AURA01603, once per
#   interval) say so.
# Closed, everything is given back.  Last, a streamed NATS reply on a
# Location with AuraStreamMaxDuration 1s and a service that pauses 20 s
# is ended by the gateway (AURA01600, aura_streams_cut_total): a bound,
# not a sleep.
#
# Without the long-lived budget (the C change stashed) this test fails:
# all twelve attempts but two are admitted and realtime answers the
# service_role call with 503 service-saturated.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use IO::Select;
use IO::Socket::INET;
use JSON::PP;
use LWP::UserAgent;
use Time::HiRes qw(time);
use Aura::Test qw(ANON_KEY wait_until new_reqid error_log_size
                  error_log_since);
use Aura::Stream qw(read_chunked);
use Aura::Upstream qw(upstream_stats upstream_log);

plan tests => 63;

Apache::TestRequest::module('aura_streams');
my ($port) = Apache::TestRequest::hostport() =~ /:(\d+)$/;
my $base = "http://127.0.0.1:$port";
my $SERVICE = 'ak_test_service_0123456789abcdef';
my $ua = LWP::UserAgent->new(timeout => 15);
my $token = do { local (@ARGV, $/) = $ENV{AURA_TEST_METRICS_TOKEN_FILE}; <> };
chomp $token;

sub health {
    my $res = $ua->get("$base/health");
    die 'health: ' . $res->status_line unless $res->is_success;
    return decode_json($res->content);
}

sub metric {
    my ($name) = @_;
    my $res = $ua->get("$base/metrics", Authorization => "Bearer $token");
    my ($v) = $res->content =~ /^\Q$name\E (\d+)$/m;
    return $v // 0;
}

# One request from $addr over a raw socket; the head is read, and the
# body of a refusal.  The socket stays open for a stream.
sub open_from {
    my ($addr, $path, %hdr) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
                                  LocalAddr => $addr, Timeout => 10)
        or die "connect from $addr: $!";
    binmode $s;
    my $req = "GET $path HTTP/1.1\r\nHost: localhost\r\napikey: "
              . ANON_KEY . "\r\n";
    $req .= "$_: $hdr{$_}\r\n" for sort keys %hdr;
    print $s "$req\r\n";
    my $buf = '';
    while ($buf !~ /\r\n\r\n/) {
        IO::Select->new($s)->can_read(20) or die "$addr $path: no head";
        sysread($s, $buf, 65536, length $buf) or die "$addr $path: closed";
    }
    my ($head, $rest) = split /\r\n\r\n/, $buf, 2;
    my %h;
    $h{lc $1} = $2 while $head =~ /^([^:\r\n]+):\s*([^\r\n]*)/mg;
    my ($status) = $head =~ m{^HTTP/1\.1 (\d{3}) };
    my $o = { sock => $s, status => $status, h => \%h, rest => $rest,
              addr => $addr, path => $path };
    if ($status != 200 && $status != 101) {
        my $len = $h{'content-length'} // 0;
        while (length $rest < $len) {
            IO::Select->new($s)->can_read(10) or last;
            sysread($s, $rest, 65536, length $rest) or last;
        }
        $o->{problem} = eval { decode_json($rest) } || {};
        close $s;
        delete $o->{sock};
    }
    return $o;
}

my $tag = new_reqid('streams');
my @sse_paths;
sub nats_stream {
    my ($addr) = @_;
    return open_from($addr, '/v1/streams/nats/s',
                     'X-Example-Stream-Bytes' => 100,
                     'X-Example-Stream-Pause-Ms' => 20000);
}
sub sse_stream {
    my ($addr, $i) = @_;
    my $path = "/v1/realtime/sse/200/250/$tag-$addr-$i";
    push @sse_paths, $path;
    return open_from($addr, $path);
}

# --- before: every service answers a service_role call ----------------
my @calls = map { ["/v1/$_/echo", $_] }
            qw(auth db functions notifications ai provisioner control
               storage realtime);
sub every_service {
    my ($when) = @_;
    for my $c (@calls) {
        my $t0 = time;
        my $res = $ua->get("$base$c->[0]", apikey => $SERVICE);
        my $p = eval { decode_json($res->content) } || {};
        ok($res->code == 200,
           sprintf('%s: service_role call to %s answers 200 (%d %s in '
                   . '%.2f s)', $when, $c->[1], $res->code,
                   $p->{type} // '', time - $t0));
    }
}
every_service('before');

# --- one visitor, three addresses, four attempts each -----------------
my $h0 = health();
my $lim0 = $h0->{streams}{limited} // {};
my $conv0 = metric('aura_streams_converted_total');
my $log_from = error_log_size();
my $up_lines0 = upstream_stats()->{log_lines};

my %want = (
    '127.0.0.2' => [200, 200, 'address', 'address'],
    '127.0.0.3' => [200, 200, 'address', 'address'],
    '127.0.0.4' => ['actor', 'actor', 'actor', 'actor'],
);
my (@open, @refused, @wrong);
for my $addr (sort keys %want) {
    my @got = (nats_stream($addr), sse_stream($addr, 1),
               sse_stream($addr, 2), nats_stream($addr));
    for my $i (0 .. $#got) {
        my ($g, $w) = ($got[$i], $want{$addr}[$i]);
        if ($g->{status} == 200) {
            push @open, $g;
        }
        else {
            push @refused, $g;
        }
        my $ok = $w eq '200' ? $g->{status} == 200
                 : $g->{status} == 429
                   && ($g->{problem}{type} // '') eq '/problems/stream-limit'
                   && ($g->{problem}{detail} // '')
                      =~ ($w eq 'address' ? qr/client address/
                                          : qr/API key or user/);
        push @wrong, "$addr #$i $g->{path}: $g->{status} "
                     . ($g->{problem}{type} // '') . " (want $w)"
            unless $ok;
    }
}
is(scalar @open, 4, 'four streams open: two from each of .2 and .3 '
                    . '(the actor\'s cap)');
is(scalar @refused, 8, 'eight attempts refused');
is(join('; ', @wrong), '', 'each attempt got what its caps say');
is(scalar(grep { ($_->{h}{'retry-after'} // '') eq '5' } @refused), 8,
   'every refusal has Retry-After: 5');
is(scalar(grep { ($_->{h}{'content-type'} // '')
                 =~ m{^application/problem\+json} } @refused), 8,
   'as problem+json');

# --- while they are open ----------------------------------------------
every_service('4 streams open');

my $h = health();
my $st = $h->{streams} // {};
is($st->{services}{realtime}, 4, 'health: realtime has 4 streams open');
is($st->{planes}{data}, 4, 'health: the data plane has 4 streams open');
is($h->{in_flight}{services}{realtime}, 0,
   'health: realtime\'s in-flight slots are free (streams hold none, the '
   . 'converted NATS ones included)');
is($h->{in_flight}{planes}{data}, 4,
   'health: the streams hold the data plane\'s share of the workers');
is_deeply($st->{by_address}, { '127.0.0.2/32' => 2, '127.0.0.3/32' => 2 },
          'health: holders by address prefix');
my @actors = values %{ $st->{by_actor} // {} };
is_deeply(\@actors, [4], 'health: one actor (by its keyed hash) holds 4');
ok(!grep({ /ak_test/ } keys %{ $st->{by_actor} // {} }),
   'health: no key in the holders');
is(($st->{limited}{address} // 0) - ($lim0->{address} // 0), 4,
   'health: 4 refused by the address cap');
is(($st->{limited}{actor} // 0) - ($lim0->{actor} // 0), 4,
   'health: 4 refused by the actor cap');
is(metric('aura_streams_open{service="realtime"}'), 4,
   'metrics: aura_streams_open{service="realtime"} 4');
ok(metric('aura_stream_limited_total{cap="address"}') >= 4
   && metric('aura_stream_limited_total{cap="actor"}') >= 4,
   'metrics: aura_stream_limited_total by cap');
is(metric('aura_streams_converted_total') - $conv0, 2,
   'metrics: the two admitted NATS replies were converted at begin');
my @reached = sort map { m{(\Q$tag\E-[\d.]+-\d)$} ? $1 : () }
              map { $_->{path} } @{ upstream_log($up_lines0) };
my @admitted = sort map { $_->{path} =~ m{(\Q$tag\E-[\d.]+-\d)$} ? $1 : () }
               @open;
is(scalar @admitted, 2, 'two of the open streams are SSE');
is_deeply(\@reached, \@admitted,
          'the upstream received the admitted SSE requests, and no '
          . 'refused one');

my $log = error_log_since($log_from);
my $addr_lines = () = $log =~ /AURA01603: stream refused with 429 stream-limit: address 127\.0\.0\.[23]\/32 has 2 streams open, its cap \(AuraStreamMaxPerAddress 2;/g;
my $actor_lines = () = $log =~ /AURA01603: stream refused with 429 stream-limit: actor proj-a\/key:[0-9a-f]+ has 4 streams open, its cap \(AuraStreamMaxPerActor 4;/g;
ok($addr_lines >= 1 && $addr_lines <= 2,
   "the address cap's refusals logged at most once per 10 s ($addr_lines)");
ok($actor_lines >= 1 && $actor_lines <= 2,
   "the actor cap's refusals logged at most once per 10 s ($actor_lines)");
unlike($log, qr/ak_test_anon/, 'the key is not logged');

# --- closed: everything comes back ------------------------------------
close $_->{sock} for @open;
ok(wait_until(15, sub {
    my $x = health();
    ($x->{streams}{services}{realtime} // -1) == 0
        && ($x->{streams}{planes}{data} // -1) == 0
        && ($x->{in_flight}{planes}{data} // -1) == 0
        && !%{ $x->{streams}{by_address} // { x => 1 } } }),
   'closed by their clients, the streams give back every slot and record');
my $again = sse_stream('127.0.0.4', 3);
is($again->{status}, 200, 'the refused address may open a stream now');
close $again->{sock};

# --- a response that turns out long-lived (AuraStreamAfter 1s) ----------
# Three 8 s trickles (40 events 200 ms apart) on the storage route, which
# does not stream, from one address (cap 2): each starts as a short
# request; past 1 s two become streams, the third is ended there.
my $late0 = health()->{streams};
my @late = map { open_from('127.0.0.3', "/v1/storage/sse/40/200/$tag-late-$_") }
           1 .. 3;
is(join(',', map { $_->{status} } @late), '200,200,200',
   'late: three trickles start as short requests');
ok(wait_until(10, sub {
    my $x = health()->{streams};
    ($x->{late} // 0) - ($late0->{late} // 0) == 2
        && ($x->{late_cut} // 0) - ($late0->{late_cut} // 0) == 1 }),
   'late: past AuraStreamAfter two became streams, the third was cut '
   . '(its address had its share)');
my $lh = health();
is($lh->{streams}{services}{storage}, 2,
   'late: storage has 2 streams open');
ok(wait_until(5, sub { health()->{in_flight}{services}{storage} == 0 }),
   'late: and none of storage\'s in-flight slots');
my @done = map { (read_chunked($_->{sock}, $_->{rest}, sub { }))[1] } @late;
close $_->{sock} for @late;
is(join(',', sort @done), '0,1,1',
   'late: the two streams end normally, the cut one without its last '
   . 'chunk');
is(metric('aura_streams_late_total') - ($late0->{late} // 0), 2,
   'late: counted in aura_streams_late_total');
ok(wait_until(10, sub { (health()->{streams}{services}{storage} // -1)
                        == 0 }),
   'late: their slots are given back');

# --- a WebSocket upgrade on a route that does not stream ----------------
my $ws = open_from('127.0.0.2', '/v1/storage/ws', Upgrade => 'websocket',
                   Connection => 'Upgrade', 'Sec-WebSocket-Version' => 13,
                   'Sec-WebSocket-Key' => 'dGhlIHNhbXBsZSBub25jZQ==');
is($ws->{status}, 101, 'websocket: a tunnel opens on storage');
my $wh = health();
ok(($wh->{streams}{services}{storage} // -1) == 1
   && ($wh->{in_flight}{services}{storage} // -1) == 0,
   'websocket: it is a stream of storage, not one of its in-flight slots');
close $ws->{sock};
ok(wait_until(10, sub { (health()->{streams}{services}{storage} // -1)
                        == 0 }), 'websocket: closed, given back');

# --- a child killed while it holds streams -----------------------------
# No cleanup of its own runs: the parent gives back its stream slots and
# its records (they carry its pid), with its other holdings.
my $k0 = health()->{streams}{reclaimed} // 0;
my @held = map { sse_stream('127.0.0.4', "k$_") } 1 .. 2;
is(join(',', map { $_->{status} } @held), '200,200',
   'kill: two streams open from .4');
my $kids = health()->{in_flight}{children} // {};
my @holders = grep { $kids->{$_} > 0 } keys %$kids;
$log_from = error_log_size();
kill 'KILL', @holders;
close $_->{sock} for @held;
ok(wait_until(15, sub {
    my $x = health();
    ($x->{streams}{services}{realtime} // -1) == 0
        && ($x->{streams}{planes}{data} // -1) == 0
        && ($x->{in_flight}{planes}{data} // -1) == 0
        && !%{ $x->{streams}{by_address} // { x => 1 } }
        && ($x->{streams}{reclaimed} // 0) - $k0 == 2 }),
   'kill: the parent gave back the killed child\'s stream slots and its '
   . 'two records (' . join(',', @holders) . ')');
like(error_log_since($log_from), qr/AURA00702: child \d+ ended holding/,
     'kill: AURA00702 says so');
@held = map { sse_stream('127.0.0.4', "k2$_") } 1 .. 2;
is(join(',', map { $_->{status} } @held), '200,200',
   'kill: the address has its two streams again');
close $_->{sock} for @held;
ok(wait_until(10, sub { (health()->{streams}{services}{realtime} // -1)
                        == 0 }), 'kill: closed, given back');

# --- a maximum duration, enforced on a streamed NATS reply -------------
$log_from = error_log_size();
my $cut0 = metric('aura_streams_cut_total');
my $t0 = time;
my $m = open_from('127.0.0.2', '/v1/streams/natsmax/s',
                  'X-Example-Stream-Bytes' => 100,
                  'X-Example-Stream-Pause-Ms' => 20000);
is($m->{status}, 200, 'max duration: the stream opens');
my ($bytes, $complete) = read_chunked($m->{sock}, $m->{rest}, sub { });
my $secs = time - $t0;
close $m->{sock};
ok(!$complete, 'max duration: the body ends without its last chunk');
ok($secs >= 0.9 && $secs < 10,
   sprintf('max duration: ended at its 1 s limit, not the service\'s 20 s '
           . 'pause (%.2f s)', $secs));
ok(wait_until(5, sub { metric('aura_streams_cut_total') == $cut0 + 1 }),
   'max duration: counted in aura_streams_cut_total');
like(error_log_since($log_from),
     qr/AURA01600: stream on aura\.functions ended after \d+ bytes: its maximum duration of 1000 ms is over \(AuraStreamMaxDuration\)/,
     'max duration: logged with its tag');
ok(wait_until(10, sub { (health()->{streams}{services}{realtime} // -1)
                        == 0 }),
   'max duration: its slot is given back');
