# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# A client does not decide that its requests are traced (docs/tracing.md,
# "Sampling"; docs/security.md 3.14; follow-up of issue #30).  On a
# server of its own (the AuraTrace* directives are global), one child,
# ratio 0, a small export queue, AuraTraceTrustParent 127.0.0.3, and a
# gated receiver (t/lib/Aura/OTLP.pm) that keeps every export but answers
# none until the test opens the gate, so that nothing leaves the queue
# meanwhile and filling it does not depend on timing:
# - attackers on 127.0.0.2 and 127.0.0.4 send requests with
#   "traceparent: 00-<chosen id>-<span>-01" (ids the unkeyed ratio always
#   samples, one claiming X-Forwarded-For: 127.0.0.3): every one gets 200
#   and runs once at the service, which gets the attacker's trace id
#   with the gateway's span id, unsampled; no span is recorded
#   (aura_trace_spans_recorded_total does not move) and none exported;
# - the victim on 127.0.0.3 (trusted) sends sampled requests afterwards:
#   all of their spans are recorded, fit in the queue the attackers'
#   would have filled (they did before AuraTraceTrustParent: their spans
#   took the queue and the victim's were dropped), and all arrive once
#   the gate opens; nothing is dropped;
# - behind mod_remoteip (loaded after mod_aura, as a2enmod's order does),
#   the trusted address is the one mod_remoteip established, not the
#   proxy's; the main server's list reaches a VirtualHost without one,
#   and one with its own ("none" too) replaces it.
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
use Aura::Test qw(private_httpd wait_until t_dir new_reqid);
use Aura::OTLP qw(otlp_receiver otlp_received otlp_spans);

plan tests => 22;

use constant ANON_KEY => 'ak_test_anon_0123456789abcdef';
my $SUBJECT = 'aura.test.tracesampling';
my $TOKEN = 'trace-sampling-metrics-token-0123';
my $QUEUE = 32;

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

# A gateway with the lines given before the VirtualHost, one child; a
# name-based VirtualHost more for each [ServerName, lines] of @more.
sub gateway {
    my ($name, $head, @more) = @_;
    my $dir = "$top/$name";
    mkdir $dir or die;
    my $vhosts = join('', map { vhost("ServerName $_->[0]\n$_->[1]") }
                              [ 'localhost', '' ], @more);
    my ($port, $httpd) = private_httpd(dir => $dir, children => 1,
                                       body => <<"CONF");
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraDBParams "$ENV{AURA_TEST_PG_CONNINFO}"
AuraMetricsTokenFile $top/metrics.token
$head
$vhosts
CONF
    system("$httpd -k start") == 0 or die "httpd $name did not start";
    push @servers, $httpd;
    return "http://127.0.0.1:$port";
}

sub vhost {
    my ($lines) = @_;
    return <<"CONF";
<VirtualHost 127.0.0.1:__PORT__>
    $lines
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
</VirtualHost>
CONF
}

my %ua;
sub ua_from {
    my ($addr) = @_;
    return $ua{$addr} //= LWP::UserAgent->new(keep_alive => 1, timeout => 30,
                                              local_address => $addr);
}

