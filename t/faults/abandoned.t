# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# An abandoned request is never sent, and frees its worker (issue #16
# point 2, DESIGN.md section 9).  A private httpd with ONE child of FOUR
# workers, so that a slow service holds every worker and requests queue
# behind it in the MPM, as they did in the fault runs; its own example
# service on a test-only subject, counting executions by request id.
#
# - waiting: four requests published to a service that answers after
#   4 s, their clients close: every worker is free again within 1 s
#   (/health answers, which needs a worker), each wait is logged as
#   AURA00800 and counted, the access log says 499 client-gone (the
#   replies that come later find nobody subscribed: t/nats/inboxes.t);
# - queued, NATS: four requests hold the four workers (2 s answers), six
#   more wait for a worker and their clients leave after 300 ms: when the
#   workers free up, none of the six is published (the service, running
#   throughout, executed none of them), the four ran once each;
# - queued, HTTP: the same with the six on an HTTP route: the upstream
#   never receives them;
# - retries: a client that leaves while no responders are retried: the
#   retries stop and the request is given up within 1 s;
# - a streamed reply whose client leaves between two messages: the
#   stream is cancelled within 1 s, not at the next message;
# - a client gone is no verdict: a breaker that one failure opens stays
#   closed after a wait given up past what would have been a timeout;
# - no false alarm: two pipelined requests on one connection (the bytes
#   of the second sent while the first waits) are both answered, and
#   a client that half-closes after its request is answered where
#   AuraAbandonCheck is Off (and given up where it is On).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempdir);
use IO::Select;
use IO::Socket::INET;
use LWP::UserAgent;
use POSIX ();
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Time::HiRes qw(time sleep);
use Aura::Test qw(private_httpd wait_until t_dir natsreq new_reqid);
use Aura::Load qw(counters health_json);
use Aura::Upstream qw(upstream_log);

plan tests => 37;

my $dir = tempdir(CLEANUP => 1);
chmod 0755, $dir;
my $subject = 'aura.test.abandon';
my ($port, $httpd) = private_httpd(dir => $dir, children => 1,
                                   body => <<"CONF");
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraBreaker * threshold=1000000
AuraBreaker notifications threshold=1 cooldown=30s
AuraRateLimitZone default rate=100000r/s burst=100000
# What is measured here is what holds workers without a cap (the caps of
# point 1 would refuse the third caller of a service on four workers).
AuraServiceMaxInFlight off
AuraPlaneMaxInFlight off
LogFormat "%>s %{problem}^au %{request-id}^au %U" abandon
CustomLog $dir/access.log abandon
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    <Location "/health">
        SetHandler aura-health
        AuraHealthDetail On
        AuraPublic On
        AuraRateLimit off
    </Location>
    <Location "/slow/">
        AuraPublic On
        AuraService functions nats:$subject
        AuraTimeout 20s
    </Location>
    <Location "/brk/">
        AuraPublic On
        AuraService notifications nats:$subject
        AuraTimeout 1s
    </Location>
    <Location "/halfclose/">
        AuraPublic On
        AuraService functions nats:$subject
        AuraTimeout 5s
        AuraAbandonCheck Off
    </Location>
    <Location "/nobody/">
        AuraPublic On
        AuraService control nats:$subject.nobody
        AuraTimeout 10s
        AuraRetries 10
    </Location>
    <Location "/http/">
        AuraPublic On
        AuraService storage $ENV{AURA_TEST_HTTP_URL}/abandon
        AuraTimeout 5s
    </Location>
</VirtualHost>
CONF

# The service: its own instance, on a subject of this test only.
my $svc = fork();
die "fork: $!" unless defined $svc;
if (!$svc) {
    open(STDOUT, '>', '/dev/null');
    open(STDERR, '>', '/dev/null');
    exec(t_dir() . '/services/aura_example_service', '-s',
         $ENV{AURA_TEST_NATS_URL}, '-p', "$dir/svc.pid",
         '-c', "$subject.count", $subject) or POSIX::_exit(127);
}
END {
    system("$httpd -k stop") if -s "$dir/httpd.pid";
    if ($svc) { kill 'TERM', $svc; waitpid($svc, 0) }
}
wait_until(10, sub { -s "$dir/svc.pid" }) or die 'service did not start';
system("$httpd -k start") == 0 or die 'httpd did not start';

my $base = "http://127.0.0.1:$port";
my $ua = LWP::UserAgent->new(timeout => 15);
wait_until(10, sub { $ua->get("$base/health")->is_success })
    or die 'httpd does not answer';

sub executed {
    my ($id) = @_;
    my ($rc, $out) = natsreq("$subject.count", $id);
    die "count query failed ($rc)" if $rc;
    return 0 + $out;
}

sub log_text {
    my ($file) = @_;
    open(my $fh, '<', "$dir/$file") or return '';
    local $/;
    return <$fh>;
}

