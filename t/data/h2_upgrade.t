# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# HTTP/1.1 "Upgrade: h2c" on a data plane (VirtualHost aura_h2c,
# Protocols h2c http/1.1): httpd answers 101 and mod_http2 replays the
# request as stream 1 of the new HTTP/2 session.  The request must be
# authenticated once, with the key the client sent, counted once by the
# per-address limit, and executed once by the service; a request without
# a key is refused on stream 1 as on HTTP/1.1; and a request whose
# upgrade something cancels after the access check is refused, never
# served unchecked (docs/http2.md).  Spoken three ways: hand-made bytes
# on a socket, curl --http2 (which upgrades a GET to http://) and
# nghttp -u.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Socket::INET;
use IO::Select;
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Aura::Test qw(ANON_KEY new_reqid exec_count error_log_size
                  error_log_since);
use JSON::PP ();

plan tests => 28;

my $port = Apache::Test::config()->{vhosts}{aura_h2c}{port}
    or die 'no aura_h2c vhost';
my $log_from = error_log_size();

# --- hand-made bytes ------------------------------------------------------

sub read_until {
    my ($s, $buf, $cond, $secs) = @_;
    my $sel = IO::Select->new($s);
    my $deadline = time + $secs;
    while (!$cond->($$buf) && time < $deadline) {
        last unless $sel->can_read(0.5) || time < $deadline;
        my $n = sysread($s, my $chunk, 65536);
        last if defined $n && $n == 0;
        $$buf .= $chunk if $n;
    }
    return $cond->($$buf);
}

