# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# HTTP/2 streams and the per-address rules (VirtualHost aura_h2s: h2c by
# prior knowledge, AuraMaxConnectionsPerAddress 3), in every pass of
# the suite (it speaks HTTP/2 itself: nghttp and Aura::H2):
#
# - a connection with 100 streams is one connection for the cap: with
#   two other connections held, all 100 are answered; a fourth
#   connection is then closed at once (the cap is live);
# - 100 concurrent streams are 100 requests for the per-address rate
#   limit: of a zone's twin spent over HTTP/1.1 as many pass as pass
#   here, the rest are 429;
# - a stream the client resets (RST_STREAM) while its request waits on
#   the service is a client that left (AURA00800, docs/resilience.md),
#   the connection and its other streams carry on;
# - the gateway's refusals on a stream (401 before the route is
#   authenticated, 400 from the raw path check in post_read_request)
#   are problem+json with the request id, as on HTTP/1.1;
# - a streamed reply arrives whole, byte for byte;
# - the HTTP path's breaker takes every stream's verdict (two 503s open
#   it, a failed probe reopens it, a good one closes it);
# - a WebSocket over HTTP/2 (RFC 8441, H2WebSockets on) goes through the
#   realtime route: authenticated, the gateway's headers on its 200,
#   the tunnel echoes.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Select;
use IO::Socket::INET;
use HTTP::Request ();
use LWP::UserAgent ();
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Aura::Test qw(ANON_KEY new_reqid exec_count wait_until error_log_size
                  error_log_since json_body);
use Aura::H2 ();
use Aura::Stream qw(pattern_ok);
use Protocol::HTTP2::Client;
use Protocol::HTTP2::Constants qw(:errors);

plan tests => 35;

my $port = Apache::Test::config()->{vhosts}{aura_h2s}{port}
    or die 'no aura_h2s vhost';
my $base = "http://127.0.0.1:$port";
my $log_from = error_log_size();

# One request as an HTTP/2 stream (h2c, prior knowledge).
sub h2 {
    my ($method, $path, @hdr) = @_;
    local $Aura::H2::PROTO = 'h2c';
    local $Aura::H2::FORCE = 1;
    my $req = HTTP::Request->new($method, "$base$path", [@hdr]);
    return Aura::H2->new('http', LWP::UserAgent->new)
        ->request($req, undef, undef, undef, 30);
}

# nghttp: $n streams of one GET at once on one connection; returns the
# statuses and the number of connections it opened.
sub nghttp_streams {
    my ($path, $n, @hdr) = @_;
    my @cmd = ('nghttp', '-n', '-v', '-t', 20, '-m', $n,
               (map { ('-H', $_) } @hdr), "$base$path");
    open(my $fh, '-|', @cmd) or die "nghttp: $!";
    my (@st, $conns);
    while (<$fh>) {
        push @st, $1 if /recv \(stream_id=\d+\) :status: (\d+)/;
        $conns++ if /^\[\s*[\d.]+\] Connected/;
    }
    close $fh;
    return (\@st, $conns || 0);
}

# A connection httpd holds: the start of a request line, so that the
# kernel hands it over (TCP_DEFER_ACCEPT waits for the first bytes).
sub held_connection {
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
                                  Timeout => 5) or die "connect: $!";
    syswrite($s, "GET /health HTTP/1.1\r\n");
    return $s;
}

# A held connection the server kept (not closed by the cap at once).
sub hold_one {
    for (1 .. 20) {
        my $s = held_connection();
        return $s unless closed_at_once($s, 0.3);
        close $s;
    }
    die 'no connection could be held';
}

# A connection for one exchange: nothing sent yet.
sub new_connection {
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
                                  Timeout => 5) or die "connect: $!";
    return $s;
}

# Closed by the server at once: no response, EOF (or a reset: the
# request line sent was never read)?
sub closed_at_once {
    my ($s, $secs) = @_;
    return 0 unless IO::Select->new($s)->can_read($secs || 3);
    my $n = sysread($s, my $buf, 1);
    return !$n;
}

