# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Aura::H2: the suite's HTTP/2 transport.  LWP (under Apache::Test's
# GET, POST, user_agent()->request...) speaks HTTP/1.1 only; with
# AURA_TEST_PROTO=h2 or h2c (build/test, build/run-suite) Aura::Test
# makes this class LWP's implementor of http: URLs, and every request of
# a test goes out as an HTTP/2 stream (Protocol::HTTP2, Debian's
# libprotocol-http2-perl):
#
#   h2   TLS, HTTP/2 chosen by ALPN (refused unless the server picks
#        h2), the server's certificate checked against the run's CA
#        ($AURA_TEST_TLS_DIR/ca.crt, made by build/run-suite);
#   h2c  clear text, HTTP/2 with prior knowledge.
#
# The request's headers go out as they are (lower-cased, the
# connection-specific ones of RFC 9113 8.2.2 left out: HTTP/2 forbids
# them), nothing is added; the response comes back as an HTTP::Response
# with the version in Client-HTTP-Version ("2": Apache::TestRequest
# refuses a response whose protocol is not HTTP/1.x), its body handed to
# LWP's collect() as it arrives, so that a test reading a stream reads
# it as it comes and may stop it.  One connection per server and
# process, kept between requests.  Not curl: Debian 12's curl 7.88
# drops a complete response when the server resets the stream with
# NO_ERROR after it (RFC 9113 8.1: a server answering before the
# request body is read), which mod_http2 does for every early refusal.
package Aura::H2;

use strict;
use warnings;

use parent 'LWP::Protocol';
use HTTP::Response ();
use HTTP::Status ();
use IO::Select;
use IO::Socket::INET;
use Protocol::HTTP2::Client;
use Protocol::HTTP2::Constants qw(:errors);

our $PROTO = $ENV{AURA_TEST_PROTO} || 'h1';
# A test that speaks HTTP/2 itself, whatever the pass, sets $FORCE
# (and $PROTO) around its own calls of request().
our $FORCE = 0;

my %hop = map { $_ => 1 } qw(connection keep-alive proxy-connection te
                             transfer-encoding upgrade host http2-settings);

sub failed {
    my ($msg) = @_;
    my $res = HTTP::Response->new(500, $msg);
    $res->header('Client-Warning' => 'Internal response');
    $res->content_type('text/plain');
    $res->content("$msg\n");
    return $res;
}

# A connection to the request's server, speaking HTTP/2.
sub h2_connect {
    my ($host, $port, $timeout) = @_;
    if ($PROTO eq 'h2') {
        require IO::Socket::SSL;
        my $s = IO::Socket::SSL->new(
            PeerHost => $host, PeerPort => $port, Timeout => $timeout,
            SSL_alpn_protocols => ['h2'],
            SSL_ca_file => "$ENV{AURA_TEST_TLS_DIR}/ca.crt",
            SSL_verifycn_name => 'localhost',
            SSL_verifycn_scheme => 'http')
            or return (undef, "TLS connect: $IO::Socket::SSL::SSL_ERROR");
        my $alpn = $s->alpn_selected // '';
        return (undef, "ALPN chose '$alpn', not h2") unless $alpn eq 'h2';
        return ($s);
    }
    my $s = IO::Socket::INET->new(PeerHost => $host, PeerPort => $port,
                                  Timeout => $timeout)
        or return (undef, "connect: $!");
    return ($s);
}

sub body_of {
    my ($req) = @_;
    my $c = $req->content_ref;
    return $$c unless ref $$c eq 'CODE';
    my $body = '';
    while (defined(my $piece = $$c->())) {
        last unless length $piece;
        $body .= $piece;
    }
    return $body;
}

# The ports of the test server (Apache::Test's main port and one per
# VirtualHost): only those speak HTTP/2; the suite's other servers (the
# HTTP upstream, a test's private httpd) keep LWP's HTTP/1.1.
my %ours;
sub ours {
    my ($port) = @_;
    if (!%ours) {
        require Apache::Test;
        my $cfg = Apache::Test::config();
        $ours{$cfg->{vars}{port}} = 1;
        $ours{$_->{port}} = 1
            for grep { ref $_ && $_->{port} } values %{ $cfg->{vhosts} };
        # aura_h2c and aura_h2s stay clear text whatever the pass
        # (t/data/h2_upgrade.t, t/data/h2_streams.t speak for themselves).
        for my $own (qw(aura_h2c aura_h2s)) {
            delete $ours{$cfg->{vhosts}{$own}{port}}
                if $cfg->{vhosts}{$own};
        }
    }
    return $ours{$port};
}

# One HTTP/2 connection per server and process, kept for the next
# request as LWP keeps its HTTP/1.1 connections (a TLS handshake per
# request would cap a test's load far below its HTTP/1.1 pass); a forked
# child (Aura::Load) makes its own.  A connection the server closed or
# said GOAWAY on is dropped before reuse; a request that fails on a
# connection is not sent again.
my %pool;

sub readable {
    my ($c, $secs) = @_;
    return 1 if $c->{sock}->can('pending') && $c->{sock}->pending;
    return scalar $c->{sel}->can_read($secs);
}

