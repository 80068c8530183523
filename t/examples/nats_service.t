# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The example for service authors (examples/nats-service) keeps working:
# started here against the suite's NATS server, behind /v1/test/hello/
# (t/conf/aura-test-routes.inc), it answers through the gateway with its
# status, headers and a body built from the identity headers; its
# streamed reply arrives in pieces, chunked, line by line, and stops when
# the gateway cancels it; SIGTERM drains it and it exits 0.  What a service author copies is what this tests.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET HEAD POST);
use POSIX ();
use Time::HiRes qw(time);
use Aura::Test qw(ANON_KEY default_key t_dir wait_until pid_alive);
use Aura::Stream ();

plan tests => 8 + 3 + 7 + 2 + 2;

default_key();
Apache::TestRequest::module('aura_data');

my $bin = t_dir() . '/../examples/nats-service/aura_hello_service';
my $out = t_dir() . '/logs/hello.out';
my $log = t_dir() . '/logs/hello.log';

sub slurp {
    open(my $fh, '<', $_[0]) or return '';
    local $/;
    my $text = <$fh>;
    return defined $text ? $text : '';
}

unlink $out, $log;
my $pid = fork() // die "fork: $!";
if (!$pid) {
    open(STDOUT, '>', $out) or POSIX::_exit(1);
    open(STDERR, '>', $log) or POSIX::_exit(1);
    exec($bin, $ENV{AURA_TEST_NATS_URL}) or POSIX::_exit(1);
}
END { kill('KILL', $pid) if $pid && pid_alive($pid) }
wait_until(10, sub { slurp($out) =~ /^ready/m || !pid_alive($pid) })
    && slurp($out) =~ /^ready/m
    or BAIL_OUT("$bin did not start: " . slurp($log));

# --- 1. one reply: status, headers, a body from the identity headers -----

my $id = 'hello-' . time;
my $res = GET('/v1/test/hello/a%20b', 'X-Request-Id' => $id);
is($res->code, 200, 'hello: the status the service chose');
is($res->header('Content-Type'), 'text/plain', 'hello: its Content-Type');
is($res->header('X-Hello-Role'), 'anon', 'hello: its own header');
is($res->header('X-Request-Id'), $id, 'hello: the client\'s request id');
ok(defined $res->header('Content-Length'), 'hello: one message, a length');
like($res->content,
     qr{^hello key:[0-9a-f]{16}: GET /v1/test/hello/a%20b, project proj-a, role anon, 0 body bytes\n\z},
     'hello: actor, method, raw path, project, role and body length');
ok(!grep({ /^aura-/i } $res->headers->header_field_names),
   'hello: no Aura-* header reaches the client');
like(slurp($log), qr{^\Q$id\E: hello /v1/test/hello/a%20b$}m,
     'hello: the service logged the gateway\'s request id');

$res = POST('/v1/test/hello/', apikey => 'ak_test_service_0123456789abcdef',
            content => 'hello');
is($res->code, 200, 'hello, service key: 200');
is($res->header('X-Hello-Role'), 'service_role', 'hello, service key: role');
like($res->content, qr{: POST /v1/test/hello/, .*, 5 body bytes\n\z},
     'hello, service key: the body reached the service');

# --- 2. a streamed reply arrives in pieces ---------------------------------

my ($sock, $status, $h, $rest) = Aura::Stream::open_stream(
    Apache::TestRequest::hostport(), 'GET', '/v1/test/hello/stream',
    apikey => ANON_KEY);
is($status, 200, 'stream: the begin message\'s status');
is($h->{'transfer-encoding'}, 'chunked', 'stream: a chunked body');
ok(!exists $h->{'content-length'}, 'stream: no Content-Length');
is($h->{'content-type'}, 'text/plain', 'stream: the begin message\'s headers');
my $body = '';
my @at;
my ($bytes, $complete) = Aura::Stream::read_chunked($sock, $rest // '', sub {
    $body .= $_[0];
    push @at, time;
});
close $sock;
ok($complete, 'stream: ended by the end message');
is($body, join('', map { "line $_ of 10\n" } 1 .. 10),
   'stream: every line, in order');
# The service pauses 100 ms before each line: one response read whole
# would have come at once.
ok(@at >= 5 && $at[-1] - $at[0] >= 0.5,
   'stream: the lines came one by one (' . scalar(@at) . ' pieces over '
   . sprintf('%.2f', @at ? $at[-1] - $at[0] : 0) . ' s)');

# HEAD gets the status and headers; the gateway cancels the stream, and
# the service, told so with its next acknowledgement wait, stops.
$id = 'hello-head-' . time;
$res = HEAD('/v1/test/hello/stream', 'X-Request-Id' => $id);
is($res->code, 200, 'stream, HEAD: the begin message\'s status');
ok(wait_until(5, sub { slurp($log) =~ /^\Q$id\E: stream stopped: cancelled$/m }),
   'stream, HEAD: the service saw the cancel and stopped');

# --- 3. SIGTERM drains and stops it -----------------------------------------

kill('TERM', $pid);
my $exit;
ok(wait_until(10, sub {
       return 0 unless waitpid($pid, POSIX::WNOHANG()) == $pid;
       $exit = $?;
       return 1;
   }), 'stop: the service exits on SIGTERM');
is($exit, 0, 'stop: with status 0');
$pid = 0;