# --- the connection cap counts the connection, not its streams -----------

SKIP: {
    skip 'nghttp (nghttp2-client) is not installed', 5
        unless grep { -x "$_/nghttp" } split /:/, $ENV{PATH};
    my @held = map { hold_one() } 1 .. 2;
    my ($st, $conns) = nghttp_streams('/health', 100);
    is($conns, 1, 'nghttp: one connection');
    is(scalar(grep { $_ == 200 } @$st), 100,
       'cap 3, two connections held: all 100 streams of the third answered');
    # (The connection nghttp closed may be counted a moment longer.)
    push @held, hold_one();
    # The held ones are counted once a worker took them, a moment after
    # connect: a fourth is refused within a few tries.
    ok(wait_until(5, sub {
        my $fourth = held_connection();
        my $closed = closed_at_once($fourth, 0.3);
        close $fourth;
        $closed;
    }), 'the cap is live: a fourth connection is closed');
    close $_ for @held;
    like(error_log_since($log_from),
         qr/AURA00900: connection from 127\.0\.0\.1 to [^ ]+ closed at once: the address has 3 open/,
         'the refusal is logged (AURA00900, 3 open)');

    # --- 100 streams are 100 requests for the per-address limit ----------
    ok(wait_until(5, sub {
        my $s = new_connection();
        my $open = !closed_at_once_quick($s);
        close $s;
        $open;
    }), 'the held connections are counted out');
}

