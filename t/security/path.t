# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Issue #15 point 5: the path that is authorized is the path that is
# forwarded.  On both planes and both paths (NATS: the example service
# behind /v1/functions; HTTP: the test upstream behind /v1/storage):
# - every raw path that httpd's normalization would change (dot-segments,
#   encoded ones, ";parameters" after one, //, %2F, %5C, %00 and other
#   encoded control characters, invalid escapes, a leading //, the same
#   in an absolute-form target) is answered 400 invalid-request
#   (AURA00400), and the service or upstream ran zero times;
# - a normal path reaches the service as sent (Aura-Path is the raw
#   path) and the upstream as the rules saw it (decoded, encoded again);
# - the key-rotation rule cannot be escaped: ".../rotate/", ".../rotate/x"
#   and another case need admin and broadcast the invalidation;
#   ".../rotate;x", ".../rotate/x/.." and ".../keys//rotate" are 400
#   (every other spelling of issue #29: t/security/role_paths.t).
# Requests are written by hand on a socket: LWP would normalize them.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use IO::Socket::INET;
use Aura::Test qw(ANON_KEY console_token exec_count new_reqid
                  error_log_size error_log_since);
use Aura::Upstream qw(upstream_stats upstream_log);

# Attacks: a name and a path with SVC standing for the service's prefix
# (/v1/functions or /v1/storage) and OTHER for the other one.
my @attacks = (
    [ 'another service through ..', 'OTHER/../SVC/x' ],
    [ 'another project through ..', '/v1/projects/proj-other/../proj-a/logs' ],
    [ 'a .. segment', 'SVC/x/../y' ],
    [ 'a trailing ..', 'SVC/x/..' ],
    [ 'a . segment', 'SVC/./x' ],
    [ '%2e%2e', 'SVC/%2e%2e/x' ],
    [ '.%2E', 'SVC/.%2E/x' ],
    [ '%2E.', 'OTHER/%2E./SVC/x' ],
    [ '%2e', 'SVC/x/%2e' ],
    [ '..;params', 'OTHER/..;x=1/SVC/x' ],
    [ '%2F', 'SVC/a%2Fb' ],
    [ '%2f', 'SVC/a%2fb' ],
    [ '..%2F', 'OTHER/..%2FSVC/x' ],
    [ '%5C', 'SVC/a%5Cb' ],
    [ '%00', 'SVC/a%00b' ],
    [ '%0D%0A', 'SVC/a%0D%0AX-Evil:%201' ],
    [ '%1F', 'SVC/a%1Fb' ],
    [ '%7F', 'SVC/a%7Fb' ],
    [ 'invalid escape %zz', 'SVC/a%zz' ],
    [ 'truncated escape', 'SVC/a%4' ],
    [ 'an empty segment', 'SVC//x' ],
    [ 'an empty segment early', '/v1//SVC_NAME/x' ],
    [ 'a leading //', '/SVC/x' ],
    [ 'absolute-form with ..', 'http://HOST/OTHER/../SVC/x' ],
    [ 'absolute-form with //', 'http://HOST/v1//SVC_NAME/x' ],
);

my %svc = (nats => '/v1/functions', http => '/v1/storage');
my %other = (nats => '/v1/storage', http => '/v1/functions');

plan tests => 2 * 2 * (2 * @attacks + 2) + 2 * 7 + 1 + 14;

my $owner = console_token('user-owner');
my $member = console_token('user-member');
my $admin = console_token('user-admin');

sub port { Apache::Test::config()->{vhosts}{$_[0]}{port} }

# One request, written as is: (status, {lower-cased headers}, body).
sub raw_request {
    my ($vhost, $method, $target, @headers) = @_;
    my $port = port($vhost);
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
                                  Timeout => 10) or die "connect: $!";
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

