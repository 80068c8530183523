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
# redacted, but every spelling of apikey is taken out of the query (and,
# on the data plane next to a header key, refused as ambiguous: issue
# #29, t/security/key_params.t).
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

# Names that must be hidden; the first six are spellings of "apikey".
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
my %in_r;     # request id => 1 when only %r has it (a key parameter,
              # taken out of the query before %q is written)

# Whether a parameter name is apikey in some spelling (aura_apikey.c's
# rule): decoded up to three times, letters and digits, lower case.
sub key_name {
    my ($n) = @_;
    for (1 .. 3) {
        last unless $n =~ s/%([0-9A-Fa-f]{2})/chr(hex($1))/ge;
    }
    ($n = lc $n) =~ s/[^a-z0-9]//g;
    return $n eq 'apikey' || $n eq 'xapikey';
}

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
    if (key_name($name) && $plane eq 'aura_data') {
        is($res->code, 401, "$plane, ?$name=: refused (a second key)");
        like($res->content, qr{/problems/ambiguous-key},
             "$plane, ?$name=: ambiguous-key");
        $in_r{$id} = 1;
    }
    elsif (key_name($name)) {
        is($res->code, 200, "$plane, ?$name=: served");
        is_deeply($h->{'Aura-Query'}, ['page=2'],
                  "$plane, ?$name=: taken out of the forwarded query");
        $in_r{$id} = 1;
    }
    else {
        is($res->code, 200, "$plane, ?$name=: served");
        is_deeply($h->{'Aura-Query'}, ["page=2&$name=$s"],
                  "$plane, ?$name=: the service receives the query as sent");
    }
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
    my $res = GET('/v1/test/stream/ch?x=1&apikey=' . ANON_KEY
                  . '&access_token=' . secret(), 'X-Request-Id' => $id,
                  'X-Example-Headers' => 'json');
    my $h = json_body($res) || {};
    is($res->code, 200, 'streaming route: the key in ?apikey= accepted');
    is_deeply($h->{'Aura-Query'}, ["x=1&access_token=$secrets[-1]"],
              'apikey taken out of the forwarded query, access_token is not');
    is(index($res->content, ANON_KEY), -1, 'the key is not forwarded');
    $marked{$id} = 'access_token';
    push @secrets, ANON_KEY;
}

# The HTTP path: the upstream gets the query as sent.
{
    Apache::TestRequest::module('aura_data');
    my $s0 = upstream_stats();
    my $id = new_reqid('leakh');
    my $s = secret();
    my $res = GET("/v1/storage/object/a.txt?Access_Token=$s&x=1",
                  apikey => ANON_KEY, 'X-Request-Id' => $id);
    is($res->code, 200, 'HTTP path: served');
    my ($got) = grep { ($_->{headers}{'aura-request-id'} // '') eq $id }
                     @{ upstream_log($s0->{log_lines}) };
    is(($got || {})->{path}, "/storage/object/a.txt?Access_Token=$s&x=1",
       'HTTP path: the upstream receives the query as sent');
    $marked{$id} = 'Access_Token';
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

# The logs.  mod_log_config writes a line after its response, and over
# HTTP/2 when the stream is cleaned up, which may come after a later
# request's line: wait for the refused request's line and for every
# marked request's.
my $dir = t_dir() . '/logs';
sub slurp { my $f = shift; local (@ARGV, $/) = $f; return -e $f ? <> : '' }
my $query_log = '';
my %lines;
ok(wait_until(10, sub {
       $query_log = slurp("$dir/aura_query.log");
       %lines = ();
       for my $line (split /\n/, $query_log) {
           my ($id) = split /\|/, $line;
           $lines{$id} = $line if $marked{$id};
       }
       $query_log =~ m{/v1/functions/x\?token=(?:REDACTED|\Q$raw_secret\E) }
           && keys(%lines) == keys(%marked);
   }), 'the refused request and every marked request have their lines');
my @bad = grep {
    my $name = $marked{$_};
    my $want = quotemeta("$name=REDACTED");
    # %r, %U%q and %q: the marker three times; a key parameter, taken out
    # of the query, in %r alone.
    !defined $lines{$_}
        || (() = $lines{$_} =~ /$want/g) != ($in_r{$_} ? 1 : 3);
} sort keys %marked;
is("@bad", '', 'every line shows the marker in %r, %U%q and %q (a key '
   . 'parameter in %r alone)');
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