sub closed_at_once_quick {
    my ($s) = @_;
    syswrite($s, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    return 1 unless IO::Select->new($s)->can_read(3);
    my $n = sysread($s, my $buf, 64);
    return !($n && $buf =~ m{^HTTP/1\.1 200});
}

# A connection the cap closes (the last ones may still be counted while
# they linger) carried no request: it is not counted, and tried again.
my ($n_plain, $tries) = (0, 0);
while ($tries++ < 60) {
    my $s = new_connection();
    syswrite($s, "GET /v1/h2s/plain/x HTTP/1.1\r\nHost: x\r\n"
                 . "Connection: close\r\n\r\n");
    IO::Select->new($s)->can_read(5);
    sysread($s, my $buf, 64);
    close $s;
    my ($code) = ($buf // '') =~ m{^HTTP/1\.1 (\d{3})} or next;
    last if $code == 429;
    $n_plain++;
}
SKIP: {
    skip 'nghttp (nghttp2-client) is not installed', 3
        unless grep { -x "$_/nghttp" } split /:/, $ENV{PATH};
    my ($st) = nghttp_streams('/v1/h2s/streams/x', 100);
    is(scalar @$st, 100, '100 concurrent streams all answered');
    my $passed = grep { $_ != 429 } @$st;
    ok($n_plain >= 5 && $n_plain < 20 && $tries <= 60,
       "HTTP/1.1: $n_plain requests passed the twin zone");
    is($passed, $n_plain,
       "as many of the 100 streams passed ($passed); the rest were 429");
}

# Exchange frames between $client and socket $s until $until->() holds
# or $secs pass.
sub pump_frames {
    my ($client, $s, $sel, $until, $secs) = @_;
    my $deadline = time + $secs;
    while (!$until->() && time < $deadline) {
        while (my $f = $client->next_frame) { syswrite($s, $f) }
        last if $until->();
        next unless $sel->can_read(0.1);
        my $n = sysread($s, my $buf, 65536) or last;
        $client->feed($buf);
    }
    while (my $f = $client->next_frame) { syswrite($s, $f) }
}

# --- RST_STREAM: the client left ------------------------------------------

{
    my $id = new_reqid('h2-rst');
    my $s = new_connection();
    my $sel = IO::Select->new($s);
    my ($done1, $status3);
    my $client = Protocol::HTTP2::Client->new(keepalive => 1);
    my $pump = sub { pump_frames($client, $s, $sel, @_) };
    $client->request(':scheme' => 'http', ':authority' => "127.0.0.1:$port",
        ':path' => '/v1/h2s/slow/x', ':method' => 'GET',
        headers => [ apikey => ANON_KEY, 'x-request-id' => $id,
                     'x-example-delay-ms' => 4000 ],
        on_done => sub { $done1 = 'done' },
        on_error => sub { $done1 = "reset $_[0]" });
    $pump->(sub { 0 }, 0.5);
    ok(wait_until(3, sub { exec_count($id) == 1 }),
       'reset: the request reached the service');
    # Stream 1 (the client's first); the connection stays open.
    $client->{con}->stream_error(1, CANCEL);
    $pump->(sub { 0 }, 0.2);
    ok(wait_until(3, sub {
        error_log_since($log_from) =~ /AURA00800: client gone while waiting on/
    }), 'reset: the wait is given up at once (AURA00800), not after 4 s');
    $client->request(':scheme' => 'http', ':authority' => "127.0.0.1:$port",
        ':path' => '/health', ':method' => 'GET',
        on_done => sub { $status3 = { @{ $_[0] } }->{':status'} });
    $pump->(sub { defined $status3 }, 5);
    is($status3, 200, 'reset: the same connection serves its next stream');
    close $s;
}

# --- refusals on a stream: problem+json with the request id --------------

for my $c (
    [ 'no key', '/v1/functions/x', [], 401, 'missing-key' ],
    [ 'raw path check', '/v1/functions/a/%2e%2e/b', [ apikey => ANON_KEY ],
      400, 'invalid-request' ],
) {
    my ($name, $path, $hdr, $status, $type) = @$c;
    my $id = new_reqid('h2-problem');
    my $res = h2('GET', $path, @$hdr, 'X-Request-Id' => $id);
    my $p = json_body($res) || {};
    is($res->code, $status, "$name: $status on a stream");
    like($res->header('Content-Type') // '', qr{^application/problem\+json},
         "$name: problem+json");
    is($p->{type}, "/problems/$type", "$name: $type");
    is($p->{request_id}, $id, "$name: the request id in the body");
    is($res->header('X-Request-Id'), $id, "$name: and in the header");
}

# --- a streamed reply arrives whole ---------------------------------------

{
    my $id = new_reqid('h2-stream');
    my $n = 3 * 1024 * 1024 + 17;
    my $res = h2('GET', '/v1/functions/big', apikey => ANON_KEY,
                 'X-Request-Id' => $id, 'X-Example-Stream-Bytes' => $n);
    is($res->code, 200, 'streamed reply over HTTP/2: 200');
    is(length($res->content), $n, "streamed reply: $n bytes");
    ok(pattern_ok($res->content, 0), 'streamed reply: byte for byte');
}

# --- the HTTP path's breaker hears every stream's answer ------------------

# mod_http2 marks a stream's connection aborted once the client has the
# answer, and mod_proxy then says DONE: the verdict must still be taken
# (it was dropped: failures never counted, probes given back unjudged).
{
    my $state = sub {
        my $res = h2('GET', '/health');
        ((json_body($res) || {})->{breakers}{provisioner} || {})->{state}
            // '';
    };
    my $from = error_log_size();
    h2('GET', '/v1/h2s/brk/status/503', apikey => ANON_KEY) for 1 .. 2;
    ok(wait_until(3, sub { $state->() eq 'open' }),
       'HTTP path over HTTP/2: two 503s open the breaker');
    # Refused (breaker-open) until the cooldown ends, then one probe.
    my $probe;
    ok(wait_until(3, sub {
        $probe = h2('GET', '/v1/h2s/brk/status/503', apikey => ANON_KEY);
        ((json_body($probe) || {})->{type} // '') ne '/problems/breaker-open'
    }), 'after the cooldown a probe reaches the upstream');
    is($probe->code, 503, 'the probe is answered 503');
    ok(wait_until(3, sub { $state->() eq 'open' }),
       'and the failed probe reopens it (judged, not given back)');
    ok(wait_until(3, sub {
        h2('GET', '/v1/h2s/brk/status/200', apikey => ANON_KEY)->code == 200
    }) && wait_until(3, sub { $state->() eq 'closed' }),
       'a good probe closes it');
    my $log = error_log_since($from);
    my $opened = () = $log =~ /AURA00090: breaker of service provisioner opened/g;
    is($opened, 2, 'opened twice (AURA00090)');
}

# --- WebSocket over HTTP/2 (RFC 8441 extended CONNECT) --------------------

# A masked text frame, and the payload of the first frame in $buf.
sub ws_frame {
    my ($text) = @_;
    my @mask = (0x12, 0x34, 0x56, 0x78);
    my $masked = join '', map { chr(ord(substr($text, $_, 1)) ^ $mask[$_ % 4]) }
                              0 .. length($text) - 1;
    return chr(0x81) . chr(0x80 | length $text) . pack('C4', @mask) . $masked;
}
sub ws_payload {
    my ($buf) = @_;
    return undef if length $buf < 2;
    my $len = ord(substr($buf, 1, 1)) & 0x7f;
    return length $buf >= 2 + $len ? substr($buf, 2, $len) : undef;
}

sub ws_over_h2 {
    my ($id, @auth) = @_;
    my $s = new_connection();
    my $sel = IO::Select->new($s);
    my $client = Protocol::HTTP2::Client->new(keepalive => 1);
    my $con = $client->{con};
    my ($head, $data, $reset) = (undef, '', undef);
    my $pump = sub { pump_frames($client, $s, $sel, @_) };
    $con->enqueue_raw($con->preface_encode);
    $con->enqueue(Protocol::HTTP2::Constants::SETTINGS, 0, 0, {});
    $con->preface(1);
    my $sid = $con->new_stream;
    $con->stream_frame_cb($sid, Protocol::HTTP2::Constants::HEADERS,
                          sub { $head = { @{ $_[0] } } });
    $con->stream_frame_cb($sid, Protocol::HTTP2::Constants::DATA,
                          sub { $data .= $_[0] });
    $con->send_headers($sid, [
        ':method' => 'CONNECT', ':protocol' => 'websocket',
        ':scheme' => 'http', ':path' => "/v1/realtime/ws/$id",
        ':authority' => "127.0.0.1:$port",
        'sec-websocket-version' => 13, 'x-request-id' => $id, @auth ], 0);
    $pump->(sub { defined $head }, 10);
    my $echo;
    if ($head && ($head->{':status'} // 0) == 200) {
        $con->send_data($sid, ws_frame("ws over h2"), 0);
        $pump->(sub { defined ws_payload($data) }, 10);
        $echo = ws_payload($data);
    }
    close $s;
    return ($head || {}, $echo);
}

{
    my $id = new_reqid('h2-ws');
    my ($head, $echo) = ws_over_h2($id, apikey => ANON_KEY,
        'x-upstream-reply-header' => 'X-Request-Id: upstream-id',
        'x-upstream-reply-header-2' => 'X-Frame-Options: ALLOWALL');
    is($head->{':status'}, 200, 'WebSocket over HTTP/2: 200 (the 101 of RFC 8441)');
    is($head->{'x-request-id'}, $id,
       'WebSocket over HTTP/2: the gateway\'s request id, not the upstream\'s')
        or diag(join ' ', %$head);
    is($head->{'x-frame-options'}, 'DENY',
       'WebSocket over HTTP/2: the gateway\'s security headers');
    is($echo, 'ws over h2', 'WebSocket over HTTP/2: the tunnel echoes a frame');
    $id = new_reqid('h2-ws-nokey');
    ($head) = ws_over_h2($id);
    is($head->{':status'}, 401, 'WebSocket over HTTP/2 without a key: 401');
}