sub credentials {
    my ($vhost, $token) = @_;
    return $vhost eq 'aura_data'
        ? ("apikey: " . ANON_KEY)
        : ("Authorization: Bearer " . ($token // $owner),
           'X-Project-Id: proj-a');
}

sub upstream_saw {
    my ($since, @ids) = @_;
    my %want = map { $_ => 1 } @ids;
    return grep { $want{$_->{headers}{'aura-request-id'} // ''} }
                @{ upstream_log($since) };
}

my $log0 = error_log_size();
my $refused = 0;
for my $vhost (qw(aura_data aura_mgmt)) {
    for my $kind (qw(nats http)) {
        my $svc = $svc{$kind};
        (my $svc_name = $svc) =~ s{^/}{};
        my $host = '127.0.0.1:' . port($vhost);
        my $s0 = upstream_stats();
        my @ids;
        for my $a (@attacks) {
            my ($name, $path) = @$a;
            $path =~ s/SVC_NAME/$svc_name/g;
            $path =~ s/SVC/$svc/g;
            $path =~ s/OTHER/$other{$kind}/g;
            $path =~ s/HOST/$host/g;
            my $id = new_reqid('path');
            push @ids, $id;
            my ($code, $h, $body) = raw_request($vhost, 'POST', $path,
                credentials($vhost), "X-Request-Id: $id");
            is($code, 400, "$vhost $kind: $name ($path): 400");
            ok(($h->{'content-type'} // '') =~ m{^application/problem\+json}
               && $body =~ m{"type"\s*:\s*"/problems/invalid-request"}
               && $body =~ /\Q$id\E/,
               "$vhost $kind: $name: problem invalid-request with the "
               . 'request id');
            $refused++;
        }
        my $s1 = upstream_stats();
        if ($kind eq 'nats') {
            my $runs = 0;
            $runs += exec_count($_) for @ids;
            is($runs, 0, "$vhost nats: the service ran zero times");
        }
        else {
            is(scalar upstream_saw($s0->{log_lines}, @ids), 0,
               "$vhost http: the upstream saw none of them");
        }
        is($s1->{requests} - $s0->{requests}, 0,
           "$vhost $kind: the upstream received no request at all");
    }
}
my @tagged = error_log_since($log0) =~ /AURA00400: path refused/g;
is(scalar @tagged, $refused, "each refusal logged as AURA00400 ($refused)");

# A normal path: what the service and the upstream receive is what the
# rules saw.  %61 is an encoded "a" (unreserved), %20 a space, %25 a "%".
for my $vhost (qw(aura_data aura_mgmt)) {
    my $id = new_reqid('path-ok');
    my $path = '/v1/functions/echo/a%20b%61c%25d/e.f';
    my ($code, $h) = raw_request($vhost, 'GET', "$path?q=%2F",
                                 credentials($vhost), "X-Request-Id: $id");
    is($code, 200, "$vhost nats: a normal path: 200");
    is($h->{'x-example-path'}, $path, "$vhost nats: Aura-Path is the raw path");
    is($h->{'x-example-query'}, 'q=%2F', "$vhost nats: %2F in the query is "
       . 'not the path\'s business');
    is(exec_count($id), 1, "$vhost nats: executed once");

    my $s0 = upstream_stats();
    $id = new_reqid('path-ok');
    ($code) = raw_request($vhost, 'GET', '/v1/storage/object/a%20b%61c%25d/e.f',
                          credentials($vhost), "X-Request-Id: $id");
    is($code, 200, "$vhost http: a normal path: 200");
    my @got = upstream_saw($s0->{log_lines}, $id);
    is(scalar @got, 1, "$vhost http: the upstream saw it once");
    is($got[0]{path}, '/storage/object/a%20bac%25d/e.f',
       "$vhost http: the upstream path is the one the rules saw, encoded "
       . 'again');
}

# The rotation rule (conf/aura-mgmt-routes.conf) on the management plane.
{
    my @rot = (
        # [ name, path, token, status, broadcast? ]
        [ 'trailing slash, member', '/v1/projects/proj-a/keys/rotate/',
          $member, 403, 0 ],
        [ 'trailing slash, admin', '/v1/projects/proj-a/keys/rotate/',
          $admin, 200, 1 ],
        [ 'a sub-path, member', '/v1/projects/proj-a/keys/rotate/x',
          $member, 403, 0 ],
        # issue #29: ';' is refused (t/security/role_paths.t)
        [ ';params, member', '/v1/projects/proj-a/keys/rotate;x=1',
          $member, 400, 0 ],
        [ 'upper case, member', '/v1/projects/proj-a/KEYS/Rotate',
          $member, 403, 0 ],
        [ 'upper case, admin', '/v1/projects/proj-a/KEYS/Rotate',
          $admin, 200, 1 ],
        [ 'x/.. after rotate', '/v1/projects/proj-a/keys/rotate/x/..',
          $member, 400, 0 ],
    );
    for my $r (@rot) {
        my ($name, $path, $token, $status, $broadcast) = @$r;
        my $from = error_log_size();
        my ($code) = raw_request('aura_mgmt', 'POST', $path,
                                 "Authorization: Bearer $token");
        is($code, $status, "rotation rule: $name ($path): $status");
        my $sent = error_log_since($from)
            =~ /AURA00016: keys of project proj-a rotated: invalidation sent/;
        ok(!!$sent == !!$broadcast, "rotation rule: $name: "
           . ($broadcast ? 'invalidation broadcast' : 'no broadcast'));
    }
}
