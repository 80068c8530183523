# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Traces exported over OTLP/HTTP (docs/tracing.md), on servers of their
# own (the AuraTrace* directives are global), against receivers written
# for the test (t/lib/Aura/OTLP.pm) that keep every POST and check it
# against the OTLP/JSON format:
# - A: a receiver that accepts; every span well-formed; the span tree
#   (the server span the root of a new trace, or the child of the
#   client's span; the stages and the upstream call its children; the
#   traceparent the service got names the call's span), timing order,
#   attributes (a refused request's problem type), an unsampled inbound
#   trace exports nothing and is forwarded unsampled (A and B trust
#   127.0.0.1's traceparent: AuraTraceTrustParent; untrusted clients
#   are t/security/trace_sampling.t's);
# - B: ratio 0 and a dead receiver (a closed port): no span without an
#   inbound sampled trace; with one, every request still succeeds, runs
#   once, and the failures and dropped spans are counted;
# - C: a receiver that accepts and never answers, a small queue: every
#   request succeeds and runs once, the queue stays at its bound, the
#   rest is dropped and counted, and httpd still stops.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempdir);
use JSON::PP;
use LWP::UserAgent;
use POSIX ();
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Aura::Test qw(private_httpd wait_until t_dir exec_count new_reqid
                  free_port);
use Aura::OTLP qw(otlp_receiver slow_receiver otlp_received otlp_check
                  otlp_spans);

plan tests => 52;

use constant ANON_KEY => 'ak_test_anon_0123456789abcdef';
my $SUBJECT = 'aura.test.otlp';
my $TOKEN = 'otlp-metrics-token-0123456789';

my $top = tempdir(CLEANUP => 1);
chmod 0755, $top;
open(my $tf, '>', "$top/metrics.token") or die;
print $tf "$TOKEN\n";
close $tf;

# The example service on a subject of this test, counting executions.
my $svc = fork();
die "fork: $!" unless defined $svc;
if (!$svc) {
    open(STDOUT, '>', '/dev/null');
    open(STDERR, '>', '/dev/null');
    exec(t_dir() . '/services/aura_example_service', '-s',
         $ENV{AURA_TEST_NATS_URL}, '-p', "$top/svc.pid",
         '-c', "$SUBJECT.count", $SUBJECT) or POSIX::_exit(127);
}
my (@servers, @receivers);
END {
    system("$_ -k stop") for @servers;
    for my $pid (@receivers, $svc ? ($svc) : ()) {
        kill 'TERM', $pid;
        waitpid($pid, 0);
    }
}
wait_until(10, sub { -s "$top/svc.pid" }) or die 'service did not start';

