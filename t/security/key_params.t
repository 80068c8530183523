# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Issue #29, point 5: keys and secrets never travel.
# - An ambiguous key is refused and logged: more than one key parameter
#   in the query (apikey in any spelling, case or encoding: APIKEY,
#   api%6Bey, api_key, x-api-key, after a ";"), or a query key and a
#   header key that differ, or two header keys that differ: 401
#   ambiguous-key (AURA01750), the service never runs.  A service_role
#   key among them is refused as such (401 key-not-allowed-in-query,
#   AURA00042: the key leaked, rotate it), wherever it stood.
# - Every key parameter leaves the query before it is forwarded, on both
#   planes and both paths: the service and the upstream never see one.
# Requests are written by hand (HTTP/1.0, so that no name or escape is
# rewritten on the way).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use IO::Socket::INET;
use JSON::PP;
use Aura::Test qw(ANON_KEY console_token exec_count new_reqid wait_until
                  error_log_size error_log_since t_dir);
use Aura::Upstream qw(upstream_stats upstream_log);

my $ANON = ANON_KEY;
my $SERVICE = 'ak_test_service_0123456789abcdef';
my $UNKNOWN = 'ak_test_unknown_0123456789abcdef';

# Refused on the data plane: [ name, target, [headers], type ].
my @refused = (
    # a service_role key in the query, hidden by a second parameter or
    # another spelling, next to a header key
    [ 'two apikey parameters', "/v1/functions/x?apikey=$SERVICE&apikey="
      . "$SERVICE&page=1", [ "apikey: $ANON" ], 'key-not-allowed-in-query' ],
    [ 'APIKEY', "/v1/functions/x?APIKEY=$SERVICE&page=1", [ "apikey: $ANON" ],
      'key-not-allowed-in-query' ],
    [ 'api%6Bey', "/v1/functions/x?api%6Bey=$SERVICE", [ "apikey: $ANON" ],
      'key-not-allowed-in-query' ],
    [ 'api_key', "/v1/functions/x?page=1&api_key=$SERVICE",
      [ "apikey: $ANON" ], 'key-not-allowed-in-query' ],
    [ 'x-api-key as a parameter', "/v1/functions/x?x-api-key=$SERVICE",
      [ "apikey: $ANON" ], 'key-not-allowed-in-query' ],
    [ 'after a ;', "/v1/functions/x?page=1;apikey=$SERVICE",
      [ "apikey: $ANON" ], 'key-not-allowed-in-query' ],
    [ 'anon then service_role, streaming', "/v1/test/stream/ch?apikey=$ANON"
      . "&apikey=$SERVICE", [], 'key-not-allowed-in-query' ],
    # ambiguous
    [ 'two junk keys next to a header key',
      '/v1/functions/x?apikey=junk1&apikey=junk2', [ "apikey: $ANON" ],
      'ambiguous-key' ],
    [ 'the same key twice, two spellings, streaming',
      "/v1/test/stream/ch?apikey=$ANON&APIKEY=$ANON", [], 'ambiguous-key' ],
    [ 'a query key that differs from the header key',
      "/v1/functions/x?apikey=$UNKNOWN", [ "apikey: $ANON" ],
      'ambiguous-key' ],
    [ 'an undecodable query key next to a header key',
      '/v1/functions/x?apikey=%zz', [ "apikey: $ANON" ], 'ambiguous-key' ],
    [ 'apikey and X-API-Key headers that differ', '/v1/functions/x',
      [ "apikey: $ANON", "X-API-Key: $UNKNOWN" ], 'ambiguous-key' ],
    [ 'two apikey headers that differ', '/v1/functions/x',
      [ "apikey: $ANON", "apikey: $UNKNOWN" ], 'ambiguous-key' ],
);

# Accepted on the data plane (NATS path): [ name, target, [headers], the
# query the service receives ].
my @accepted = (
    [ 'the header key again in the query',
      "/v1/functions/x?apikey=$ANON&page=1", [ "apikey: $ANON" ], 'page=1' ],
    [ 'Api%4Bey alone, streaming', "/v1/test/stream/ch?x=1&Api%4Bey=$ANON&y=2",
      [], 'x=1&y=2' ],
    [ 'APIKEY after a ;, streaming', "/v1/test/stream/ch?x=1;APIKEY=$ANON",
      [], 'x=1' ],
    [ 'the same key in both headers', '/v1/functions/x?q=1',
      [ "apikey: $ANON", "X-API-Key: $ANON" ], 'q=1' ],
);

plan tests => 3 * @refused + 3 * @accepted + 3 + 4 + 2 + 1;

sub port { Apache::Test::config()->{vhosts}{$_[0]}{port} }

