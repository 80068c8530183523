# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Issue #29, point 4: a role rule sees the path the service will act on.
# The sample's admin rule on key rotation (conf/aura-mgmt-routes.conf) is
# attacked by a console member with every spelling a common framework
# maps to the route .../keys/rotate:
# - ";parameters" (raw, %3B, %3b) in any segment: Spring, Tomcat and
#   Jetty drop them, find-my-way (Fastify) cuts the path there; refused
#   with 400 path-parameters on both planes (AURA00400) unless a data
#   plane VirtualHost says AuraPathParams allow;
# - case (Express routes without regard to case), a ".json" or other
#   suffix (Rails formats, Spring's suffix patterns), a trailing slash
#   (Express, Spring, Rails, Flask), an encoded letter (every framework
#   decodes before matching): the rule needs admin;
# - "//", "%2F", dot-segments (Go's ServeMux and Werkzeug clean them):
#   400 invalid-request, as before.
# For each, as member: the status and problem type, zero executions at
# the service (the example service behind aura.control counts them by
# request id) and no invalidation broadcast, i.e. no rotation.  As
# admin, a few of the same spellings: 200, executed once, broadcast (the
# rule applies, the route still works).  Requests are written by hand on
# a socket: LWP would normalize them.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use File::Temp qw(tempdir);
use IO::Socket::INET;
use Aura::Test qw(ANON_KEY console_token exec_count new_reqid wait_until
                  error_log_size error_log_since private_httpd t_dir);
use Aura::Upstream qw(upstream_stats upstream_log);

my $P = '/v1/projects/proj-a';

# As member: [ path, status, problem type ].
my @member = (
    # ;parameters, raw and encoded, in an earlier segment or the last
    [ "$P/keys;x/rotate", 400, 'path-parameters' ],
    [ "$P/KEYS;v=1/Rotate", 400, 'path-parameters' ],
    [ "$P/keys%3Bx/rotate", 400, 'path-parameters' ],
    [ "$P/keys%3bx/rotate", 400, 'path-parameters' ],
    [ "$P/keys/rotate;x=1", 400, 'path-parameters' ],
    [ "$P/keys/rotate%3B.json", 400, 'path-parameters' ],
    [ "$P/keys/rotate;", 400, 'path-parameters' ],
    [ "$P;x/keys/rotate", 400, 'path-parameters' ],
    [ '/v1;x/projects/proj-a/keys/rotate', 400, 'path-parameters' ],
    # case
    [ "$P/KEYS/Rotate", 403, 'forbidden' ],
    [ "$P/keys/ROTATE", 403, 'forbidden' ],
    [ "$P/Keys/rotate", 403, 'forbidden' ],
    # suffixes
    [ "$P/keys/rotate.json", 403, 'forbidden' ],
    [ "$P/keys/Rotate.JSON", 403, 'forbidden' ],
    [ "$P/keys/rotate.xml", 403, 'forbidden' ],
    [ "$P/keys/rotate%2Ejson", 403, 'forbidden' ],
    [ "$P/keys/rotate.", 403, 'forbidden' ],
    [ "$P/keys/rotate.json/", 403, 'forbidden' ],
    # trailing slash, sub-path
    [ "$P/keys/rotate/", 403, 'forbidden' ],
    [ "$P/keys/ROTATE/", 403, 'forbidden' ],
    [ "$P/keys/rotate/x", 403, 'forbidden' ],
    # encoded letters: one decoding gives the route
    [ "$P/%6Beys/rotate", 403, 'forbidden' ],
    [ "$P/keys/%72otate", 403, 'forbidden' ],
    [ "$P/keys/rot%61te.json", 403, 'forbidden' ],
    # what normalization would change
    [ "$P/keys//rotate", 400, 'invalid-request' ],
    [ "$P//keys/rotate", 400, 'invalid-request' ],
    [ "$P/keys%2Frotate", 400, 'invalid-request' ],
    [ "$P/keys%2frotate", 400, 'invalid-request' ],
    [ "$P/keys/x/../rotate", 400, 'invalid-request' ],
    [ "$P/keys/./rotate", 400, 'invalid-request' ],
    [ "$P/keys/%2e%2e/keys/rotate", 400, 'invalid-request' ],
    [ "$P/logs/..;/keys/rotate", 400, 'invalid-request' ],
    [ "$P/keys/rotate/x/..", 400, 'invalid-request' ],
    # the route itself
    [ "$P/keys/rotate", 403, 'forbidden' ],
);

# As admin: the rule applies to these spellings and the route still runs.
my @admin = ("$P/keys/rotate", "$P/KEYS/Rotate", "$P/keys/rotate.json",
             "$P/keys/rotate/", "$P/keys/%72otate");

# The data plane, both paths: ;parameters refused by default.
my @data = ('SVC;x/echo', 'SVC/echo;x=1', 'SVC/a%3Bb', 'SVC/a%3bb/c',
            'SVC/x;');

