# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Issue #15, point 7: no credential reaches a log line in clear under a
# look-alike name.  Every spelling of a key (APIKEY, api_key, Api-Key,
# %61pikey, api%5Fkey, double-encoded), the metrics token under ?token=
# and ?access_token=, and other credential-looking names are sent on
# both planes, on the NATS and the HTTP path, and in a request httpd
# refuses before any hook of ours ran; then the access logs (the aura
# and aura_json formats, a format with %r, %U%q and %q, the main
# access_log) and the error log must not hold a single secret, and the
# lines must show the marker instead.  What a service receives is not
# redacted: only the exact apikey parameter is taken out of the query.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Socket::INET;
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Aura::Test qw(new_reqid json_body console_token t_dir wait_until
                  error_log_size error_log_since ANON_KEY proto raw_connect);
use Aura::Upstream qw(upstream_stats upstream_log);

# The request line's protocol in the access logs: the pass's (LWP's
# requests; the raw socket's below is always HTTP/1.1).
my $HTTP = proto() eq 'h1' ? 'HTTP/1\.1' : 'HTTP/2\.0';

# Names that must be hidden; none but the exact "apikey" is a key.
my @names = ('APIKEY', 'api_key', 'Api-Key', '%61pikey', 'api%5Fkey',
             '%2561pikey', 'token', 'access_token', 'Access-Token',
             'password', 'client_secret', 'X-Amz-Signature', 'jwt');

my $metrics_token = do {
    open(my $fh, '<', $ENV{AURA_TEST_METRICS_TOKEN_FILE}) or die $!;
    local $/;
    my $t = <$fh>;
    $t =~ s/\s+$//;
    $t;
};

plan tests => 2 * (2 * @names) + 4 + 3 + 2 + 1 + 7;

my $log_from = error_log_size();
my $n = 0;
my @secrets = ($metrics_token);
my %marked;   # request id => the name whose value must show REDACTED

sub secret {
    my $s = sprintf('Leak%02dq7ZpK2mWx9', ++$n);
    push @secrets, $s;
    return $s;
}

# One spelling on one plane: the service receives it as sent.
sub spelling {
    my ($plane, $name, @auth) = @_;
    my $s = secret();
    my $id = new_reqid("leak$n");
    my $path = $plane eq 'aura_data' ? '/v1/functions/x' : '/v1/functions/m';
    Apache::TestRequest::module($plane);
    my $res = GET("$path?page=2&$name=$s", 'X-Request-Id' => $id,
                  'X-Example-Headers' => 'json', @auth);
    my $h = json_body($res) || {};
    is($res->code, 200, "$plane, ?$name=: served");
    is_deeply($h->{'Aura-Query'}, ["page=2&$name=$s"],
              "$plane, ?$name=: the service receives the query as sent");
    $marked{$id} = $name;
}

for my $name (@names) {
    spelling('aura_data', $name, apikey => ANON_KEY);
}
my @console = ('X-Project-Id' => 'proj-a',
               Authorization => 'Bearer ' . console_token('user-member'));
for my $name (@names) {
    spelling('aura_mgmt', $name, @console);
}

# The metrics token in the URL is no credential (only the Authorization
# header is), and is hidden like any other.
for my $plane ('aura_data', 'aura_mgmt') {
    for my $name ('token', 'access_token') {
        my $id = new_reqid('leakm');
        Apache::TestRequest::module($plane);
        my $res = GET("/metrics?$name=$metrics_token",
                      'X-Request-Id' => $id);
        is($res->code, 401, "$plane: /metrics?$name=<the token> is refused");
        $marked{$id} = $name;
    }
}

