# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Issue #15, points 1, 2, 7c, 7d: a service receives exactly the identity
# the gateway verified, whatever header tricks the client plays, and a
# client sees exactly the gateway's X-Request-Id.  Attacked on both
# planes (data: anon key; management: console token) and both paths
# (HTTP: the storage and realtime upstreams, t/services/aura_http_upstream,
# which reports the raw header bytes it received and the number of each
# request on its connection; NATS: the example service, which echoes the
# headers it received).  Requests are hand-made bytes on raw sockets.
#
# The gateway's namespace (DESIGN.md section 9): aura-*, X-Request-Id,
# traceparent, tracestate, with '_' and '-' alike and in any case.  For
# each plane and path a clean request gives the baseline: the lines of
# that namespace the service got.  Every attack must give exactly the
# same lines (same names, same spelling, each once, same identity values;
# the request id is the request's own, the traceparent keeps the
# client's trace id with the gateway's span), and nothing else of the
# namespace.
#   1   Connection: close, Aura-Role, Aura-Project, ... X-Request-Id,
#       traceparent, tracestate, X-Hop: the identity is intact, X-Hop
#       (hop-by-hop) does not cross either path.
#   2   Aura_Role, AURA-role, aura_project, x_request_id, Traceparent...:
#       no spelling crosses.
#   7d  the service answers with X-Request-Id, x_request_id, Aura-Role,
#       traceparent: the client sees one X-Request-Id, the gateway's.
#   7c  a WebSocket 101 through mod_proxy carries the gateway's
#       X-Request-Id and security headers, not the upstream's, and the
#       tunnel still works.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use IO::Socket::INET;
use IO::Select;
use JSON::PP;
use Aura::Test qw(ANON_KEY console_token new_reqid wait_until
                  error_log_size error_log_since);
use Aura::Upstream qw(upstream_stats upstream_log);

my $TP_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
my $TP = "00-$TP_ID-00f067aa0ba902b7-01";
my $TS = 'vendor=1';
my $OTHER_TP = '00-11111111111111111111111111111111-2222222222222222-01';

# Per plane: HTTP path 2 + 4 + 3 (baseline, attacks 1 and 2) + 3 (7d);
# 7c 8 + 3 (a refused upgrade); NATS path 2 + 3 + 2 + 3 (7d).
my $PER_PLANE = 12 + 11 + 10;
plan tests => 2 * $PER_PLANE + 2;

# ---------------------------------------------------------------------------
# Raw HTTP

sub hostport {
    my ($module) = @_;
    Apache::TestRequest::module($module);
    return Apache::TestRequest::hostport();
}

sub read_all {
    my ($s, $until) = @_;
    my $buf = '';
    while (!$until || $buf !~ $until) {
        IO::Select->new($s)->can_read(15) or last;
        my $n = sysread($s, $buf, 65536, length $buf);
        last unless $n;
    }
    return $buf;
}