sub metrics {
    my ($base) = @_;
    my $res = ua_from('127.0.0.1')->get("$base/metrics",
                                        Authorization => "Bearer $TOKEN");
    my %m;
    for my $line (split /\n/, $res->content) {
        $m{$1} = $2 if $line =~ /^(aura_trace_\S+) (\d+)$/;
    }
    return \%m;
}
sub metric { my ($base, $name) = @_; return metrics($base)->{$name} // -1 }
sub dropped {
    my ($m) = @_;
    my $n = 0;
    $n += $m->{$_} for grep { /^aura_trace_spans_dropped_total/ } keys %$m;
    return $n;
}

# One request to the service; returns (status, the traceparent it got).
sub call {
    my ($base, $from, $rid, $tp, %h) = @_;
    my $res = ua_from($from)->get("$base/v1/functions/x", apikey => ANON_KEY,
                                  'X-Request-Id' => $rid,
                                  'X-Example-Headers' => 'json',
                                  traceparent => $tp, %h);
    my $echo = eval { decode_json($res->content) } || {};
    return ($res->code, (@{ $echo->{traceparent} || [] })[0] // '');
}

# --- the attack, then the victim ------------------------------------------
my $rdir = "$top/received";
my $gate = "$top/gate";
mkdir $rdir or die;
my ($rport, $rpid) = otlp_receiver($rdir, $gate);
push @receivers, $rpid;
my $G = gateway('g', <<"T");
AuraTraceEndpoint http://127.0.0.1:$rport
AuraTraceSampleRatio 0
AuraTraceTrustParent 127.0.0.3
AuraTraceQueueSize $QUEUE
AuraTraceBatchSize 8
AuraTraceExportTimeout 120s
T
ok(wait_until(20, sub { metric($G, 'aura_trace_spans_queued') >= 0 }),
   'the gateway is up');
my $before = metrics($G);
is($before->{aura_trace_spans_recorded_total}, 0, 'nothing recorded yet');

# Ids whose low 64 bits are near 0: what the ratio on the id itself
# would always sample.
my (@att, @att_ids);
my $n = 0;
for my $from ('127.0.0.2', '127.0.0.4') {
    for my $i (1 .. 12) {
        my $id = sprintf('%016x%016x', 0xa77ac4e5 + $n, $i);
        my %spoof = $i == 1 ? ('X-Forwarded-For' => '127.0.0.3') : ();
        my $rid = new_reqid("trace-att-$n");
        my ($code, $got) = call($G, $from, $rid,
                                "00-$id-00f067aa0ba902b7-01", %spoof);
        push @att, { rid => $rid, code => $code, got => $got, id => $id };
        push @att_ids, $id;
        $n++;
    }
}
is(scalar(grep { $_->{code} == 200 } @att), scalar(@att),
   'attackers: every request got 200');
is(scalar(grep { count_of($_->{rid}) == 1 } @att), scalar(@att),
   'attackers: every request ran exactly once');
is(scalar(grep { $_->{got} =~ /^00-\Q$_->{id}\E-([0-9a-f]{16})-00$/
                 && $1 ne '00f067aa0ba902b7' } @att), scalar(@att),
   'attackers: the service got their trace id, the gateway\'s span id, '
   . 'unsampled');
my $after_att = metrics($G);
is($after_att->{aura_trace_spans_recorded_total}, 0,
   'attackers: no span recorded');

my (@vic, %vic_ids);
for my $i (1 .. 3) {
    my $id = sprintf('%016x%016x', 0xf1c714, $i);
    my $rid = new_reqid("trace-vic-$i");
    my ($code, $got) = call($G, '127.0.0.3', $rid,
                            "00-$id-1111111111111111-01");
    push @vic, { rid => $rid, code => $code, got => $got, id => $id };
    $vic_ids{$id} = 1;
}
is(scalar(grep { $_->{code} == 200 } @vic), 3, 'victim: every request 200');
is(scalar(grep { count_of($_->{rid}) == 1 } @vic), 3,
   'victim: every request ran exactly once');
is(scalar(grep { $_->{got} =~ /^00-\Q$_->{id}\E-[0-9a-f]{16}-01$/ } @vic), 3,
   'victim (trusted): the service got the trace, sampled');
my $after_vic = metrics($G);
my $recorded = $after_vic->{aura_trace_spans_recorded_total} // 0;
ok($recorded > 0 && $recorded <= $QUEUE,
   "victim: its spans recorded ($recorded), within the queue");
is(dropped($after_vic), dropped($before),
   'victim: none of its spans dropped while the export is held');

# Open the gate: everything queued is exported.
open(my $gf, '>', $gate) or die;
close $gf;
my @spans;
ok(wait_until(60, sub {
       my $m = metrics($G);
       ($m->{aura_trace_spans_exported_total} // 0) >= $recorded
       && ($m->{aura_trace_spans_queued} // -1) == 0;
   }), 'the queue drained once the collector answered');
@spans = otlp_spans(map { eval { decode_json($_->{body}) } }
                    otlp_received($rdir));
my %att = map { $_ => 1 } @att_ids;
is(scalar(grep { $att{$_->{traceId}} } @spans), 0,
   'attackers: no span exported');
is(scalar(grep { $vic_ids{$_->{traceId}} } @spans), $recorded,
   "victim: all its $recorded spans arrived");
my %servers = map { $_->{traceId} => 1 } grep { $_->{kind} == 2 } @spans;
is(scalar(grep { $servers{$_} } keys %vic_ids), 3,
   'victim: a server span for each request');
my $end = metrics($G);
is(dropped($end), dropped($before), 'dropped_total unchanged');

# --- behind mod_remoteip: its client address is the one trusted ----------
my $mods = '/usr/lib/apache2/modules';
my $R = gateway('r', <<"T",
LoadModule remoteip_module $mods/mod_remoteip.so
RemoteIPHeader X-Forwarded-For
RemoteIPInternalProxy 127.0.0.1
AuraTraceEndpoint http://127.0.0.1:$rport
AuraTraceSampleRatio 0
AuraTraceTrustParent 127.0.0.3
T
                 [ 'only2.test', 'AuraTraceTrustParent 127.0.0.2' ],
                 [ 'none.test', 'AuraTraceTrustParent none' ]);
ok(wait_until(20, sub { metric($R, 'aura_trace_spans_queued') >= 0 }),
   'the gateway behind a proxy is up');
my $tid = '0123456789abcdef0123456789abcdef';
my (undef, $got) = call($R, '127.0.0.1', new_reqid('trace-rip-1'),
                        "00-$tid-2222222222222222-01",
                        'X-Forwarded-For' => '127.0.0.3');
like($got, qr/^00-$tid-[0-9a-f]{16}-01$/,
     'through the proxy for 127.0.0.3 (trusted): sampled');
(undef, $got) = call($R, '127.0.0.1', new_reqid('trace-rip-2'),
                     "00-$tid-2222222222222222-01",
                     'X-Forwarded-For' => '127.0.0.2');
like($got, qr/^00-$tid-[0-9a-f]{16}-00$/,
     'through the proxy for 127.0.0.2: not sampled');

# A VirtualHost's list replaces the main server's, "none" included.
(undef, $got) = call($R, '127.0.0.1', new_reqid('trace-rip-3'),
                     "00-$tid-2222222222222222-01", Host => 'only2.test',
                     'X-Forwarded-For' => '127.0.0.2');
like($got, qr/^00-$tid-[0-9a-f]{16}-01$/,
     'a VirtualHost trusting 127.0.0.2: sampled from there');
(undef, $got) = call($R, '127.0.0.1', new_reqid('trace-rip-4'),
                     "00-$tid-2222222222222222-01", Host => 'only2.test',
                     'X-Forwarded-For' => '127.0.0.3');
like($got, qr/^00-$tid-[0-9a-f]{16}-00$/,
     'and not from 127.0.0.3, which only the main server trusts');
(undef, $got) = call($R, '127.0.0.1', new_reqid('trace-rip-5'),
                     "00-$tid-2222222222222222-01", Host => 'none.test',
                     'X-Forwarded-For' => '127.0.0.3');
like($got, qr/^00-$tid-[0-9a-f]{16}-00$/,
     'a VirtualHost saying none: not sampled from 127.0.0.3');
