# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Streamed NATS replies (docs/envelope.md, "Streamed replies"): the
# example service answers x-example-stream-bytes with a begin message and
# acknowledged chunks.  A 50 MiB stream read by a slow client arrives
# byte-exact while the httpd children's memory stays bounded by the
# flow-control window; a small stream keeps the begin message's status
# and headers; a gap in Aura-Seq, the idle budget running out and a
# client that goes away each stop the stream, logged with their tag, and
# the service is told to stop.  Data plane, /v1/functions/ (380 s budget)
# and /v1/test/slow/ (1 s).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET HEAD);
use IO::Socket::INET;
use IO::Select;
use Time::HiRes qw(time sleep);
use Aura::Test qw(ANON_KEY default_key exec_count new_reqid wait_until
                  t_dir error_log_size error_log_since);
use Aura::Stream qw(pattern_ok httpd_children rss_sum read_chunked);

plan tests => 9 + 3 + 5 + 8 + 6 + 4 + 3;

default_key();
Apache::TestRequest::module('aura_data');

use constant MiB => 1024 * 1024;

# The data plane's connection: a request with the anon key.
sub open_stream {
    my ($path, %hdr) = @_;
    return Aura::Stream::open_stream(Apache::TestRequest::hostport(),
                                     'GET', $path, apikey => ANON_KEY,
                                     %hdr);
}

sub service_log {
    open(my $fh, '<', "$ENV{AURA_TEST_RUN}/service.log") or return '';
    local $/;
    my $text = <$fh>;
    return defined $text ? $text : '';
}

# Whether the server closed the connection (EOF) within a few seconds.
sub closed_by_server {
    my ($sock) = @_;
    return 0 unless IO::Select->new($sock)->can_read(5);
    my $n = sysread($sock, my $junk, 1);
    return defined $n && $n == 0;
}

my $log_from = error_log_size();

# --- 1. a small stream arrives whole with the begin message's status ------

my $id = new_reqid('stream-small');
my $n = int(2.5 * MiB);
my $res = GET('/v1/functions/stream', 'X-Request-Id' => $id,
              'X-Example-Stream-Bytes' => $n, 'X-Example-Status' => 203,
              'X-Example-Reply-Header' => 'X-Stream-Test: yes');
is($res->code, 203, 'small stream: the begin message\'s status');
is($res->header('Content-Type'), 'application/octet-stream',
   'small stream: its Content-Type');
is($res->header('X-Stream-Test'), 'yes', 'small stream: its headers');
is($res->header('X-Example-Stream-Chunks'), 3, 'small stream: 3 chunks');
ok(!grep({ /^aura-/i } $res->headers->header_field_names),
   'small stream: no Aura-* header reaches the client');
is(length($res->content), $n, 'small stream: every byte');
ok(pattern_ok($res->content, 0), 'small stream: bytes exact');
is(exec_count($id), 1, 'small stream: executed once');
like(error_log_since($log_from),
     qr/AURA00065: stream on aura\.functions complete: 3 messages/,
     'small stream: completion logged');

# An empty stream, and HEAD (headers only; the stream is cancelled).
$res = GET('/v1/functions/stream', 'X-Example-Stream-Bytes' => 0);
ok($res->code == 200 && $res->content eq '', 'empty stream: 200, no body');
$id = new_reqid('stream-head');
$res = HEAD('/v1/functions/stream', 'X-Request-Id' => $id,
            'X-Example-Stream-Bytes' => 3 * MiB);
is($res->header('X-Example-Stream'), 1, 'HEAD: the begin message\'s headers');
ok(wait_until(5, sub { service_log() =~ /stream for \Q$id\E stopped .*cancelled by the gateway/ }),
   'HEAD: the service is told to stop');

# --- 2. 50 MiB to a slow client: exact bytes, bounded memory -----------------
#
# What a child holds for a stream is the service's window of messages in
# nats.c's pending list (one of them being written) plus nats.c's parse
# buffer for the message arriving: (window + 1) x max payload.  With the
# default window of 8 and 1 MiB messages that is 9 MiB, measured at 7 to
# 9 MiB: no room under the 8 MiB bound below.  A window of 4 gives a
# 5 MiB design bound, so a child that buffered beyond the window (up to
# the inbox's pending limit of 16 messages) would show.

my @kids = httpd_children();
my $rss_before = rss_sum(@kids);
my $rss_peak = $rss_before;
$id = new_reqid('stream-big');
$n = 50 * MiB;
my $t0 = time;
my ($sock, $status, $h, $rest) = open_stream('/v1/functions/big',
    'X-Request-Id' => $id, 'X-Example-Stream-Bytes' => $n,
    'X-Example-Stream-Window' => 4);
is($status, 200, 'big stream: 200');
my ($exact, $pieces) = (1, 0);
my ($got, $complete) = read_chunked($sock, $rest, sub {
    my ($data, $offset) = @_;
    $exact &&= pattern_ok($data, $offset);
    # Fast for the first 10 MiB, then slow for 20 MiB (about 64 KiB per
    # 25 ms) so that the gateway waits on the client with a full window.
    sleep 0.025 if $offset >= 10 * MiB && $offset < 30 * MiB;
    if (++$pieces % 4 == 0) {
        my $rss = rss_sum(@kids);
        $rss_peak = $rss if $rss > $rss_peak;
    }
});
close $sock;
my $took = time - $t0;
ok($complete && $got == $n, "big stream: all $n bytes and the last chunk");
ok($exact, 'big stream: bytes exact');
is(exec_count($id), 1, 'big stream: executed once');
diag(sprintf('big stream: %.1f s; children RSS %.1f MiB before, peak '
             . '%.1f MiB (+%.2f MiB)', $took, $rss_before / MiB,
             $rss_peak / MiB, ($rss_peak - $rss_before) / MiB));
