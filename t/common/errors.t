# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# What the gateway answers when the upstream cannot: malformed reply 502,
# no responders 503, timeout 504 (executed once, never replayed), a body
# larger than NATS's max payload 413 before anything is sent.  Every one
# is application/problem+json with the request id.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET POST);
use IO::Socket::INET;
use Aura::Test qw(default_console exec_count new_reqid problem_ok error_log_size
                  error_log_since raw_connect);

plan tests => 4 * 4 + 1 + 4 + 6 + 5 + 4 + 3 + 4;

default_console();

Apache::TestRequest::module('aura_data');
my $log_from = error_log_size();

# 502: a reply without Aura-Status, and one with a bad one.
problem_ok(GET('/v1/functions/m', 'X-Example-Malformed' => 'missing-status'),
           502, 'upstream-error', 'reply without Aura-Status');
problem_ok(GET('/v1/functions/m', 'X-Example-Status' => 'abc'),
           502, 'upstream-error', 'reply with Aura-Status abc');
# Two status values (one set by the service, one injected) are ambiguous.
problem_ok(GET('/v1/functions/m',
               'X-Example-Reply-Header' => 'aura-status: 500'),
           502, 'upstream-error', 'reply with two Aura-Status keys');
problem_ok(GET('/v1/functions/m', 'X-Example-Status' => '700'),
           502, 'upstream-error', 'reply with Aura-Status 700');
like(error_log_since($log_from), qr/AURA00023: malformed reply on aura\.functions/,
     'malformed replies are logged with their tag');

# 503: nobody listens on the subject.
problem_ok(GET('/v1/test/nobody/x'), 503, 'no-upstream', 'no responders');

# 504: the service answers after the 1 s budget; ran once, not replayed.
my $id = new_reqid('slow');
my $res = GET('/v1/test/slow/x', 'X-Example-Delay-Ms' => 2500,
              'X-Request-Id' => $id);
problem_ok($res, 504, 'upstream-timeout', 'timeout');
is(exec_count($id), 1, 'the timed-out request executed exactly once');
like(error_log_since($log_from), qr/AURA00021: no reply on aura\.functions/,
     'the timeout is logged');

# 413: a declared body above NATS's max payload (1 MiB by default) is
# refused before a byte of it is read, and never reaches the service.
$id = new_reqid('big');
my $sock = raw_connect(PeerAddr => Apache::TestRequest::hostport(),
                       Timeout => 10) or die "connect: $!";
print $sock "POST /v1/functions/big HTTP/1.1\r\nHost: localhost\r\n"
          . "X-Request-Id: $id\r\nContent-Length: 2097152\r\n"
          . "Content-Type: application/octet-stream\r\n\r\n";
my $head = '';
while (my $line = <$sock>) {
    $head .= $line;
    last if $line eq "\r\n";
}
my ($len) = $head =~ /^Content-Length:\s*(\d+)/mi;
my $body = '';
read($sock, $body, $len || 0);
close $sock;
like($head, qr{^HTTP/1\.1 413 }, '413 for a declared 2 MiB body, no body sent');
like($head, qr{^Content-Type: application/problem\+json}mi, '413: problem+json');
like($body, qr{"type":"/problems/payload-too-large"}, '413: type');
like($head, qr{^X-Request-Id: \Q$id\E}mi, '413: request id');
is(exec_count($id), 0, '413: the service never saw it');

# 413 for a chunked body that grows past the limit while it is read.
$id = new_reqid('chunked');
$sock = raw_connect(PeerAddr => Apache::TestRequest::hostport(),
                    Timeout => 10) or die "connect: $!";
print $sock "POST /v1/functions/big HTTP/1.1\r\nHost: localhost\r\n"
          . "X-Request-Id: $id\r\nTransfer-Encoding: chunked\r\n"
          . "apikey: " . Aura::Test::ANON_KEY . "\r\n\r\n";
my $chunk = 'z' x 65536;
for (1 .. 40) {   # 2.5 MiB
    last unless print $sock sprintf("%x\r\n", length $chunk), $chunk, "\r\n";
}
print $sock "0\r\n\r\n";
$head = '';
while (my $line = <$sock>) {
    $head .= $line;
    last if $line eq "\r\n";
}
close $sock;
like($head, qr{^HTTP/1\.1 413 }, '413 for a 2.5 MiB chunked body');
like($head, qr{^Content-Type: application/problem\+json}mi,
     'chunked 413: problem+json');
like($head, qr{^X-Request-Id: \Q$id\E}mi, 'chunked 413: request id');
is(exec_count($id), 0, 'chunked 413: the service never saw it');

# A body just under the limit goes through whole.
$id = new_reqid('fits');
my $fits = 'f' x (900 * 1024);
$res = POST('/v1/functions/fits', content => $fits, 'X-Request-Id' => $id);
is($res->code, 200, '900 KiB body: 200');
ok($res->content eq $fits, '900 KiB body: echoed whole');
is(exec_count($id), 1, '900 KiB body: executed once');

# The NATS connection down is tested in nats_outage.t; an HTTP upstream
# that refuses connections:
problem_ok(GET('/v1/test/deadhttp/object'), 503, 'upstream-error',
           'HTTP upstream refusing connections');