# A request on a raw connection, left open.
sub send_req {
    my ($path, $id, @headers) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
                                  Timeout => 5) or die "connect: $!";
    my $head = "GET $path HTTP/1.1\r\nHost: localhost\r\n"
               . "X-Request-Id: $id\r\n";
    while (my ($k, $v) = splice(@headers, 0, 2)) {
        $head .= "$k: $v\r\n";
    }
    syswrite($s, "$head\r\n") or die "write: $!";
    return $s;
}

# The status of the response on $s, read within $secs (undef if none).
sub status_of {
    my ($s, $secs) = @_;
    my $sel = IO::Select->new($s);
    my $buf = '';
    my $deadline = time + $secs;
    while (time < $deadline && $buf !~ /\r\n/) {
        last unless $sel->can_read($deadline - time);
        last unless sysread($s, $buf, 4096, length $buf);
    }
    return $buf =~ m{^HTTP/1\.1 (\d{3})} ? $1 : undef;
}

# The time /health takes to answer: it needs a worker.
sub health_time {
    my $t0 = time;
    my $ok = $ua->get("$base/health")->is_success;
    return $ok ? time - $t0 : 99;
}

# --- waiting: the clients of four published requests leave -----------------
my $c0 = counters($base);
my @wait_ids = map { new_reqid('abw') } 1 .. 4;
my @socks = map { send_req('/slow/x', $_, 'X-Example-Delay-Ms' => 4000) }
                @wait_ids;
ok(wait_until(5, sub { !grep { !executed($_) } @wait_ids }),
   'four requests reached the service (every worker waits on it)');
my $t_left = time;
close $_ for @socks;
my $took = health_time();
cmp_ok($took, '<', 1.0,
       sprintf('a worker answers /health %.3f s after the four clients '
               . 'left (the service answers only after 4 s)', $took));
ok(wait_until(2, sub { counters($base)->{gone_waiting}
                       - $c0->{gone_waiting} == 4 }),
   'four waits given up, counted');
my @lines = log_text('error.log') =~ /AURA00800: client gone while waiting/g;
is(scalar @lines, 4, 'each logged as AURA00800');
my $access = log_text('access.log');
is(scalar(grep { $access =~ /^499 client-gone \Q$_\E /m } @wait_ids), 4,
   'access log: 499 client-gone for each');
is(scalar(grep { executed($_) == 1 } @wait_ids), 4,
   'each of them ran once (they were sent before their clients left)');
my $m = $ua->get("$base/health");
ok($m->is_success, 'the instance is well');