# Parses a response head: (status, [[name, value], ...]).
sub parse_head {
    my ($head) = @_;
    my @lines = split /\r\n/, $head;
    my ($status) = (shift(@lines) // '') =~ /^HTTP\/1\.1 (\d{3})/;
    my @h = map { /^([^:]+):\s*(.*)$/ ? [$1, $2] : () } @lines;
    return ($status // 0, \@h);
}

sub dechunk {
    my ($body) = @_;
    my $out = '';
    while ($body =~ s/^([0-9a-fA-F]+)[^\r\n]*\r\n//) {
        my $n = hex $1;
        last unless $n;
        $out .= substr($body, 0, $n, '');
        $body =~ s/^\r\n//;
    }
    return $out;
}

# One request, hand-made: [[name, value], ...] after Host, then
# Connection: close unless the headers name a Connection.  Returns
# {status, headers => [[n, v]...], body}.
sub raw_request {
    my ($hp, $method, $path, @hdr) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => $hp, Timeout => 15)
        or die "connect $hp: $!";
    binmode $s;
    my $req = "$method $path HTTP/1.1\r\nHost: localhost\r\n";
    $req .= "$_->[0]: $_->[1]\r\n" for @hdr;
    $req .= "Connection: close\r\n"
        unless grep { lc $_->[0] eq 'connection' } @hdr;
    print $s "$req\r\n";
    my $all = read_all($s);
    close $s;
    my ($head, $body) = split /\r\n\r\n/, $all, 2;
    my ($status, $h) = parse_head($head // '');
    $body //= '';
    $body = dechunk($body)
        if grep { lc $_->[0] eq 'transfer-encoding' } @$h;
    return { status => $status, headers => $h, body => $body };
}

# ---------------------------------------------------------------------------
# The namespace, as the lines a service got

sub folded { my $n = lc shift; $n =~ tr/_/-/; return $n }

sub owned {
    my $f = folded(shift);
    return $f =~ /^aura-/ || $f eq 'x-request-id' || $f eq 'traceparent'
           || $f eq 'tracestate';
}

# {folded name => ["Name: value", ...]} of the namespace's lines, with
# the request's own id and the gateway's span written as ID and SPAN (and
# the trace id as TRACE with $any_trace: a trace the gateway started).
sub identity_of {
    my ($pairs, $id, $any_trace) = @_;
    my %m;
    for my $p (@$pairs) {
        my ($n, $v) = @$p;
        next unless owned($n);
        $v =~ s/\Q$id\E/ID/g if defined $id;
        $v =~ s/^(00-[0-9a-f]{32})-[0-9a-f]{16}-(\d\d)$/$1-SPAN-$2/;
        $v =~ s/^00-[0-9a-f]{32}-/00-TRACE-/ if $any_trace;
        push @{ $m{ folded($n) } }, "$n: $v";
    }
    return \%m;
}

# Pairs of names in a raw request head (the upstream's raw_head).
sub head_pairs {
    my ($raw) = @_;
    my @lines = split /\r\n/, $raw;
    shift @lines;                       # the request line
    my (undef, $h) = parse_head(join("\r\n", 'HTTP/1.1 000', @lines));
    return $h;
}

sub named { my ($pairs, $name) = @_; grep { folded($_->[0]) eq $name } @$pairs }

# ---------------------------------------------------------------------------
# HTTP path

# The upstream's record of the request to $path sent since $since; and
# how many it recorded for that path.
sub upstream_saw {
    my ($since, $path) = @_;
    my @got = grep { index($_->{path}, $path) >= 0 }
                   @{ upstream_log($since) };
    return (scalar @got, $got[0]);
}

sub http_attacks {
    my ($plane, $hp, $auth) = @_;
    my %cases = (
        baseline => [
            ['X-Request-Id', 'ID'], ['traceparent', $TP],
            ['tracestate', $TS],
        ],
        connection => [
            ['X-Request-Id', 'ID'], ['traceparent', $TP],
            ['tracestate', $TS], ['X-Hop', 'hop'],
            ['Connection', 'close, Aura-Role, Aura-Project, Aura-Actor, '
                           . 'Aura-Key-Role, Aura-Plane, Aura-Org, '
                           . 'Aura-Request-Id, X-Request-Id, traceparent, '
                           . 'tracestate, X-Hop'],
            ['Aura_Role', 'service_role'], ['aura_project', 'proj-evil'],
        ],
        spellings => [
            ['X-Request-Id', 'ID'], ['Traceparent', $TP],
            ['tracestate', $TS],
            ['Aura_Role', 'service_role'], ['AURA-role', 'owner'],
            ['aura-ROLE', 'admin'], ['aura_project', 'proj-evil'],
            ['Aura_Org', 'org-evil'], ['aura_key_role', 'service_role'],
            ['Aura_Actor', 'someone-else'], ['AURA_PLANE', 'mgmt'],
            ['x_request_id', 'forged-id'], ['X_Request_ID', 'forged-2'],
            ['trace_parent', $OTHER_TP],
        ],
    );
    my %seen;
    for my $name (qw(baseline connection spellings)) {
        my $id = new_reqid("hdr-$plane-$name");
        my $path = "/v1/storage/object/$id";
        my @hdr = map { [$_->[0], $_->[1] eq 'ID' ? $id : $_->[1]] }
                      @{ $cases{$name} };
        my $since = upstream_stats()->{log_lines};
        my $res = raw_request($hp, 'GET', $path, @$auth, @hdr);
        my ($n, $got) = upstream_saw($since, $id);
        $got ||= { raw_head => '', conn_req => 0 };
        my $pairs = head_pairs($got->{raw_head});
        $seen{$name} = identity_of($pairs, $id);
        if ($name eq 'baseline') {
            is($res->{status}, 200, "$plane HTTP: a clean request served");
            ok($n == 1 && @{ $seen{$name}{'aura-role'} || [] } == 1
               && @{ $seen{$name}{'aura-project'} || [] } == 1,
               "$plane HTTP: the upstream got it once, with Aura-Role and "
               . "Aura-Project: the baseline");
            next;
        }
        is($n, 1, "$plane HTTP, $name: exactly one request reached the "
                  . "upstream");
        is_deeply($seen{$name}, $seen{baseline},
                  "$plane HTTP, $name: exactly the gateway's identity "
                  . "lines, as in the baseline")
            or diag($got->{raw_head});
        if ($name eq 'connection') {
            ok(!named($pairs, 'x-hop'), "$plane HTTP: X-Hop, named in "
               . "Connection, did not cross");
            my %reqs;
            my @same = grep { $_->{conn} == $got->{conn} }
                           @{ upstream_log($since) };
            $reqs{ $_->{conn_req} }++ for @same;
            ok(!grep({ $_ > 1 } values %reqs) && $got->{conn_req} >= 1,
               "$plane HTTP: one request per place on the upstream "
               . "connection (conn $got->{conn}, request "
               . "$got->{conn_req})");
        }
        else {
            is(scalar(grep { $_->[0] eq 'trace_parent' } @$pairs), 1,
               "$plane HTTP: a name outside the namespace (trace_parent) "
               . "still crosses: the rule is exact");
        }
    }

    # 7d: the upstream answers with the gateway's names.
    my $id = new_reqid("hdr-$plane-reply");
    my $res = raw_request($hp, 'GET', "/v1/storage/object/$id", @$auth,
        ['X-Request-Id', $id],
        ['X-Upstream-Reply-Header', 'X-Request-Id: upstream-id'],
        ['X-Upstream-Reply-Header-2', 'x_request_id: upstream-id-2'],
        ['X-Upstream-Reply-Header-3', 'Aura-Role: service_role'],
        ['X-Upstream-Reply-Header-4', "traceparent: $OTHER_TP"],
        ['X-Upstream-Reply-Header-5', 'X-Upstream-Extra: kept']);
    is($res->{status}, 200, "$plane HTTP 7d: served");
    is_deeply(identity_of($res->{headers}),
              { 'x-request-id' => ["X-Request-Id: $id"] },
              "$plane HTTP 7d: the client sees one X-Request-Id, the "
              . "gateway's, and nothing else of the namespace");
    is(scalar(named($res->{headers}, 'x-upstream-extra')), 1,
       "$plane HTTP 7d: the upstream's other headers pass");
}

# ---------------------------------------------------------------------------
# 7c: WebSocket

sub ws_frame_echo {
    my ($s, $text) = @_;
    my @mask = (0x12, 0x34, 0x56, 0x78);
    my $masked = join '', map { chr(ord(substr($text, $_, 1)) ^ $mask[$_ % 4]) }
                              0 .. length($text) - 1;
    print $s chr(0x81) . chr(0x80 | length $text) . pack('C4', @mask)
             . $masked;
    my $buf = '';
    while (length $buf < 2
           || length $buf < 2 + (ord(substr($buf, 1, 1)) & 0x7f)) {
        IO::Select->new($s)->can_read(10) or last;
        sysread($s, $buf, 4096, length $buf) or last;
    }
    return length $buf >= 2 ? substr($buf, 2, ord(substr($buf, 1, 1)) & 0x7f)
                            : '';
}

sub websocket {
    my ($plane, $hp, $auth, $base) = @_;
    my $id = new_reqid("hdr-$plane-ws");
    my $since = upstream_stats()->{log_lines};
    my $s = IO::Socket::INET->new(PeerAddr => $hp, Timeout => 15)
        or die "connect: $!";
    binmode $s;
    my $req = "GET /v1/realtime/ws/$id HTTP/1.1\r\nHost: localhost\r\n"
        . "Upgrade: websocket\r\n"
        . "Connection: Upgrade, Aura-Role, Aura-Project, X-Request-Id\r\n"
        . "Sec-WebSocket-Version: 13\r\n"
        . "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        . "X-Request-Id: $id\r\n"
        . "Aura_Role: service_role\r\n"
        . "X-Upstream-Reply-Header: X-Request-Id: upstream-id\r\n"
        . "X-Upstream-Reply-Header-2: X-Frame-Options: ALLOWALL\r\n"
        . "X-Upstream-Reply-Header-3: aura_role: service_role\r\n"
        . "X-Upstream-Reply-Header-4: X-Upstream-Extra: kept\r\n";
    $req .= "$_->[0]: $_->[1]\r\n" for @$auth;
    print $s "$req\r\n";
    my $head = read_all($s, qr/\r\n\r\n/);
    my ($status, $h) = parse_head($head);
    is($status, 101, "$plane 7c: 101 Switching Protocols");
    is_deeply(identity_of($h), { 'x-request-id' => ["X-Request-Id: $id"] },
              "$plane 7c: the 101 carries one X-Request-Id, the gateway's, "
              . "and nothing else of the namespace")
        or diag($head);
    is_deeply([map { $_->[1] } named($h, 'x-frame-options')], ['DENY'],
              "$plane 7c: X-Frame-Options is the gateway's, once");
    is_deeply([map { $_->[1] } named($h, 'x-content-type-options')],
              ['nosniff'], "$plane 7c: X-Content-Type-Options");
    ok(named($h, 'content-security-policy')
       && named($h, 'referrer-policy'),
       "$plane 7c: Content-Security-Policy and Referrer-Policy");
    ok(named($h, 'sec-websocket-accept') && named($h, 'x-upstream-extra'),
       "$plane 7c: the upstream's own handshake headers pass");
    is(ws_frame_echo($s, "ws over $plane"), "ws over $plane",
       "$plane 7c: the tunnel works after the rewritten head");
    close $s;
    my ($n, $got) = upstream_saw($since, $id);
    my $seen = identity_of(head_pairs(($got || {})->{raw_head} // ''), $id,
                           1);
    is_deeply([$n, $seen], [1, $base], "$plane 7c: the upstream got the "
              . "upgrade once, with exactly the gateway's identity")
        or diag(($got || {})->{raw_head});
}

# Reads one response with a Content-Length body from $s: (status,
# pairs, head).
sub read_response {
    my ($s) = @_;
    my $all = read_all($s, qr/\r\n\r\n/);
    my ($head, $body) = split /\r\n\r\n/, $all, 2;
    my ($status, $h) = parse_head($head // '');
    my ($cl) = map { $_->[1] } named($h, 'content-length');
    $body //= '';
    while (defined $cl && length $body < $cl) {
        IO::Select->new($s)->can_read(15) or last;
        sysread($s, $body, $cl - length $body, length $body) or last;
    }
    return ($status, $h, $head // '');
}

# Upgrades the upstream refuses (WebSocket version 8: its 426, which
# unlike a 400 does not end the client's connection), twice on one
# connection: each answer is an ordinary one, which the 101 filter lets
# pass as it is; then a plain request, then an upgrade that succeeds, on
# that same connection: the filter is armed again and the 101 is the
# gateway's.
sub websocket_refused {
    my ($plane, $hp, $auth) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => $hp, Timeout => 15)
        or die "connect: $!";
    binmode $s;
    my $auth_lines = join '', map { "$_->[0]: $_->[1]\r\n" } @$auth;
    my @seen;
    for my $n (1, 2) {
        my $id = new_reqid("hdr-$plane-wsno$n");
        print $s "GET /v1/realtime/ws/$id HTTP/1.1\r\nHost: localhost\r\n"
            . "Upgrade: websocket\r\nConnection: Upgrade\r\n"
            . "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            . "Sec-WebSocket-Version: 8\r\nX-Request-Id: $id\r\n"
            . "X-Upstream-Reply-Header: X-Request-Id: upstream\r\n"
            . "$auth_lines\r\n";
        my ($status, $h, $head) = read_response($s);
        push @seen, [$status, identity_of($h, $id),
                     [map { $_->[1] } named($h, 'x-frame-options')]];
        diag($head) unless $status == 426;
    }
    is_deeply(\@seen, [([426, { 'x-request-id' => ['X-Request-Id: ID'] },
                         ['DENY']]) x 2],
              "$plane 7c: two refused upgrades on one connection: the "
              . "upstream's 426, one X-Request-Id, the gateway's security "
              . "headers");
    my $id2 = new_reqid("hdr-$plane-wsno3");
    print $s "GET /v1/storage/object/$id2 HTTP/1.1\r\nHost: localhost\r\n"
        . "X-Request-Id: $id2\r\n$auth_lines\r\n";
    my ($status, $h, $head) = read_response($s);
    is_deeply([$status, identity_of($h, $id2)],
              [200, { 'x-request-id' => ['X-Request-Id: ID'] }],
              "$plane 7c: the same connection serves the next request")
        or diag($head);
    my $id3 = new_reqid("hdr-$plane-wsyes");
    print $s "GET /v1/realtime/ws/$id3 HTTP/1.1\r\nHost: localhost\r\n"
        . "Upgrade: websocket\r\nConnection: Upgrade\r\n"
        . "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        . "Sec-WebSocket-Version: 13\r\nX-Request-Id: $id3\r\n"
        . "X-Upstream-Reply-Header: X-Request-Id: upstream\r\n"
        . "$auth_lines\r\n";
    ($status, $h, $head) = read_response($s);
    is_deeply([$status, identity_of($h, $id3),
               ws_frame_echo($s, 'again')],
              [101, { 'x-request-id' => ['X-Request-Id: ID'] }, 'again'],
              "$plane 7c: and then an upgrade: the gateway's 101, a "
              . "working tunnel") or diag($head);
    close $s;
}

# ---------------------------------------------------------------------------
# NATS path

sub nats_attacks {
    my ($plane, $hp, $auth) = @_;
    my %base;
    for my $name (qw(baseline connection spellings)) {
        my $id = new_reqid("hdr-$plane-nats-$name");
        my @hdr = (['X-Request-Id', $id], ['X-Example-Headers', 'json'],
                   ['traceparent', $TP], ['tracestate', $TS]);
        push @hdr, ['X-Hop', 'hop'],
                   ['Connection', 'close, Aura-Role, Aura-Project, '
                    . 'Aura-Actor, X-Request-Id, traceparent, tracestate, '
                    . 'X-Hop'], ['Aura_Role', 'service_role']
            if $name eq 'connection';
        push @hdr, ['Aura_Role', 'service_role'], ['AURA-role', 'owner'],
                   ['aura_project', 'proj-evil'], ['Aura_Actor', 'x'],
                   ['aura_key_role', 'service_role'],
                   ['x_request_id', 'forged'], ['AURA_METHOD', 'DELETE'],
                   ['aura_path', '/v1/other']
            if $name eq 'spellings';
        my $res = raw_request($hp, 'GET', "/v1/functions/$id", @$auth,
                              @hdr);
        my $json = eval { decode_json($res->{body}) } || {};
        my @pairs = map { my $k = $_; map { [$k, $_] } @{ $json->{$k} } }
                        keys %$json;
        my $seen = identity_of(\@pairs, $id);
        if ($name eq 'baseline') {
            %base = %$seen;
            is($res->{status}, 200, "$plane NATS: a clean request served");
            ok(@{ $seen->{'aura-role'} || [] } == 1
               && @{ $seen->{'aura-request-id'} || [] } == 1
               && @{ $seen->{traceparent} || [] } == 1,
               "$plane NATS: Aura-Role, Aura-Request-Id, traceparent: the "
               . "baseline");
            next;
        }
        is($res->{status}, 200, "$plane NATS, $name: served");
        is_deeply($seen, \%base, "$plane NATS, $name: exactly the "
                  . "gateway's identity headers, as in the baseline")
            or diag($res->{body});
        if ($name eq 'connection') {
            ok(!named(\@pairs, 'x-hop'),
               "$plane NATS: X-Hop, named in Connection, did not cross");
        }
    }

    # 7d: the service answers with the gateway's names.
    my $id = new_reqid("hdr-$plane-nats-reply");
    my $res = raw_request($hp, 'GET', "/v1/functions/$id", @$auth,
        ['X-Request-Id', $id],
        ['X-Example-Reply-Header', 'X-Request-Id: service-id'],
        ['X-Example-Reply-Header-2', 'x_request_id: service-id-2'],
        ['X-Example-Reply-Header-3', 'Aura_Role: service_role'],
        ['X-Example-Reply-Header-4', "Traceparent: $OTHER_TP"],
        ['X-Example-Reply-Header-5', 'X-Service-Extra: kept']);
    is($res->{status}, 200, "$plane NATS 7d: served");
    is_deeply(identity_of($res->{headers}),
              { 'x-request-id' => ["X-Request-Id: $id"] },
              "$plane NATS 7d: the client sees one X-Request-Id, the "
              . "gateway's, and nothing else of the namespace");
    is(scalar(named($res->{headers}, 'x-service-extra')), 1,
       "$plane NATS 7d: the service's other headers pass");
}

# ---------------------------------------------------------------------------

sub plane {
    my ($plane, $module, $auth) = @_;
    my $hp = hostport($module);
    # The baseline identity for the WebSocket comparison: no trace
    # context from the client, as in the handshake.
    my $id = new_reqid("hdr-$plane-base");
    my $since = upstream_stats()->{log_lines};
    raw_request($hp, 'GET', "/v1/storage/object/$id", @$auth,
                ['X-Request-Id', $id]);
    my (undef, $got) = upstream_saw($since, $id);
    my $base = identity_of(head_pairs(($got || {})->{raw_head} // ''), $id,
                           1);
    http_attacks($plane, $hp, $auth);
    websocket($plane, $hp, $auth, $base);
    websocket_refused($plane, $hp, $auth);
    nats_attacks($plane, $hp, $auth);
}

plane('data', 'aura_data', [['apikey', ANON_KEY]]);

# A 101 head the gateway cannot hold (over 32 KiB: five lines of 7.5 KB,
# each within mod_proxy's 8 KB per response line) is refused, not passed
# with the upstream's X-Request-Id: no 101, the connection closed,
# AURA00200.
{
    my $hp = hostport('aura_data');
    my $from = error_log_size();
    my $s = IO::Socket::INET->new(PeerAddr => $hp, Timeout => 15)
        or die "connect: $!";
    binmode $s;
    my $req = "GET /v1/realtime/ws/big HTTP/1.1\r\nHost: localhost\r\n"
        . "Upgrade: websocket\r\nConnection: Upgrade\r\n"
        . "Sec-WebSocket-Version: 13\r\n"
        . "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        . "apikey: " . ANON_KEY . "\r\n"
        . "X-Upstream-Reply-Header: X-Request-Id: upstream-id\r\n";
    $req .= "X-Upstream-Reply-Header-$_: X-Big-$_: " . ('b' x 7500) . "\r\n"
        for 2 .. 6;
    print $s "$req\r\n";
    my $got = read_all($s);
    close $s;
    unlike($got, qr/^HTTP\/1\.1 101/, 'a 101 head over 32 KiB: no 101, '
           . 'nothing of the upstream\'s head');
    ok(wait_until(5, sub { error_log_since($from) =~ /AURA00200/ }),
       'AURA00200 says why');
}
plane('mgmt', 'aura_mgmt',
      [['Authorization', 'Bearer ' . console_token('user-owner')],
       ['X-Project-Id', 'proj-a']]);
