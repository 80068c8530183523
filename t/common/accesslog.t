# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The access log formats of conf/aura-logformats.conf, and the trace
# context:
# - a line per request in each format, with plane, service, upstream
#   kind, project, actor, role, limiter and breaker outcome, request id,
#   trace id and duration; every aura_json line is valid JSON;
# - no key and no token ever appears in either log, even when a client
#   sends them where they would show (the query string, odd headers);
# - a valid traceparent keeps its trace id, the upstream gets a span id
#   of the gateway's; an invalid one starts a new trace and its
#   tracestate is dropped.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use JSON::PP;
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Aura::Test qw(new_reqid mint t_dir json_body ANON_KEY wait_until
                  error_log_size error_log_since);

plan tests => 27;

Apache::TestRequest::module('aura_data');
my $TOKEN = mint(qw(--alg RS256 --kid r1 --sub log-user --exp-in 300
                    --project proj-a --key), "$ENV{AURA_TEST_JWT_DIR}/rsa.key");
my $SERVICE = 'ak_test_service_0123456789abcdef';
my $plain = t_dir() . '/logs/aura_access.log';
my $json = t_dir() . '/logs/aura_access.json';

sub slurp { my $f = shift; local (@ARGV, $/) = $f; return -e $f ? <> : '' }

# The line of request $id in the JSON log (mod_log_config writes it
# after the response: wait a little for it).
sub json_line {
    my ($id) = @_;
    my $line;
    wait_until(5, sub {
        ($line) = grep { index($_, "\"$id\"") >= 0 } split /\n/, slurp($json);
        defined $line;
    });
    return $line;
}

my $id = new_reqid('log');
my $tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
my $res = GET('/v1/functions/x?apikey=' . ANON_KEY, apikey => ANON_KEY,
              Authorization => "Bearer $TOKEN", 'X-Request-Id' => $id,
              traceparent => $tp, tracestate => 'vendor=1',
              'X-Example-Headers' => 'json');
is($res->code, 200, 'a key in the query as well as in the header: the '
   . 'header\'s is used, the query\'s only redacted');
$res = GET('/v1/functions/x', apikey => ANON_KEY,
           Authorization => "Bearer $TOKEN", 'X-Request-Id' => $id . 'b',
           traceparent => $tp, tracestate => 'vendor=1',
           'X-Example-Headers' => 'json');
is($res->code, 200, 'an authenticated request');
my $line = json_line($id . 'b');
my $j = eval { decode_json($line // '') } || {};
ok($line && %$j, 'its aura_json line is JSON');
is($j->{plane}, 'data', 'plane');
is($j->{service}, 'functions', 'service');
is($j->{upstream}, 'nats', 'upstream kind');
is($j->{project}, 'proj-a', 'project');
is($j->{actor}, 'log-user', 'actor: the token\'s sub');
is($j->{role}, 'authenticated', 'role');
is($j->{trace_id}, '4bf92f3577b34da6a3ce929d0e0e4736', 'trace id');
is($j->{problem}, '-', 'no problem');
ok(defined $j->{duration_us} && $j->{duration_us} =~ /^\d+$/,
   'duration in microseconds');

my ($pline) = grep { /req=\Q${id}b\E / || /req=\Q${id}b\E$/ }
              split /\n/, slurp($plain);
like($pline // '', qr/plane=data service=functions upstream=nats project=proj-a actor=log-user role=authenticated limit=pass breaker=- /,
     'the aura format: the same fields');
like($pline // '', qr/trace=4bf92f3577b34da6a3ce929d0e0e4736$/,
     'and the trace id');

# Nothing secret in either log.
my $logs = slurp($plain) . slurp($json);
unlike($logs, qr/\Q${\ ANON_KEY}\E/, 'no API key in the access logs');
unlike($logs, qr/\Q$SERVICE\E/, 'no service key either');
my $sig = (split /\./, $TOKEN)[2];
unlike($logs, qr/\Q$sig\E/, 'no token in the access logs');

# Trace context as the service saw it (X-Example-Headers: json echoes
# the request headers it got).
my $h = json_body($res) || {};
my ($sent) = @{ $h->{traceparent} || [] };
like($sent // '', qr/^00-4bf92f3577b34da6a3ce929d0e0e4736-([0-9a-f]{16})-01$/,
     'the service got the client\'s trace id');
my ($span) = ($sent // '') =~ /-([0-9a-f]{16})-01$/;
isnt($span // '', '00f067aa0ba902b7', 'with the gateway\'s span as parent');
is(($h->{tracestate} || [])->[0], 'vendor=1', 'tracestate kept');
$res = GET('/v1/functions/x', apikey => ANON_KEY,
           traceparent => '00-zz-bad', tracestate => 'vendor=2',
           'X-Example-Headers' => 'json');
$h = json_body($res) || {};
($sent) = @{ $h->{traceparent} || [] };
like($sent // '', qr/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/,
     'an invalid traceparent: a new trace');
ok(!$h->{tracestate}, 'and the tracestate of the old one is dropped');

# Refusals are logged with their stage.
my $rid = new_reqid('log401');
GET('/v1/functions/x', 'X-Request-Id' => $rid);
$line = json_line($rid);
$j = eval { decode_json($line // '') } || {};
is($j->{status}, 401, 'a 401 is logged');
is($j->{limit}, 'pass', 'not by a limiter');
is($j->{problem}, 'missing-key', 'the problem type of its body');
is($j->{request_id}, $rid, 'with its request id');

# The request id in the plane's error log lines (ErrorLogFormat with
# %{aura-request-id}n, as in conf/mod_aura.conf).
my $from = error_log_size();
my $eid = new_reqid('errlog');
GET('/v1/functions/x', apikey => 'ak_test_nowhere_0123456789abcdef',
    'X-Request-Id' => $eid);
my ($eline) = grep { /AURA00041/ } split /\n/, error_log_since($from);
like($eline // '', qr/\[req \Q$eid\E\] AURA00041: unknown or revoked API key/,
     'an error log line carries the request id');