SKIP: {
    # AddressSanitizer's quarantine keeps freed memory: RSS says nothing.
    skip 'RSS bound not meaningful under AddressSanitizer', 1
        if $ENV{AURA_TEST_SANITIZE};
    cmp_ok($rss_peak - $rss_before, '<=', 8 * MiB,
           'big stream: the children grew by at most 8 MiB');
}

# --- 3. a gap in Aura-Seq aborts the body ------------------------------------

$log_from = error_log_size();
$id = new_reqid('stream-gap');
$n = 5 * MiB;
($sock, $status, $h, $rest) = open_stream('/v1/functions/gap',
    'X-Request-Id' => $id, 'X-Example-Stream-Bytes' => $n,
    'X-Example-Stream-Gap' => 3);
is($status, 200, 'gap: the headers were already sent (200)');
$exact = 1;
($got, $complete) = read_chunked($sock, $rest, sub {
    $exact &&= pattern_ok(@_);
});
my $closed = closed_by_server($sock) || !$complete;
close $sock;
ok(!$complete, 'gap: no last chunk, the body is truncated');
is($got, 2 * $h->{'x-example-stream-chunk-size'},
   'gap: the two chunks before the gap, not a byte more');
ok($exact, 'gap: the bytes that came are exact');
ok($closed, 'gap: the connection is closed');
like(error_log_since($log_from),
     qr/AURA00060: stream on aura\.functions aborted after \d+ bytes: gap in Aura-Seq, 4 arrived where 3 was expected/,
     'gap: logged with its tag');
ok(wait_until(5, sub { service_log() =~ /stream for \Q$id\E stopped .*cancelled by the gateway/ }),
   'gap: the service is told to stop');
is(exec_count($id), 1, 'gap: executed once');

# --- 4. the idle budget (1 s on /v1/test/slow/) runs out between messages --

$log_from = error_log_size();
$id = new_reqid('stream-idle');
($sock, $status, $h, $rest) = open_stream('/v1/test/slow/idle',
    'X-Request-Id' => $id, 'X-Example-Stream-Bytes' => int(1.5 * MiB),
    'X-Example-Stream-Pause-Ms' => 2500);
is($status, 200, 'idle: 200 and the first chunk');
$t0 = time;
($got, $complete) = read_chunked($sock, $rest, sub { });
my $waited = time - $t0;
close $sock;
ok(!$complete && $got == $h->{'x-example-stream-chunk-size'},
   'idle: truncated after the first chunk');
ok($waited < 2.4, sprintf('idle: cut after the 1 s budget (%.1f s), not '
                          . 'after the service\'s pause', $waited));
like(error_log_since($log_from),
     qr/AURA00061: stream on aura\.functions aborted after \d+ bytes: no message within the idle budget of 1000 ms/,
     'idle: logged with its tag');
ok(wait_until(5, sub { service_log() =~ /stream for \Q$id\E stopped .*cancelled by the gateway/ }),
   'idle: the service is told to stop');
is(exec_count($id), 1, 'idle: executed once');

# --- 5. a client that goes away stops the stream -----------------------------

$log_from = error_log_size();
$id = new_reqid('stream-gone');
($sock, $status, $h, $rest) = open_stream('/v1/functions/gone',
    'X-Request-Id' => $id, 'X-Example-Stream-Bytes' => 40 * MiB);
is($status, 200, 'client gone: 200');
my $read = length $rest;
while ($read < MiB) {
    IO::Select->new($sock)->can_read(10) or last;
    my $k = sysread($sock, my $junk, 65536) or last;
    $read += $k;
}
close $sock;   # with unread data: the gateway's next write fails
ok(wait_until(10, sub { error_log_since($log_from) =~ /AURA00064: client went away after \d+ bytes of the stream on aura\.functions/ }),
   'client gone: logged with its tag');
ok(wait_until(5, sub { service_log() =~ /stream for \Q$id\E stopped after (\d+) of \d+ bytes: cancelled by the gateway/ }),
   'client gone: the service is told to stop');
my ($sent) = service_log() =~ /stream for \Q$id\E stopped after (\d+) of/;
ok(defined $sent && $sent < 40 * MiB, 'client gone: the service did not '
   . 'send the whole body (' . ($sent // '?') . ' bytes)');

# --- 6. plain replies are unchanged on the same routes ----------------------

$res = GET('/v1/functions/plain', 'X-Example-Body-Size' => 1000);
ok($res->code == 200 && length($res->content) == 1000
   && !$res->header('X-Example-Stream'), 'a plain reply is still one message');
$res = GET('/v1/functions/plain',
           'X-Example-Reply-Header' => 'Aura-Stream: end');
is($res->code, 502, 'Aura-Stream: end without a stream is a malformed reply');
$res = GET('/v1/functions/plain',
           'X-Example-Reply-Header' => 'Aura-Stream: sideways');
is($res->code, 502, 'an unknown Aura-Stream value is a malformed reply');