plan tests => 4 * @member + 4 * @admin + 2 * (2 * @data + 1) + 8 + 1;

my $member = console_token('user-member');
my $admin = console_token('user-admin');

sub port { Apache::Test::config()->{vhosts}{$_[0]}{port} }

# One request, written as is: (status, {lower-cased headers}, body).
sub raw_request {
    my ($port, $method, $target, @headers) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
                                  Timeout => 10) or return (0, {}, '');
    print $s "$method $target HTTP/1.1\r\nHost: 127.0.0.1:$port\r\n"
        . join('', map { "$_\r\n" } @headers)
        . "Content-Length: 0\r\nConnection: close\r\n\r\n";
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

my $BROADCAST = qr/AURA00016: keys of project proj-a rotated: invalidation sent/;
my $mgmt = port('aura_mgmt');

for my $row (@member) {
    my ($path, $status, $type) = @$row;
    my $id = new_reqid('rolepath');
    my $from = error_log_size();
    my ($code, undef, $body) = raw_request($mgmt, 'POST', $path,
        "Authorization: Bearer $member", "X-Request-Id: $id");
    is($code, $status, "member, $path: $status");
    is(problem_type($body), $type, "member, $path: problem $type");
    is(exec_count($id), 0, "member, $path: the service never ran");
    unlike(error_log_since($from), $BROADCAST,
           "member, $path: no rotation broadcast");
}

for my $path (@admin) {
    my $id = new_reqid('rolepath-admin');
    my $from = error_log_size();
    my ($code) = raw_request($mgmt, 'POST', $path,
        "Authorization: Bearer $admin", "X-Request-Id: $id");
    is($code, 200, "admin, $path: 200");
    is(exec_count($id), 1, "admin, $path: executed once");
    like(error_log_since($from), $BROADCAST,
         "admin, $path: the invalidation is broadcast");
    unlike(error_log_since($from), qr/AURA00400/, "admin, $path: admitted");
}

# The data plane: the NATS path (the example service) and the HTTP path
# (the test upstream).
my $data = port('aura_data');
my $log0 = error_log_size();
my $refused = 0;
for my $kind (qw(nats http)) {
    my $svc = $kind eq 'nats' ? '/v1/functions' : '/v1/storage';
    my $s0 = upstream_stats();
    my @ids;
    for my $p (@data) {
        (my $path = $p) =~ s/SVC/$svc/;
        my $id = new_reqid('rolepath-data');
        push @ids, $id;
        my ($code, undef, $body) = raw_request($data, 'GET', $path,
            'apikey: ' . ANON_KEY, "X-Request-Id: $id");
        is($code, 400, "data $kind, $path: 400");
        is(problem_type($body), 'path-parameters',
           "data $kind, $path: problem path-parameters");
        $refused++;
    }
    if ($kind eq 'nats') {
        my $runs = 0;
        $runs += exec_count($_) for @ids;
        is($runs, 0, 'data nats: the service never ran');
    }
    else {
        my %want = map { $_ => 1 } @ids;
        my @saw = grep { $want{$_->{headers}{'aura-request-id'} // ''} }
                       @{ upstream_log($s0->{log_lines}) };
        is(scalar @saw, 0, 'data http: the upstream saw none of them');
    }
}
my @tagged = error_log_since($log0) =~ /AURA00400: path refused: a ';'/g;
is(scalar @tagged, $refused, "each refusal logged as AURA00400 ($refused)");

# AuraPathParams allow: a data-plane VirtualHost whose services take ";"
# as a character of a name.  Dot-segments stay refused.
{
    my $dir = tempdir(CLEANUP => 1);
    my ($port, $httpd) = private_httpd(dir => $dir, children => 1,
                                       body => <<"CONF");
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraDBParams "$ENV{AURA_TEST_PG_CONNINFO}"
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    AuraPathParams allow
    Include @{[ t_dir() ]}/../conf/aura-routes.conf
</VirtualHost>
CONF
    my $started = system("$httpd -k start") == 0;
    ok($started
       && wait_until(20, sub {
              (raw_request($port, 'GET', '/v1/functions/x',
                           'apikey: ' . ANON_KEY))[0] == 200 }),
       'AuraPathParams allow: the server starts');
    for my $path ('/v1/functions/echo/a;b=1', '/v1/functions/a%3Bb') {
        my $id = new_reqid('rolepath-allow');
        my ($code, $h) = raw_request($port, 'GET', $path,
            'apikey: ' . ANON_KEY, "X-Request-Id: $id");
        is($code, 200, "allow, $path: 200");
        is($h->{'x-example-path'}, $path, "allow, $path: Aura-Path as sent");
        is(exec_count($id), 1, "allow, $path: executed once");
    }
    my ($code, undef, $body) = raw_request($port, 'GET',
        '/v1/storage/..;x/functions/echo', 'apikey: ' . ANON_KEY);
    is($code, 400, 'allow: ..;x is still a dot-segment: 400');
    system("$httpd -k stop") if $started;
}
