# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Issue #15, point 7: stream acknowledgements and cancels go only to
# subjects the gateway allows (AuraStreamAckPrefix, _INBOX. by default,
# never its own reply inbox), never to one a service names elsewhere.
# The example service gives a stream message the reply subject a test
# chooses (x-example-stream-ack-subject, -ack-at); a NATS client of this
# test, on a raw socket, subscribes to those subjects and must see
# nothing published there, while the client gets a 502 (begin message)
# or an aborted body (later message), AURA00500 is logged once and
# /metrics counts it.  A subject under a Location's own prefix is acked.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Select;
use IO::Socket::INET;
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Time::HiRes qw(sleep);
use Aura::Test qw(ANON_KEY new_reqid problem_ok wait_until
                  error_log_size error_log_since);
use Aura::Stream qw(read_chunked);

plan tests => 1 + 6 + 4 + 7 + 9 + 6 + 2;

Apache::TestRequest::module('aura_data');
use constant MiB => 1024 * 1024;

# --- a NATS subscriber on a raw socket ------------------------------------

my $nats = IO::Socket::INET->new(
    PeerAddr => "127.0.0.1:$ENV{AURA_TEST_NATS_PORT}", Timeout => 10)
    or die "nats: $!";
binmode $nats;
my $nbuf = '';
my @seen;     # [subject, headers+payload]

# Reads what the server sent within $secs, answering its PINGs; returns
# when $until (a regex on the protocol lines) matched, or the time is up.
sub nats_pump {
    my ($secs, $until) = @_;
    my $deadline = time + $secs;
    for (;;) {
        while ($nbuf =~ /\A([^\r\n]*)\r\n/) {
            my $line = $1;
            if ($line =~ /^H?MSG (\S+) \S+(?: \S+)?(?: \d+)? (\d+)$/) {
                my ($subj, $len) = ($1, $2);
                last if length($nbuf) < length($line) + 2 + $len + 2;
                substr($nbuf, 0, length($line) + 2, '');
                push @seen, [ $subj, substr($nbuf, 0, $len + 2, '') ];
                next;
            }
            substr($nbuf, 0, length($line) + 2, '');
            print $nats "PONG\r\n" if $line eq 'PING';
            return 1 if $until && $line =~ $until;
        }
        my $left = $deadline - time;
        return 0 if $left <= 0;
        next unless IO::Select->new($nats)->can_read($left);
        sysread($nats, $nbuf, 65536, length $nbuf) or die 'nats closed';
    }
}

# Everything published before now has reached us once our PING is back
# from the server (one connection: in order), after $settle seconds for
# the gateway's publications to be made at all.
sub nats_sync {
    my ($settle) = @_;
    sleep $settle if $settle;
    print $nats "PING\r\n";
    nats_pump(5, qr/^PONG$/) or die 'no PONG';
}

nats_pump(5, qr/^INFO /) or die 'no INFO from nats';
print $nats 'CONNECT {"verbose":false,"pedantic":false,"headers":true,'
    . "\"no_responders\":true,\"name\":\"stream_acks.t\"}\r\n"
    . "SUB aura.keys.invalidate 1\r\nSUB t.stolen.> 2\r\n"
    . "SUB t.acks.> 3\r\nSUB aura.functions.evil 4\r\n";
nats_sync(0);

sub seen_on {
    my ($re) = @_;
    return grep { $_->[0] =~ $re } @seen;
}

sub metric {
    my $res = GET('/metrics', Authorization => 'Bearer ' . do {
        open(my $fh, '<', $ENV{AURA_TEST_METRICS_TOKEN_FILE}) or die $!;
        local $/;
        my $t = <$fh>;
        $t =~ s/\s+$//;
        $t;
    });
    return $res->content =~ /^aura_stream_ack_refused_total (\d+)$/m
        ? $1 : -1;
}

my $log_from = error_log_size();
my $refused0 = metric();
cmp_ok($refused0, '>=', 0, '/metrics has aura_stream_ack_refused_total');

# --- 1. the begin message names aura.keys.invalidate: 502, nothing sent ---

my $id = new_reqid('ack-keys');
my $res = GET('/v1/functions/stream', apikey => ANON_KEY,
              'X-Request-Id' => $id, 'X-Example-Stream-Bytes' => 1000,
              'X-Example-Stream-Ack-Subject' => 'aura.keys.invalidate');
problem_ok($res, 502, 'upstream-error',
           'begin message acked on aura.keys.invalidate');
nats_sync(1);
is(scalar seen_on(qr/^aura\.keys\.invalidate$/), 0,
   'nothing published on aura.keys.invalidate');
