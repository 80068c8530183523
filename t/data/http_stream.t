# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Streaming on the HTTP path (mod_proxy under the data plane's policy;
# the realtime and storage routes of conf/aura-routes.conf point at the
# test upstream):
# - SSE: the first event reaches the client while the upstream is still
#   streaming, not when it ends;
# - WebSocket: a round trip with the key in the header and with
#   ?apikey= (anon accepted, service_role refused before the upgrade);
# - 100 MiB up and down, byte-exact, while the summed RSS of the httpd
#   children grows by no more than a few MiB: it streams;
# - streaming timeouts: a healthy stream outlives the route's budget; a
#   silence longer than the idle timeout, a first byte later than its
#   timeout, and a stream longer than its maximum duration are cut.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Select;
use IO::Socket::INET;
use JSON::PP;
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest;
use Time::HiRes qw(time);
use Aura::Test qw(ANON_KEY problem_ok);
use Apache::TestRequest qw(GET);
use Aura::Stream qw(pattern_ok pattern_bytes open_stream read_chunked
                    httpd_children rss_sum);

use constant MiB => 1024 * 1024;
use constant SERVICE_KEY => 'ak_test_service_0123456789abcdef';

plan tests => 24;

Apache::TestRequest::module('aura_data');
my $hp = Apache::TestRequest::hostport();

# --- SSE ---------------------------------------------------------------------
# Three events 600 ms apart: the first must come long before the last.
my $t0 = time;
my ($sock, $status, $h, $rest) = open_stream($hp, 'GET',
    '/v1/realtime/sse/3/600', apikey => ANON_KEY);