sub usable {
    my ($c) = @_;
    return 0 if $c->{pid} != $$ || $c->{dead};
    while (readable($c, 0)) {
        my $n = sysread($c->{sock}, my $buf, 65536);
        return 0 unless $n;
        $c->{client}->feed($buf);
    }
    return !$c->{dead} && !$c->{client}{con}->goaway
        && !$c->{client}{con}->shutdown;
}

sub connection {
    my ($host, $port, $timeout, $alone) = @_;
    my $key = "$host:$port";
    my $c = $alone ? undef : $pool{$key};
    if ($c && !usable($c)) {
        close $c->{sock} if $c->{pid} == $$;
        delete $pool{$key};
        $c = undef;
    }
    return ($c) if $c;
    my ($sock, $why) = h2_connect($host, $port, $timeout);
    return (undef, $why) unless $sock;
    $c = { pid => $$, sock => $sock, sel => IO::Select->new($sock),
           key => $key };
    $c->{client} = Protocol::HTTP2::Client->new(keepalive => 1,
        on_error => sub { $c->{dead} = 1 });
    $pool{$key} = $c unless $alone;
    return ($c);
}

# syswrite may write part of a buffer (TLS writes a record at a time).
sub write_all {
    my ($sock, $data) = @_;
    my $off = 0;
    while ($off < length $data) {
        my $n = syswrite($sock, $data, length($data) - $off, $off);
        return 0 unless $n;
        $off += $n;
    }
    return 1;
}

sub drop {
    my ($c) = @_;
    close $c->{sock};
    delete $pool{$c->{key}} if ($pool{$c->{key}} || 0) == $c;
}

sub request {
    my ($self, $req, $proxy, $arg, $size, $timeout) = @_;
    $timeout ||= 180;
    my $uri = $req->uri;
    if (!$FORCE && !ours($uri->port)) {
        require LWP::Protocol::http;
        return LWP::Protocol::http->new($self->{scheme}, $self->{ua})
            ->request($req, $proxy, $arg, $size, $timeout);
    }
    my @headers;
    my $alone = 0;
    my $authority = $req->header('Host') || $uri->host_port;
    $req->headers->scan(sub {
        my ($k, $v) = @_;
        return if $hop{lc $k} || $v =~ /[\r\n]/;
        push @headers, lc($k) => $v;
        # A field larger than the HPACK table (4096): after one,
        # Protocol::HTTP2 1.10's encoder and mod_http2's decoder no
        # longer agree on the table (the server ends the connection with
        # COMPRESSION_ERROR on a reused connection): such a request gets
        # a connection of its own.
        $alone = 1 if length($k) + length($v) + 32 > 4096;
    });
    my ($c, $why) = connection($uri->host, $uri->port, $timeout, $alone);
    return failed("$PROTO: $why") unless $c;
    my $client = $c->{client};
    my $body = body_of($req);
    my ($head, $done, $reset) = (undef, 0, undef);
    my @pieces;
    $client->request(
        ':scheme' => $PROTO eq 'h2' ? 'https' : 'http',
        ':authority' => $authority,
        ':path' => $uri->path_query || '/',
        ':method' => $req->method,
        headers => \@headers,
        (length $body || $req->method =~ /^(POST|PUT|PATCH)$/
            ? (data => $body) : ()),
        on_headers => sub { $head = $_[0]; 1 },
        on_data => sub { push @pieces, $_[0]; 1 },
        on_done => sub { $done = 1 },
        on_error => sub { $reset = "stream reset, error $_[0]"; $done = 1 },
    );
    # Exchanges frames until $until is true, the stream ends, the
    # connection fails or idles for $timeout.
    my $pump = sub {
        my ($until) = @_;
        while (!$until->() && !$done) {
            while (my $f = $client->next_frame) {
                write_all($c->{sock}, $f) or do { $c->{dead} = 1; last };
            }
            if ($c->{dead}) {
                $reset //= 'connection error';
                $done = 1;
                last;
            }
            last if $until->() || $done;
            readable($c, $timeout)
                or do { $reset //= 'timeout'; $done = 1; last };
            my $n = sysread($c->{sock}, my $buf, 65536);
            if (!$n) {
                $c->{dead} = 1;
                $reset //= 'connection closed' unless $head;
                $done = 1;
                last;
            }
            $client->feed($buf);
        }
    };
    $pump->(sub { defined $head });
    if (!$head) {
        drop($c);
        return failed("$PROTO: no response: " . ($reset // 'none'));
    }
    my $res;
    my @hv = @$head;
    my @fields;
    while (my ($k, $v) = splice(@hv, 0, 2)) {
        if ($k eq ':status') {
            $res = HTTP::Response->new($v,
                HTTP::Status::status_message($v) || '');
        }
        elsif ($k !~ /^:/) {
            push @fields, $k, $v;
        }
    }
    if (!$res) {
        drop($c);
        return failed("$PROTO: no :status");
    }
    $res->push_header(splice(@fields, 0, 2)) while @fields;
    $res->header('Client-HTTP-Version' => 2);
    $res->request($req);
    $res = $self->collect($arg, $res, sub {
        $pump->(sub { @pieces }) unless @pieces;
        my $piece = @pieces ? shift @pieces : '';
        return \$piece;
    });
    $res->header('Client-Aborted' => $reset)
        if defined $reset && $reset !~ /error 0$/;
    # A stream the caller stopped reading (or that broke) takes its
    # connection with it.
    drop($c) if !$done || $c->{dead} || $alone;
    return $res;
}

1;