like(error_log_since($log_from),
     qr/AURA00500: stream on aura\.functions refused at message 0 \(0 = begin\): its acknowledgement subject 'aura\.keys\.invalidate' is outside the Location's AuraStreamAckPrefix \(AuraStreamAckPrefix _INBOX\.\); nothing published there/,
     'logged with its tag, the subject and the prefix');

# --- 2. a later message names another service's subject: aborted ----------

$log_from = error_log_size();
$id = new_reqid('ack-mid');
my ($sock, $status, $h, $rest) = Aura::Stream::open_stream(
    Apache::TestRequest::hostport(), 'GET', '/v1/functions/stream',
    apikey => ANON_KEY, 'X-Request-Id' => $id,
    'X-Example-Stream-Bytes' => int(2.5 * MiB),
    'X-Example-Stream-Ack-Subject' => 'aura.functions.evil',
    'X-Example-Stream-Ack-At' => 2);
is($status, 200, 'mid-stream: the begin message\'s status went out');
my ($bytes, $complete) = read_chunked($sock, $rest, sub {});
close $sock;
ok(!$complete, 'mid-stream: the body is aborted (no last chunk)');
cmp_ok($bytes, '<', int(2.5 * MiB), 'mid-stream: not every byte');
nats_sync(1);
is(scalar seen_on(qr/^aura\.functions\.evil$/), 0,
   'mid-stream: nothing published on the subject it named');

# --- 3. the gateway's own reply inbox -------------------------------------

$id = new_reqid('ack-own');
$res = GET('/v1/functions/stream', apikey => ANON_KEY,
           'X-Request-Id' => $id, 'X-Example-Stream-Bytes' => 1000,
           'X-Example-Stream-Ack-Subject' => '@reply');
problem_ok($res, 502, 'upstream-error',
           'begin message acked on the gateway\'s own inbox');
like(error_log_since($log_from),
     qr/AURA00500: stream on aura\.functions refused at message 2 .*'aura\.functions\.evil' is outside/,
     'mid-stream refusal logged at message 2');
like(error_log_since($log_from),
     qr/AURA00500: .* refused at message 0 .*'_INBOX\.[^']+' is under the gateway's own reply inbox/,
     'own inbox refusal logged');
my @lines = error_log_since($log_from) =~ /(AURA00500)/g;
is(scalar @lines, 2, 'each refused stream logged once');

# --- 4. a wildcard, and a subject outside a Location's own prefix ---------

$id = new_reqid('ack-wild');
$res = GET('/v1/functions/stream', apikey => ANON_KEY,
           'X-Request-Id' => $id, 'X-Example-Stream-Bytes' => 1000,
           'X-Example-Stream-Ack-Subject' => 't.stolen.>');
problem_ok($res, 502, 'upstream-error', 'a wildcard ack subject');
$res = GET('/v1/test/ackprefix/s', apikey => ANON_KEY,
           'X-Request-Id' => new_reqid('ack-pfx-out'),
           'X-Example-Stream-Bytes' => 1000);
problem_ok($res, 502, 'upstream-error',
           'AuraStreamAckPrefix t.acks.: the service\'s _INBOX. refused');
nats_sync(1);
is(scalar seen_on(qr/^t\.stolen\./), 0, 'nothing published on t.stolen.>');

# --- 5. under the Location's own prefix: acknowledged there ---------------

$res = GET('/v1/test/ackprefix/s', apikey => ANON_KEY,
           'X-Request-Id' => new_reqid('ack-pfx-in'),
           'X-Example-Stream-Bytes' => 1000,
           'X-Example-Stream-Ack-Prefix' => 't.acks.');
is($res->code, 200, 'AuraStreamAckPrefix t.acks.: acks under t.acks. fine');
is(length $res->content, 1000, 'and the body is whole');
ok(wait_until(5, sub { nats_pump(0.2); scalar seen_on(qr/^t\.acks\.\w+\.1$/) }),
   'the acknowledgements were published there');
is(join(',', map { /\.(\d+)$/ } map { $_->[0] } seen_on(qr/^t\.acks\./)),
   '0,1', 'one for the begin message, one for the last');
my $refused1 = metric();
cmp_ok($refused1 - $refused0, '>=', 5,
       '/metrics counted the five refused streams');
unlike(error_log_since($log_from), qr/AURA00500: .*subject 't\.acks\./,
       'no refusal under the Location\'s prefix');

# --- 6. the streams the gateway accepts still work ------------------------

$res = GET('/v1/functions/stream', apikey => ANON_KEY,
           'X-Request-Id' => new_reqid('ack-ok'),
           'X-Example-Stream-Bytes' => int(1.5 * MiB));
is($res->code, 200, 'default prefix: the service\'s own _INBOX. acks');
is(length $res->content, int(1.5 * MiB), 'every byte');