# One request, written as is: (status, {lower-cased headers}, body).
sub req {
    my ($vhost, $target, @headers) = @_;
    my $port = port($vhost);
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
                                  Timeout => 10) or return (0, {}, '');
    print $s "GET $target HTTP/1.0\r\nHost: 127.0.0.1:$port\r\n"
        . join('', map { "$_\r\n" } @headers) . "\r\n";
    my $resp = do { local $/; <$s> } // '';
    close $s;
    my ($head, $body) = split /\r\n\r\n/, $resp, 2;
    my ($code) = ($head // '') =~ m{^HTTP/1\.\d (\d{3})};
    my %h;
    for (split /\r\n/, $head // '') {
        $h{lc $1} = $2 if /^([^:\s]+):\s*(.*)$/;
    }
    return ($code // 0, \%h, $body // '');
}

sub problem_type {
    my ($body) = @_;
    return $body =~ m{"type"\s*:\s*"/problems/([^"]+)"} ? $1 : '';
}

# What the example service received (X-Example-Headers: json).
sub received {
    my ($body) = @_;
    return eval { decode_json($body) } || {};
}

my $log0 = error_log_size();
my ($n_service, $n_ambiguous) = (0, 0);
for my $c (@refused) {
    my ($name, $target, $headers, $type) = @$c;
    my $id = new_reqid('keyparam');
    my ($code, undef, $body) = req('aura_data', $target, @$headers,
                                   "X-Request-Id: $id");
    is($code, 401, "$name: 401");
    is(problem_type($body), $type, "$name: problem $type");
    is(exec_count($id), 0, "$name: the service never ran");
    $n_service++ if $type eq 'key-not-allowed-in-query';
    $n_ambiguous++ if $type eq 'ambiguous-key';
}

for my $c (@accepted) {
    my ($name, $target, $headers, $query) = @$c;
    my ($code, undef, $body) = req('aura_data', $target, @$headers,
                                   'X-Example-Headers: json');
    my $got = received($body);
    is($code, 200, "$name: 200");
    is_deeply($got->{'Aura-Query'}, [$query],
              "$name: the service receives $query");
    is_deeply($got->{'Aura-Project'}, ['proj-a'], "$name: authenticated");
}

my $log = error_log_since($log0);
my @svc = $log =~ /AURA00042: service_role key of project proj-a sent in a URL/g;
is(scalar @svc, $n_service,
   "each service_role key in a URL logged as AURA00042 ($n_service)");
my @amb = $log =~ /AURA01750: ambiguous API key refused/g;
is(scalar @amb, $n_ambiguous,
   "each ambiguous key logged as AURA01750 ($n_ambiguous)");
my @leaked = grep { $log =~ /\Q$_\E/ } ($ANON, $SERVICE, $UNKNOWN);
is("@leaked", '', 'no key value in the error log');

# The HTTP path: the upstream never sees a key parameter.
{
    my $s0 = upstream_stats();
    my $id = new_reqid('keyparam-http');
    my ($code) = req('aura_data', "/v1/storage/object/a.txt?x=1&API%5FKEY="
                     . "$ANON&y=2", "apikey: $ANON", "X-Request-Id: $id");
    is($code, 200, 'HTTP path: a key parameter equal to the header key: 200');
    my ($got) = grep { ($_->{headers}{'aura-request-id'} // '') eq $id }
                     @{ upstream_log($s0->{log_lines}) };
    is(($got || {})->{path}, '/storage/object/a.txt?x=1&y=2',
       'HTTP path: the upstream receives the query without it');
    my $id2 = new_reqid('keyparam-http');
    ($code) = req('aura_data', "/v1/storage/object/a.txt?apikey=$SERVICE"
                  . "&APIKEY=$SERVICE", "apikey: $ANON", "X-Request-Id: $id2");
    is($code, 401, 'HTTP path: service_role keys in the query: 401');
    my @saw = grep { ($_->{headers}{'aura-request-id'} // '') eq $id2 }
                   @{ upstream_log($s0->{log_lines}) };
    is(scalar @saw, 0, 'HTTP path: the upstream never saw that request');
}

# The management plane reads no key: every key parameter leaves the query.
{
    my ($code, undef, $body) = req('aura_mgmt', "/v1/functions/m?apikey="
        . "$SERVICE&APIKEY=x&x=1&api%6Bey=y;api_key=z",
        'Authorization: Bearer ' . console_token('user-member'),
        'X-Project-Id: proj-a', 'X-Example-Headers: json');
    is($code, 200, 'management plane: served');
    is_deeply(received($body)->{'Aura-Query'}, ['x=1'],
              'management plane: no key parameter reaches the service');
}

# No key in any log line.
{
    my $dir = t_dir() . '/logs';
    my $logs = error_log_since($log0);
    for my $f (qw(aura_query.log aura_access.log aura_access.json access_log)) {
        local (@ARGV, $/) = "$dir/$f";
        $logs .= <> if -e "$dir/$f";
    }
    my @shown = grep { index($logs, $_) >= 0 } ($ANON, $SERVICE, $UNKNOWN);
    is("@shown", '', 'no key in any log');
}