sub count_of {
    my ($reqid) = @_;
    my @cmd = (t_dir() . '/services/aura_natsreq', '-s',
               $ENV{AURA_TEST_NATS_URL}, '-t', 2000, "$SUBJECT.count",
               $reqid);
    open(my $fh, '-|', @cmd) or die;
    local $/;
    my $out = <$fh>;
    close $fh;
    return 0 + ($out // 0);
}

# A gateway with the tracing lines given, one child.
sub gateway {
    my ($name, $trace) = @_;
    my $dir = "$top/$name";
    mkdir $dir or die;
    my ($port, $httpd) = private_httpd(dir => $dir, children => 1,
                                       body => <<"CONF");
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraDBParams "$ENV{AURA_TEST_PG_CONNINFO}"
AuraMetricsTokenFile $top/metrics.token
$trace
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    <Location "/metrics">
        SetHandler aura-metrics
        AuraPublic On
        AuraRateLimit off
    </Location>
    <Location "/v1/functions/">
        AuraService functions nats:$SUBJECT
        AuraTimeout 10s
    </Location>
    <Location "/v1/storage/">
        AuraService storage $ENV{AURA_TEST_HTTP_URL}/otlp
        AuraTimeout 10s
    </Location>
</VirtualHost>
CONF
    system("$httpd -k start") == 0 or die "httpd $name did not start";
    push @servers, $httpd;
    return ("http://127.0.0.1:$port", $httpd, $dir);
}

my $ua = LWP::UserAgent->new(keep_alive => 1, timeout => 30);

sub metric {
    my ($base, $name) = @_;
    my $res = $ua->get("$base/metrics", Authorization => "Bearer $TOKEN");
    my ($v) = $res->content =~ /^\Q$name\E (\d+)$/m;
    return $v // -1;
}

sub up {
    my ($base) = @_;
    return wait_until(20, sub { metric($base, 'aura_trace_spans_queued')
                                >= 0 });
}

# --- A: a receiver that accepts ------------------------------------------
my $rdir = "$top/received";
mkdir $rdir or die;
my ($rport, $rpid) = otlp_receiver($rdir);
push @receivers, $rpid;
my ($A) = gateway('a', <<"T");
AuraTraceEndpoint http://127.0.0.1:$rport/
AuraTraceTrustParent 127.0.0.1
AuraTraceHeader X-Test-Auth secret-of-the-collector
AuraTraceResource deployment.environment.name=test
AuraTraceBatchSize 64
T
ok(up($A), 'A is up');

my $parent_trace = '4bf92f3577b34da6a3ce929d0e0e4736';
my $parent_span = '00f067aa0ba902b7';
my $rid_in = new_reqid('otlp-in');
my $res = $ua->get("$A/v1/functions/x", apikey => ANON_KEY,
                   'X-Request-Id' => $rid_in, 'X-Example-Headers' => 'json',
                   traceparent => "00-$parent_trace-$parent_span-01",
                   'User-Agent' => 'otlp-test/1');
is($res->code, 200, 'a request with a sampled inbound trace');
my $echo = eval { decode_json($res->content) } || {};
my ($got_in) = @{ $echo->{traceparent} || [] };
like($got_in // '', qr/^00-$parent_trace-[0-9a-f]{16}-01$/,
     'the service got the trace, sampled');
my ($client_in) = ($got_in // '') =~ /-([0-9a-f]{16})-01$/;

my $rid_new = new_reqid('otlp-new');
$res = $ua->get("$A/v1/functions/x", apikey => ANON_KEY,
                'X-Request-Id' => $rid_new, 'X-Example-Headers' => 'json');
is($res->code, 200, 'a request without a trace');
$echo = eval { decode_json($res->content) } || {};
my ($got_new) = @{ $echo->{traceparent} || [] };
my ($new_trace, $client_new) =
    ($got_new // '') =~ /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;
ok($new_trace, 'a new trace, sampled (ratio 1 by default)');

my $rid_refused = new_reqid('otlp-401');
$res = $ua->get("$A/v1/functions/x", 'X-Request-Id' => $rid_refused,
                traceparent => "00-$parent_trace-1111111111111111-01");
is($res->code, 401, 'a request without a key is refused');

my $unsampled = 'aaaabbbbccccddddeeeeffff00001111';
$res = $ua->get("$A/v1/functions/x", apikey => ANON_KEY,
                'X-Example-Headers' => 'json',
                traceparent => "00-$unsampled-2222222222222222-00");
$echo = eval { decode_json($res->content) } || {};
like((@{ $echo->{traceparent} || [] })[0] // '',
     qr/^00-$unsampled-[0-9a-f]{16}-00$/,
     'an unsampled inbound trace is forwarded unsampled');

my $rid_http = new_reqid('otlp-http');
$res = $ua->get("$A/v1/storage/o", apikey => ANON_KEY,
                'X-Request-Id' => $rid_http);
is($res->code, 200, 'a request to the HTTP upstream');
$echo = eval { decode_json($res->content) } || {};
my ($http_trace, $http_client) =
    (($echo->{headers} || {})->{traceparent} // '')
        =~ /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;
ok($http_trace, 'the HTTP upstream got a sampled traceparent');

# Four requests were sampled (and those to /metrics): their server
# spans all arrive.
my @docs;
my @spans;
ok(wait_until(30, sub {
       @docs = map { eval { decode_json($_->{body}) } } otlp_received($rdir);
       @spans = otlp_spans(@docs);
       my %rids = map { ($_->{attr}{'aura.request.id'} // '') => 1 }
                  grep { $_->{kind} == 2 } @spans;
       4 == grep { $rids{$_} } $rid_in, $rid_new, $rid_refused, $rid_http;
   }), 'the sampled requests\' server spans arrived');
my @reqs = otlp_received($rdir);
is_deeply([ grep { $_->{method} ne 'POST' || $_->{path} ne '/v1/traces'
                   || ($_->{type} // '') !~ m{^application/json} } @reqs ],
          [], 'every export: POST /v1/traces, application/json');
is_deeply([ grep { ($_->{auth} // '') ne 'secret-of-the-collector' } @reqs ],
          [], 'with the AuraTraceHeader');
is_deeply([ map { otlp_check($_) } @docs ], [],
          'every export is a well-formed ExportTraceServiceRequest');
my ($res0) = map { $_->{resourceSpans}[0]{resource}{attributes} } @docs;
my %resource = map { $_->{key} => $_->{value}{stringValue} } @$res0;
is_deeply(\%resource, { 'service.name' => 'mod_aura',
                        'deployment.environment.name' => 'test' },
          'resource: service.name by default, and AuraTraceResource');
ok(!grep({ $_->{traceId} eq $unsampled } @spans),
   'the unsampled trace exported nothing');

sub server_span {
    my ($rid) = @_;
    my @s = grep { $_->{kind} == 2
                   && ($_->{attr}{'aura.request.id'} // '') eq $rid } @spans;
    return $s[0];
}
sub children_of {
    my ($s) = @_;
    return grep { ($_->{parentSpanId} // '') eq $s->{spanId}
                  && $_->{traceId} eq $s->{traceId} } @spans;
}
sub within {
    my ($c, $p) = @_;
    return $c->{startTimeUnixNano} >= $p->{startTimeUnixNano}
           && $c->{endTimeUnixNano} <= $p->{endTimeUnixNano};
}

my $srv = server_span($rid_in) || {};
is($srv->{traceId}, $parent_trace, 'inbound: the client\'s trace');
is($srv->{parentSpanId}, $parent_span,
   'inbound: the server span is the child of the client\'s span');
is($srv->{name}, 'GET /v1/functions/', 'name: method and route');
my %a = %{ $srv->{attr} || {} };
is_deeply({ map { $_ => $a{$_} } qw(http.request.method url.path url.scheme
                                    http.route http.response.status_code
                                    client.address user_agent.original
                                    network.protocol.version aura.plane
                                    aura.service aura.key.role) },
          { 'http.request.method' => 'GET', 'url.path' => '/v1/functions/x',
            'url.scheme' => 'http', 'http.route' => '/v1/functions/',
            'http.response.status_code' => '200',
            'client.address' => '127.0.0.1',
            'user_agent.original' => 'otlp-test/1',
            'network.protocol.version' => '1.1', 'aura.plane' => 'data',
            'aura.service' => 'functions', 'aura.key.role' => 'anon' },
          'server span attributes');
ok(defined $a{'server.address'} && $a{'server.port'} =~ /^\d+$/,
   'server.address and server.port');
ok(!$srv->{status} || !$srv->{status}{code}, 'a 200: no error status');
my @kids = children_of($srv);
my %by_name = map { $_->{name} => $_ } @kids;
ok($by_name{$_}, "stage span $_")
    for qw(aura.limit.address aura.key.lookup aura.limit.actor);
ok(!$by_name{'aura.token.verify'}, 'no token, no token span');
my $client = $by_name{"send $SUBJECT"} || {};
is($client->{kind}, 3, 'the NATS request is a CLIENT span');
is($client->{spanId}, $client_in,
   'the traceparent the service got names the CLIENT span');
is($client->{attr}{'messaging.destination.name'}, $SUBJECT,
   'messaging attributes');
my @attempts = children_of($client);
is(scalar(@attempts), 1, 'one attempt span under it');
is(scalar(grep { !within($_, $srv) } @kids), 0,
   'every stage within the server span');
ok(@attempts && within($attempts[0], $client),
   'the attempt within the call');

my $root = server_span($rid_new) || {};
is($root->{traceId}, $new_trace, 'new trace: its id');
ok(!exists $root->{parentSpanId}, 'new trace: the server span is the root');
($client) = grep { $_->{kind} == 3 } children_of($root);
is(($client || {})->{spanId}, $client_new,
   'new trace: the service\'s parent is the CLIENT span');

my $ref = server_span($rid_refused) || {};
is($ref->{attr}{'aura.problem.type'}, 'missing-key',
   'refused: the problem type');
is($ref->{attr}{'http.response.status_code'}, '401', 'refused: 401');
ok(!grep({ $_->{kind} == 3 } children_of($ref)), 'refused: no upstream call');

my $hs = server_span($rid_http) || {};
($client) = grep { $_->{kind} == 3 } children_of($hs);
is(($client || {})->{spanId}, $http_client,
   'HTTP upstream: it got the CLIENT span as parent');
is(($client || {})->{attr}{'http.response.status_code'}, '200',
   'HTTP upstream: its status');

# --- B: ratio 0, dead receiver -------------------------------------------
my $dead = free_port();
my ($B) = gateway('b', <<"T");
AuraTraceEndpoint http://127.0.0.1:$dead
AuraTraceTrustParent 127.0.0.1
AuraTraceSampleRatio 0
AuraTraceExportTimeout 2s
T
ok(up($B), 'B is up');
$res = $ua->get("$B/v1/functions/x", apikey => ANON_KEY,
                'X-Example-Headers' => 'json');
like((@{ (eval { decode_json($res->content) } || {})->{traceparent} || [] })[0]
     // '', qr/-00$/, 'ratio 0: a new trace is forwarded unsampled');
is(metric($B, 'aura_trace_spans_recorded_total'), 0,
   'ratio 0: no span recorded');
my $n = 20;
my @rids = map { new_reqid("otlp-dead-$_") } 1 .. $n;
my $ok = 0;
for my $i (0 .. $n - 1) {
    $ok++ if $ua->get("$B/v1/functions/x", apikey => ANON_KEY,
                      'X-Request-Id' => $rids[$i],
                      traceparent => sprintf('00-%032x-%016x-01', $i + 1,
                                             $i + 1))->code == 200;
}
is($ok, $n, 'dead collector: every request succeeds');
is(scalar(grep { count_of($_) == 1 } @rids), $n,
   'dead collector: each ran exactly once');
ok(wait_until(30, sub { metric($B, 'aura_trace_export_failures_total') > 0
                        && metric($B, 'aura_trace_spans_queued') == 0 }),
   'dead collector: failed exports counted');
my $recorded = metric($B, 'aura_trace_spans_recorded_total');
my $res_b = $ua->get("$B/metrics", Authorization => "Bearer $TOKEN")->content;
my ($dq) = $res_b =~ /reason="queue_full"\} (\d+)/;
my ($de) = $res_b =~ /reason="export_failed"\} (\d+)/;
ok($recorded > 0 && $de > 0 && $dq + $de == $recorded,
   "dead collector: every recorded span dropped and counted "
   . "($recorded = $dq + $de)");

# --- C: a receiver that never answers, a small queue ---------------------
my ($sport, $spid) = slow_receiver();
push @receivers, $spid;
my ($C, $httpd_c, $dir_c) = gateway('c', <<"T");
AuraTraceEndpoint http://127.0.0.1:$sport
AuraTraceQueueSize 8
AuraTraceBatchSize 4
AuraTraceExportTimeout 60s
T
ok(up($C), 'C is up');
@rids = map { new_reqid("otlp-slow-$_") } 1 .. $n;
$ok = 0;
for my $rid (@rids) {
    $ok++ if $ua->get("$C/v1/functions/x", apikey => ANON_KEY,
                      'X-Request-Id' => $rid)->code == 200;
}
is($ok, $n, 'slow collector: every request succeeds');
is(scalar(grep { count_of($_) == 1 } @rids), $n,
   'slow collector: each ran exactly once');
$res = $ua->get("$C/metrics", Authorization => "Bearer $TOKEN")->content;
($dq) = $res =~ /reason="queue_full"\} (\d+)/;
my ($queued) = $res =~ /^aura_trace_spans_queued (\d+)$/m;
($recorded) = $res =~ /^aura_trace_spans_recorded_total (\d+)$/m;
# One child: at most the queue's 8 spans wait (a batch being posted
# included); everything else was dropped at once.
ok($queued <= 8 && $dq > 0 && $dq + $queued == $recorded,
   "slow collector: queue bounded ($queued queued), the rest dropped "
   . "($dq of $recorded)");
system("$httpd_c -k stop");
@servers = grep { $_ ne $httpd_c } @servers;
ok(wait_until(30, sub { !-e "$dir_c/httpd.pid" }),
   'slow collector: httpd still stops');

# Every child exited cleanly, its exporter thread joined (under the
# sanitizers a thread ended by pthread_exit() crashed each child here).
for my $httpd (@servers) {
    system("$httpd -k stop");
}
@servers = ();
ok(wait_until(30, sub { !grep { -e "$top/$_/httpd.pid" } qw(a b c) })
   && !grep({ my $log = do { local (@ARGV, $/) = "$top/$_/error.log"; <> };
              $log =~ /exit signal/ } qw(a b c)),
   'every gateway stopped, no child died of a signal');