# The exact apikey on a streaming route: the key authenticates, leaves
# the forwarded query, and the line shows the marker.
{
    Apache::TestRequest::module('aura_data');
    my $id = new_reqid('leakk');
    my $res = GET('/v1/test/stream/ch?x=1&apikey=' . ANON_KEY . '&api_key='
                  . secret(), 'X-Request-Id' => $id,
                  'X-Example-Headers' => 'json');
    my $h = json_body($res) || {};
    is($res->code, 200, 'streaming route: the key in ?apikey= accepted');
    is_deeply($h->{'Aura-Query'}, ["x=1&api_key=$secrets[-1]"],
              'apikey taken out of the forwarded query, api_key is not');
    is(index($res->content, ANON_KEY), -1, 'the key is not forwarded');
    $marked{$id} = 'api_key';
    push @secrets, ANON_KEY;
}

# The HTTP path: the upstream gets the query as sent.
{
    Apache::TestRequest::module('aura_data');
    my $s0 = upstream_stats();
    my $id = new_reqid('leakh');
    my $s = secret();
    my $res = GET("/v1/storage/object/a.txt?Api_Key=$s&x=1",
                  apikey => ANON_KEY, 'X-Request-Id' => $id);
    is($res->code, 200, 'HTTP path: served');
    my ($got) = grep { ($_->{headers}{'aura-request-id'} // '') eq $id }
                     @{ upstream_log($s0->{log_lines}) };
    is(($got || {})->{path}, "/storage/object/a.txt?Api_Key=$s&x=1",
       'HTTP path: the upstream receives the query as sent');
    $marked{$id} = 'Api_Key';
}

# A request httpd refuses before post_read_request (a header line with
# no colon): logged all the same, and redacted all the same.
my $raw_secret = secret();
{
    Apache::TestRequest::module('aura_data');
    my $hp = Apache::TestRequest::hostport();
    my $sock = raw_connect(PeerAddr => $hp, Timeout => 10)
        or die "connect $hp: $!";
    print $sock "GET /v1/functions/x?token=$raw_secret HTTP/1.1\r\n"
        . "Host: localhost\r\nno colon here\r\n\r\n";
    my $status = <$sock> // '';
    close $sock;
    like($status, qr{^HTTP/1\.1 400}, 'a malformed header: 400 from httpd');
    push @secrets, $raw_secret;
}

# The logs.  mod_log_config writes a line after its response: wait for
# the last one.
my $dir = t_dir() . '/logs';
sub slurp { my $f = shift; local (@ARGV, $/) = $f; return -e $f ? <> : '' }
my $query_log = '';
ok(wait_until(5, sub {
       $query_log = slurp("$dir/aura_query.log");
       $query_log =~ m{/v1/functions/x\?token=(?:REDACTED|\Q$raw_secret\E) }
   }), 'the refused request has its line');
my %lines;
for my $line (split /\n/, $query_log) {
    my ($id) = split /\|/, $line;
    $lines{$id} = $line if $marked{$id};
}
my @bad = grep {
    my $name = $marked{$_};
    my $want = quotemeta("$name=REDACTED");
    # %r, %U%q and %q: the marker three times.
    !defined $lines{$_} || (() = $lines{$_} =~ /$want/g) != 3;
} sort keys %marked;
is("@bad", '', 'every line shows the marker in %r, %U%q and %q');
like($query_log, qr{\|GET /v1/functions/x\?token=REDACTED HTTP/1\.1\|},
     'the request refused before any hook: its request line redacted');

my $all = $query_log . error_log_since($log_from);
for my $log ('aura_access.log', 'aura_access.json', 'access_log') {
    $all .= slurp("$dir/$log");
}
my @leaked = grep { index($all, $_) >= 0 } @secrets;
is("@leaked", '', 'no secret in the access logs or the error log');
like(slurp("$dir/aura_access.log"),
     qr{"GET /v1/functions/x\?page=2&%61pikey=REDACTED $HTTP"},
     'the aura format shows the request line redacted');
like(slurp("$dir/aura_access.log"),
     qr{"GET /metrics\?access_token=REDACTED $HTTP"},
     'and the metrics token in a URL');
unlike(error_log_since($log_from), qr/AURA\d+: .*q7ZpK2mW/,
       'no tagged error line quotes a secret');