# One GET with Upgrade: h2c; then the HTTP/2 preface and an empty
# SETTINGS frame; then the frames of stream 1 until it ends.  Returns
# (the HTTP/1.1 status line, the body of stream 1, whether it ended).
sub upgrade_raw {
    my ($path, @hdr) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
                                  Timeout => 10) or die "connect: $!";
    my $req = "GET $path HTTP/1.1\r\nHost: 127.0.0.1:$port\r\n"
        . "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
        . "HTTP2-Settings: AAMAAABkAAQAAP__\r\n";
    while (my ($k, $v) = splice(@hdr, 0, 2)) {
        $req .= "$k: $v\r\n";
    }
    syswrite($s, "$req\r\n");
    my $buf = '';
    read_until($s, \$buf, sub { $_[0] =~ /\r\n\r\n/ }, 10);
    my ($head, $rest) = split(/\r\n\r\n/, $buf, 2);
    my ($line) = split(/\r\n/, $head // '');
    $rest //= '';
    syswrite($s, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                 . pack('CnCCN', 0, 0, 4, 0, 0));
    my ($body, $ended) = ('', 0);
    my $deadline = time + 10;
    while (!$ended && time < $deadline) {
        if (length $rest < 9 || length $rest < 9 + frame_len($rest)) {
            read_until($s, \$rest, sub {
                length $_[0] >= 9 && length $_[0] >= 9 + frame_len($_[0])
            }, $deadline - time) or last;
        }
        my $len = frame_len($rest);
        my ($type, $flags, $sid) = unpack('x3CCN', $rest);
        $sid &= 0x7fffffff;
        my $payload = substr($rest, 9, $len);
        substr($rest, 0, 9 + $len) = '';
        if ($type == 4 && !($flags & 1)) {   # SETTINGS: acknowledge
            syswrite($s, pack('CnCCN', 0, 0, 4, 1, 0));
        }
        next unless $sid == 1;
        $body .= $payload if $type == 0;
        $ended = 1 if ($type == 0 || $type == 1) && ($flags & 1);
        $ended = 1 if $type == 3;           # RST_STREAM
    }
    close $s;
    return ($line // '', $body, $ended);
}

sub frame_len { my ($l1, $l2) = unpack('Cn', $_[0]); ($l1 << 16) | $l2 }

sub decode { my $d = eval { JSON::PP->new->decode($_[0]) }; $d || {} }

# The key is sent, the service sees the key's identity, once.
my $id = new_reqid('h2c-raw');
my ($line, $body, $ended) = upgrade_raw('/v1/functions/who',
    apikey => ANON_KEY, 'X-Request-Id' => $id, 'X-Example-Headers' => 'json');
like($line, qr{^HTTP/1\.1 101}, 'raw: 101 Switching Protocols');
ok($ended, 'raw: stream 1 ended');
my $h = decode($body);
is_deeply($h->{'Aura-Project'}, ['proj-a'],
          'raw: stream 1 reached the service with the key\'s project');
is_deeply($h->{'Aura-Key-Role'}, ['anon'], 'raw: the anon key\'s role');
ok(!exists $h->{apikey}, 'raw: the key itself is not forwarded');
is(exec_count($id), 1, 'raw: the service executed it once');

# No key: refused on stream 1, as on HTTP/1.1.
$id = new_reqid('h2c-nokey');
($line, $body, $ended) = upgrade_raw('/v1/functions/who',
                                     'X-Request-Id' => $id);
like($line, qr{^HTTP/1\.1 101}, 'raw, no key: 101');
my $p = decode($body);
is($p->{type}, '/problems/missing-key', 'raw, no key: missing-key');
is($p->{request_id}, $id, 'raw, no key: the request id in the problem');
is(exec_count($id), 0, 'raw, no key: the service never ran');

# --- curl --http2: the Upgrade dance of a real client ---------------------

# Returns (the statuses in order, the last body).
sub curl_h2 {
    my ($path, @hdr) = @_;
    my @cmd = ('curl', '-sS', '-i', '--http2', '--max-time', 10);
    push @cmd, '-H', shift(@hdr) . ': ' . shift(@hdr) while @hdr;
    open(my $fh, '-|', @cmd, "http://127.0.0.1:$port$path")
        or die "curl: $!";
    local $/;
    my $out = <$fh> // '';
    close $fh;
    my @status = $out =~ m{^HTTP/([\d.]+) (\d+)}mg;
    my @pairs;
    push @pairs, [ shift @status, shift @status ] while @status;
    my ($last) = $out =~ /.*\r\n\r\n(.*)\z/s;
    return (\@pairs, $last // '');
}

$id = new_reqid('h2c-curl');
my ($st, $cbody) = curl_h2('/v1/functions/who', apikey => ANON_KEY,
    'X-Request-Id' => $id, 'X-Example-Headers' => 'json');
is_deeply($st, [ [ '1.1', 101 ], [ '2', 200 ] ],
          'curl: 101 on HTTP/1.1, then 200 on HTTP/2');
is_deeply(decode($cbody)->{'Aura-Project'}, ['proj-a'],
          'curl: the service saw the key\'s project');
is(exec_count($id), 1, 'curl: executed once');

$id = new_reqid('h2c-curl-nokey');
($st, $cbody) = curl_h2('/v1/functions/who', 'X-Request-Id' => $id);
is_deeply($st, [ [ '1.1', 101 ], [ '2', 401 ] ],
          'curl, no key: 401 on stream 1');
is(decode($cbody)->{type}, '/problems/missing-key', 'curl: missing-key');

# Counted once by the per-address limit: two zones of the same size, one
# spent over HTTP/1.1, one over upgrades; as many requests pass each.
sub plain_status {
    my ($path) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
                                  Timeout => 10) or die "connect: $!";
    syswrite($s, "GET $path HTTP/1.1\r\nHost: 127.0.0.1\r\napikey: "
                 . ANON_KEY . "\r\nConnection: close\r\n\r\n");
    my $buf = '';
    read_until($s, \$buf, sub { $_[0] =~ /\r\n/ }, 10);
    close $s;
    return $buf =~ m{^HTTP/1\.1 (\d+)} ? $1 : 0;
}
my ($n_plain, $n_up) = (0, 0);
for (1 .. 12) {
    my $code = plain_status("/v1/h2c/plain/x");
    last if $code == 429;
    $n_plain++;
}
my @up_ids;
for (1 .. 12) {
    my $uid = new_reqid('h2c-zone');
    my ($sts) = curl_h2('/v1/h2c/upgrade/x', apikey => ANON_KEY,
                        'X-Request-Id' => $uid);
    last if ($sts->[-1] || [])->[1] == 429;
    push @up_ids, $uid;
    $n_up++;
}
ok($n_plain >= 2 && $n_plain < 12, "HTTP/1.1: $n_plain requests passed the zone");
is($n_up, $n_plain, 'upgraded: as many passed the same zone (counted once)');
is(scalar(grep { exec_count($_) == 1 } @up_ids), $n_up,
   'upgraded: each admitted request executed once');

# Something drops the Upgrade header after the access check (here
# RequestHeader unset at fixups): httpd does not switch, and the request
# that skipped the policy is refused (500), never served.
$id = new_reqid('h2c-dropped');
($st, $cbody) = curl_h2('/v1/h2c/dropped/x', 'X-Request-Id' => $id);
is_deeply($st, [ [ '1.1', 500 ] ], 'dropped upgrade: 500 on HTTP/1.1');
my $dp = decode($cbody);
is($dp->{status}, 500, 'dropped upgrade: problem+json');
is($dp->{request_id}, $id, 'dropped upgrade: with the request id');
is(exec_count($id), 0, 'dropped upgrade: the service never ran');

# --- nghttp -u ------------------------------------------------------------

SKIP: {
    skip 'nghttp (nghttp2-client) is not installed', 4
        unless grep { -x "$_/nghttp" } split /:/, $ENV{PATH};
    $id = new_reqid('h2c-nghttp');
    open(my $fh, '-|', 'nghttp', '-u', '-v', '-t', 10,
         '-H', 'apikey: ' . ANON_KEY, '-H', "x-request-id: $id",
         '-H', 'x-example-headers: json',
         "http://127.0.0.1:$port/v1/functions/who") or die "nghttp: $!";
    local $/;
    my $out = <$fh> // '';
    close $fh;
    like($out, qr{HTTP Upgrade response}i, 'nghttp -u: upgraded');
    like($out, qr{:status: 200}, 'nghttp -u: 200 on stream 1');
    like($out, qr{"Aura-Project":\s*\[\s*"proj-a"}, 'nghttp -u: the key\'s project');
    is(exec_count($id), 1, 'nghttp -u: executed once');
}

# The log: the 101 requests left their policy to stream 1 (AURA01420),
# and the dropped upgrade was refused (AURA01421).
my $log = error_log_since($log_from);
like($log, qr/AURA01420.*policy runs on HTTP\/2 stream 1/,
     'AURA01420 logged for the upgraded requests');
like($log, qr/AURA01421.*did not switch/,
     'AURA01421 logged for the dropped upgrade');