is($status, 200, 'SSE: 200');
like($h->{'content-type'} // '', qr{^text/event-stream}, 'SSE: event stream');
my @arrivals;
my ($bytes, $complete) = read_chunked($sock, $rest, sub {
    my ($data) = @_;
    push @arrivals, time - $t0 for $data =~ /data: tick/g;
});
close $sock;
ok($complete && @arrivals == 3, 'SSE: three events, then the end');
ok(@arrivals == 3 && $arrivals[0] < 0.5 && $arrivals[2] > 1.1,
   sprintf('SSE: the first event at %.2f s, the last at %.2f s: passed on '
           . 'as produced', $arrivals[0] // -1, $arrivals[2] // -1));

# --- WebSocket -------------------------------------------------------------

# Opens a WebSocket at $path; returns ($sock, status line).
sub ws_open {
    my ($path, %hdr) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => $hp, Timeout => 10)
        or die "connect: $!";
    binmode $s;
    my $req = "GET $path HTTP/1.1\r\nHost: localhost\r\n"
              . "Upgrade: websocket\r\nConnection: Upgrade\r\n"
              . "Sec-WebSocket-Version: 13\r\n"
              . "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";
    $req .= "$_: $hdr{$_}\r\n" for sort keys %hdr;
    print $s "$req\r\n";
    my $head = '';
    while ($head !~ /\r\n\r\n/) {
        IO::Select->new($s)->can_read(10) or last;
        sysread($s, $head, 1, length $head) or last;
    }
    my ($line) = $head =~ /^(HTTP\/1\.1 \d{3}[^\r\n]*)/;
    return ($s, $line // '', $head);
}

# One masked text frame out, one frame back; returns its payload.
sub ws_echo {
    my ($s, $text) = @_;
    my @mask = (0x12, 0x34, 0x56, 0x78);
    my $masked = join '', map { chr(ord(substr($text, $_, 1)) ^ $mask[$_ % 4]) }
                              0 .. length($text) - 1;
    print $s chr(0x81) . chr(0x80 | length $text) . pack('C4', @mask)
             . $masked;
    my $buf = '';
    while (length $buf < 2 || length $buf < 2 + (ord(substr($buf, 1, 1)) & 0x7f)) {
        IO::Select->new($s)->can_read(10) or last;
        sysread($s, $buf, 4096, length $buf) or last;
    }
    return length $buf >= 2 ? substr($buf, 2, ord(substr($buf, 1, 1)) & 0x7f)
                            : '';
}

my ($ws, $line, $head) = ws_open('/v1/realtime/ws', apikey => ANON_KEY);
like($line, qr/^HTTP\/1\.1 101/, 'WebSocket, key in a header: 101');
like($head, qr/Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=/i,
     'the upstream\'s handshake passed through');
is(ws_echo($ws, 'hello over the gateway'), 'hello over the gateway',
   'a frame there and back');
close $ws;
($ws, $line) = ws_open('/v1/realtime/ws?apikey=' . ANON_KEY);
like($line, qr/^HTTP\/1\.1 101/, 'WebSocket, anon key in ?apikey=: 101');
is(ws_echo($ws, 'via query'), 'via query', 'and a round trip');
close $ws;
($ws, $line) = ws_open('/v1/realtime/ws?apikey=' . SERVICE_KEY);
like($line, qr/^HTTP\/1\.1 401/, 'a service_role key in ?apikey=: 401');
close $ws;
($ws, $line) = ws_open('/v1/realtime/ws');
like($line, qr/^HTTP\/1\.1 401/, 'no key: 401, no upgrade');
close $ws;

# --- 100 MiB up and down ---------------------------------------------------
my $N = 100 * MiB;
my @kids = httpd_children();
my $rss_before = rss_sum(@kids);
my $rss_peak = $rss_before;
sub sample { my $r = rss_sum(@kids); $rss_peak = $r if $r > $rss_peak }

($sock, $status, $h, $rest) = open_stream($hp, 'GET',
    "/v1/storage/download/$N", apikey => ANON_KEY);
is($status, 200, 'download: 200');
my ($got, $exact, $n) = (length $rest, pattern_ok($rest, 0), 0);
while ($got < $N) {
    IO::Select->new($sock)->can_read(30) or last;
    my $r = sysread($sock, my $buf, 65536) or last;
    $exact &&= pattern_ok($buf, $got);
    $got += $r;
    sample() if ++$n % 64 == 0;
}
close $sock;
ok($got == $N && $exact, "download: $N bytes, exact");

$sock = IO::Socket::INET->new(PeerAddr => $hp, Timeout => 30)
    or die "connect: $!";
binmode $sock;
print $sock "POST /v1/storage/upload HTTP/1.1\r\nHost: localhost\r\n"
            . "apikey: " . ANON_KEY . "\r\nContent-Length: $N\r\n"
            . "Connection: close\r\n\r\n";
for (my $off = 0, $n = 0; $off < $N; $off += 65536) {
    print $sock pattern_bytes($off, 65536);
    sample() if ++$n % 64 == 0;
}
my $resp = do { local $/; <$sock> } // '';
close $sock;
my ($body) = $resp =~ /\r\n\r\n(.*)\z/s;
my $up = eval { decode_json($body // '') } || {};
like($resp, qr/^HTTP\/1\.1 200/, 'upload: 200');
ok(($up->{bytes} // 0) == $N && $up->{pattern_ok},
   "upload: the upstream got $N bytes, exact");
diag(sprintf('100 MiB each way: children RSS %.1f MiB before, peak %.1f '
             . 'MiB (+%.2f MiB)', $rss_before / MiB, $rss_peak / MiB,
             ($rss_peak - $rss_before) / MiB));
SKIP: {
    skip 'RSS bound not meaningful under AddressSanitizer', 1
        if $ENV{AURA_TEST_SANITIZE};
    cmp_ok($rss_peak - $rss_before, '<=', 5 * MiB,
           'the children grew by at most 5 MiB: bodies stream');
}

# --- streaming timeouts (t/conf/aura-test-routes.inc) ----------------------

# Reads an SSE response; returns (status, events, complete, seconds).
sub sse {
    my ($path) = @_;
    my $t = time;
    my ($s, $st, $hd, $r) = open_stream($hp, 'GET', $path,
                                        apikey => ANON_KEY);
    my $events = 0;
    my ($b, $done) = $st == 200
        ? read_chunked($s, $r, sub { $events += () = $_[0] =~ /data: tick/g })
        : (0, 0);
    close $s;
    return ($st, $events, $done, time - $t);
}

my ($st, $events, $done, $secs) = sse('/v1/test/sse/sse/5/600');
ok($st == 200 && $events == 5 && $done,
   sprintf('5 events 600 ms apart (%.1f s) outlive a 1 s budget: a '
           . 'healthy stream is not cut', $secs));
($st, $events, $done, $secs) = sse('/v1/test/sse/sse/3/1500');
ok($st == 200 && $events == 1 && !$done,
   sprintf('a 1.5 s silence, idle timeout 1 s: cut after the first event '
           . '(%d event(s), %.1f s)', $events, $secs));
# 800 ms before the first byte: under the idle timeout (1 s), over the
# first-byte timeout (500 ms).
my $t1 = time;
problem_ok(GET('/v1/test/sse/slow/800', apikey => ANON_KEY), 504,
           'upstream-timeout', 'nothing for 800 ms, first-byte timeout 500 ms');
my $waited = time - $t1;
ok($waited < 0.75, sprintf('given up after %.2f s, at the first-byte '
                           . 'timeout', $waited));
($st, $events, $done, $secs) = sse('/v1/test/ssemax/sse/10/300');
ok($st == 200 && !$done && $events >= 3 && $events <= 6 && $secs < 2.5,
   sprintf('10 events 300 ms apart, at most 1.5 s: cut after %d events, '
           . '%.1f s', $events, $secs));