# --- queued behind a slow service, NATS: never published -------------------
sub queued_case {
    my ($path, $tag) = @_;
    my $c = counters($base);
    my @hold = map { new_reqid("ab$tag" . 'h') } 1 .. 4;
    my @held = map { send_req('/slow/x', $_, 'X-Example-Delay-Ms' => 2000) }
                   @hold;
    my $busy = wait_until(5, sub { !grep { !executed($_) } @hold });
    my @gone = map { new_reqid("ab$tag" . 'g') } 1 .. 6;
    my @queued = map { send_req($path, $_) } @gone;
    sleep 0.3;      # the clients' own patience: they give up
    close $_ for @queued;
    my @codes = map { status_of($_, 10) // 'none' } @held;
    my $given_up = wait_until(5, sub {
        counters($base)->{gone_before_send} - $c->{gone_before_send} == 6 });
    return (\@hold, \@gone, \@codes, $busy, $given_up);
}

my ($hold, $gone, $codes, $busy, $given_up) = queued_case('/slow/x', 'n');
ok($busy, 'four requests hold the four workers');
is_deeply($codes, [(200) x 4], 'they are answered after 2 s');
ok($given_up, 'the six queued requests were given up before sending');
sleep 0.5;      # a publish, had there been one, would be executed by now
is(scalar(grep { executed($_) } @$gone), 0,
   'none of the six was executed (the service ran throughout)');
is(scalar(grep { executed($_) == 1 } @$hold), 4, 'the four ran once each');
@lines = log_text('error.log') =~ /AURA00800: client gone before sending/g;
is(scalar @lines, 6, 'each logged as AURA00800');
$access = log_text('access.log');
is(scalar(grep { $access =~ /^499 client-gone \Q$_\E /m } @$gone), 6,
   'access log: 499 client-gone for each');
$took = health_time();
cmp_ok($took, '<', 1.0, sprintf('workers free (%.3f s)', $took));

# --- queued, HTTP: never sent to the upstream --------------------------------
my $since = scalar @{ upstream_log(0) };
($hold, $gone, $codes, $busy, $given_up) = queued_case('/http/x', 'h');
ok($busy, 'four requests hold the four workers');
is_deeply($codes, [(200) x 4], 'they are answered after 2 s');
ok($given_up, 'the six queued HTTP requests were given up before sending');
my %sent = map { ($_->{headers}{'x-request-id'} // '') => 1 }
           @{ upstream_log($since) };
is(scalar(grep { $sent{$_} } @$gone), 0, 'the upstream received none');
my $res = $ua->get("$base/http/x", 'X-Request-Id' => 'ab-http-ok');
is($res->code, 200, 'the HTTP route itself works');
%sent = map { ($_->{headers}{'x-request-id'} // '') => 1 }
        @{ upstream_log($since) };
ok($sent{'ab-http-ok'}, 'and the upstream saw that one (the check above '
   . 'can fail)');

# --- retries on no responders: the client leaves -------------------------
my $c1 = counters($base);
my $s = send_req('/nobody/x', new_reqid('abr'));
ok(wait_until(3, sub { counters($base)->{nats_retries} > $c1->{nats_retries}
                       + 2 }), 'no responders: the request is retried');
$t_left = time;
close $s;
ok(wait_until(1, sub { counters($base)->{gone_before_send}
                       > $c1->{gone_before_send} }),
   sprintf('given up within 1 s of the client leaving (%.3f s)',
           time - $t_left));
my $r1 = counters($base)->{nats_retries};
sleep 1.2;      # the longest backoff: no retry may follow
is(counters($base)->{nats_retries}, $r1, 'no retry after that');
is(counters($base)->{nats_no_responders}, $c1->{nats_no_responders},
   'and no verdict on the service (not counted as no responders)');

# --- a streamed reply, the client gone between two messages ---------------
my $c2 = counters($base);
my $st = send_req('/slow/x', new_reqid('abs'), 'X-Example-Stream-Bytes' => 100,
                  'X-Example-Stream-Pause-Ms' => 5000);
is(status_of($st, 5), 200, 'the stream begins');
$t_left = time;
close $st;
ok(wait_until(1, sub { counters($base)->{gone_waiting}
                       > $c2->{gone_waiting} }),
   sprintf('cancelled within 1 s of the client leaving (%.3f s), not at the '
           . 'last message 5 s later', time - $t_left));
$took = health_time();
cmp_ok($took, '<', 1.0, sprintf('workers free (%.3f s)', $took));

# --- no verdict: the breaker (threshold 1) stays closed --------------------
my $bid = new_reqid('abb');
my $bs = send_req('/brk/x', $bid, 'X-Example-Delay-Ms' => 3000);
ok(wait_until(3, sub { executed($bid) }), 'a request reached the service');
close $bs;
ok(wait_until(2, sub { counters($base)->{gone_waiting}
                       > $c2->{gone_waiting} + 1 }), 'its wait was given up');
sleep 1.2;      # past its 1 s budget: a timeout would have opened it
is(health_json($base)->{breakers}{notifications}{state}, 'closed',
   'no verdict: the breaker that one failure opens is still closed');

# --- no false alarm: pipelined requests, half-close with the check off -----
my $c3 = counters($base);
my ($p1, $p2) = (new_reqid('abp'), new_reqid('abp'));
my $pipe = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Timeout => 5)
    or die "connect: $!";
syswrite($pipe, join('', map { "GET /slow/x HTTP/1.1\r\nHost: localhost\r\n"
                               . "X-Request-Id: $_\r\n"
                               . "X-Example-Delay-Ms: 600\r\n\r\n" }
                          ($p1, $p2)));
my $both = '';
my $sel = IO::Select->new($pipe);
my $end = time + 10;
while (time < $end && (() = $both =~ m{^HTTP/1\.1 200}mg) < 2) {
    last unless $sel->can_read($end - time);
    last unless sysread($pipe, $both, 65536, length $both);
}
close $pipe;
is(scalar(() = $both =~ m{^HTTP/1\.1 200}mg), 2,
   'two pipelined requests on one connection: both answered');
is(executed($p1) + executed($p2), 2, 'each ran once');
is(counters($base)->{gone_waiting} + counters($base)->{gone_before_send},
   $c3->{gone_waiting} + $c3->{gone_before_send}, 'none taken as gone');

my $hid = new_reqid('abh');
my $half = send_req('/halfclose/x', $hid, 'X-Example-Delay-Ms' => 300);
shutdown($half, 1);
is(status_of($half, 5), 200,
   'a half-closing client is answered under AuraAbandonCheck Off');
close $half;
$hid = new_reqid('abh');
$half = send_req('/slow/x', $hid, 'X-Example-Delay-Ms' => 300);
shutdown($half, 1);
is(status_of($half, 5), undef, 'and given up where the check is On');
close $half;
ok(wait_until(2, sub { $access = log_text('access.log');
                       $access =~ /^499 client-gone \Q$hid\E /m }),
   'logged as 499 client-gone (the documented limit)');
