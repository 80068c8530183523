# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Issue #32, point 3: open streams end with their credential.  Real
# clients hold streams through a gateway instance P (a private httpd on
# the suite's NATS and Postgres); the credential dies, on P's clock or
# on ANOTHER instance (the test server A: its console, the key
# rotation broadcast), and each stream must end within 5 s, the way
# its protocol ends (docs/security.md, "Open streams end with their
# credential"), counted and logged:
#   1b. an SSE stream whose token's sub is revoked on the other instance
#      (an incident control of kind revoke): data: token_revoked;
#   1. an SSE stream (HTTP path) whose bearer token reaches its exp
#      (minted with --exp-in 3): a final "event: aura-stream-end"
#      (data: token_expired), then the last chunk;
#   2. an SSE stream whose key is blocked by an incident control set
#      on A's console (block key:<hash prefix>): the same, "blocked";
#   3. an SSE stream whose key's expires_at is set (psql) 3 s ahead
#      and broadcast: "key_expired";
#   4. a streamed NATS reply whose key is revoked (psql) and the
#      rotation broadcast: the body is cut short (no last chunk);
#   5. a WebSocket (npm's ws) whose user is blocked on A (block
#      actor:<sub>): the client receives a close frame 1008.
# Each time a second client on the same service, whose credential
# lives, keeps streaming.  Every delay is measured and printed; the
# figure is 5 s, asserted with a generous bound of 15 s.
#
# On the code before this change no stream ends (each "ended" assertion
# fails after its 20 s wait).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use IO::Select;
use IO::Socket::INET;
use JSON::PP qw(decode_json encode_json);
use LWP::UserAgent;
use MIME::Base64 qw(encode_base64 decode_base64);
use Time::HiRes qw(time sleep);
use Aura::Test qw(t_dir mint psql wait_until private_httpd new_reqid
                  ANON_KEY);

plan tests => 32;

my $BOUND = 15;            # the figure is 5 s: generous for a loaded host
my $tag = sprintf('se%d%d', $$, time % 100000);
my $cfg = Apache::Test::config();
my $a_mgmt = "http://127.0.0.1:$cfg->{vhosts}{aura_mgmt}{port}";
my $ua = LWP::UserAgent->new(timeout => 30);
my $ops = 'Basic ' . encode_base64('ops:ops-secret', '');
my $jwt = $ENV{AURA_TEST_JWT_DIR};
my $token_file = $ENV{AURA_TEST_METRICS_TOKEN_FILE};
my $metrics_token = do { local (@ARGV, $/) = $token_file; <> };
chomp $metrics_token;

# Keys of this test only, in proj-a: revoking them touches no one else.
my %key = map { $_ => "ak_test_${_}_${tag}_0123456789" }
          qw(blocked expiring revoked);
sub hash_sql { "encode(sha256(convert_to('$_[0]', 'UTF8')), 'hex')" }
psql("insert into api_keys (project_id, key_hash, role) values "
     . join(', ', map { "('proj-a', " . hash_sql($_) . ", 'anon')" }
                  values %key));
my @controls;
END {
    local $?;
    psql('delete from api_keys where key_hash in ('
         . join(', ', map { hash_sql($_) } values %key) . ')');
    ctl(DELETE => "/$_") for @controls;
}

# --- P: the instance holding the streams ---------------------------------
my $dir = tempdir(CLEANUP => !$ENV{AURA_TEST_KEEP});
my ($port, $httpd) = private_httpd(dir => $dir, children => 1, threads => 16,
                                   body => <<"CONF");
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraDBParams "$ENV{AURA_TEST_PG_CONNINFO}"
AuraMetricsTokenFile $token_file
# Only the broadcast (or the clock) may tell P: no TTL in the way.
AuraKeyCacheTTL 300s
AuraRateLimitZone default rate=100000r/s burst=100000
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    AuraJWTKeyFile $jwt/jwks.json
    AuraJWTLeeway 0s
    AuraStreamMaxOpen 12
    <Location "/v1/realtime/">
        AuraService realtime $ENV{AURA_TEST_HTTP_URL}
        AuraStreaming On
        AuraStreamMaxPerAddress 12
        AuraStreamMaxPerActor 12
        AuraServiceMaxStreams 12
        AuraStreamIdleTimeout 60s
    </Location>
    <Location "/v1/streams/nats/">
        AuraService realtime nats:aura.functions
        AuraStreaming On
        AuraStreamMaxPerAddress 12
        AuraStreamMaxPerActor 12
        AuraServiceMaxStreams 12
        AuraTimeout 60s
    </Location>
    <Location "/metrics">
        SetHandler aura-metrics
        AuraPublic On
    </Location>
    <Location "/health">
        SetHandler aura-health
        AuraPublic On
    </Location>
</VirtualHost>
CONF
system("$httpd -k start") == 0 or die 'httpd P did not start';
END { local $?; system("$httpd -k stop") if $httpd && -s "$dir/httpd.pid"; }
ok(wait_until(30, sub { $ua->get("http://127.0.0.1:$port/health")->code
                        == 200 }), 'P is up');

sub ctl {
    my ($method, $path, $doc) = @_;
    my $r = HTTP::Request->new($method => "$a_mgmt/ops/api/controls$path");
    $r->header(Authorization => $ops, 'X-Aura-CSRF' => 1,
               'Content-Type' => 'application/json');
    $r->content(encode_json($doc)) if $doc;
    return $ua->request($r);
}
sub block_on_a {
    my ($target) = @_;
    my $res = ctl(POST => '', { kind => 'block', target => $target,
                                ttl => '10m' });
    die 'block: ' . $res->status_line . ' ' . $res->content
        unless $res->is_success;
    push @controls, decode_json($res->content)->{id};
}
sub token {
    my ($sub, $exp_in) = @_;
    return mint('--alg', 'RS256', '--kid', 'r1', '--exp-in', $exp_in,
                '--sub', $sub, '--project', 'proj-a', '--key',
                "$jwt/rsa.key");
}
sub key_prefix {
    return 'key:' . substr(psql('select ' . hash_sql($_[0])), 0, 16);
}
sub metric {
    my ($reason) = @_;
    my $res = $ua->get("http://127.0.0.1:$port/metrics",
                       Authorization => "Bearer $metrics_token");
    my ($v) = $res->content
        =~ /^aura_streams_cred_ended_total\{reason="$reason"\} (\d+)$/m;
    return $v // 0;
}
sub p_log { local (@ARGV, $/) = "$dir/error.log"; my $l = <>; $l // '' }

# --- a raw HTTP/1.1 stream reader -------------------------------------------
sub open_stream {
    my ($path, %h) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
                                  Timeout => 10) or die "connect: $!";
    binmode $s;
    my $id = new_reqid("se-$tag");
    my $req = "GET $path HTTP/1.1\r\nHost: localhost\r\n"
              . "X-Request-Id: $id\r\n";
    $req .= "$_: $h{$_}\r\n" for sort keys %h;
    print $s "$req\r\n";
    my $buf = '';
    while ($buf !~ /\r\n\r\n/) {
        IO::Select->new($s)->can_read(20) or die "$path: no head";
        sysread($s, $buf, 65536, length $buf) or die "$path: closed";
    }
    my ($head, $rest) = split /\r\n\r\n/, $buf, 2;
    my ($status) = $head =~ m{^HTTP/1\.1 (\d{3}) };
    return { sock => $s, status => $status, raw => $rest, body => '',
             id => $id, path => $path };
}

# Reads what arrives for up to $secs (or until the stream ends):
# decodes the chunks into body; done when the last chunk came, eof when
# the connection closed; end_t when either was seen.
sub pump {
    my ($o, $secs) = @_;
    my $until = time + $secs;
    while (!$o->{eof} && !$o->{done}) {
        while ($o->{raw} =~ s/\A([0-9a-fA-F]+)\r\n//) {
            my $n = hex $1;
            if ($n == 0) {
                $o->{done} = 1;
                $o->{end_t} = time;
                return $o;
            }
            if (length $o->{raw} < $n + 2) {
                $o->{raw} = sprintf('%x', $n) . "\r\n" . $o->{raw};
                last;
            }
            $o->{body} .= substr($o->{raw}, 0, $n + 2, '');
            $o->{body} =~ s/\r\n\z//;
        }
        my $left = $until - time;
        last if $left <= 0;
        next unless IO::Select->new($o->{sock})->can_read($left);
        my $n = sysread($o->{sock}, $o->{raw}, 65536, length $o->{raw});
        unless ($n) {
            $o->{eof} = 1;
            $o->{end_t} = time;
        }
    }
    return $o;
}
sub ticks { scalar(() = $_[0]{body} =~ /^data: tick/mg) }

# Victim and survivor, then the death of the victim's credential at
# $dies (epoch s, measured where it happens); returns the delay.
sub sse_case {
    my ($name, $victim, $survivor, $kill, $reason) = @_;
    is("$victim->{status} $survivor->{status}", '200 200',
       "$name: both SSE streams open");
    pump($_, 1) for $victim, $survivor;
    my $dies = $kill->();
    my $deadline = $dies + $BOUND + 5;
    pump($victim, 1) while !$victim->{end_t} && time < $deadline;
    my $delay = ($victim->{end_t} // time) - $dies;
    diag(sprintf('%s: SSE stream ended %.2f s after its credential died',
                 $name, $delay));
    ok($victim->{done} && $delay < $BOUND,
       "$name: the stream ended cleanly (last chunk) within ${BOUND} s");
    like($victim->{body}, qr/event: aura-stream-end\ndata: \Q$reason\E\n/,
         "$name: its last event says $reason");
    my $before = ticks($survivor);
    pump($survivor, 2) for 1 .. 2;
    ok(ticks($survivor) > $before && !$survivor->{end_t},
       sprintf('%s: the other client keeps streaming (%d more events)',
               $name, ticks($survivor) - $before));
    close $_->{sock} for $victim, $survivor;
    return $delay;
}
my $sse = "/v1/realtime/sse/100000/250/$tag";
my %delay;

# 1. a token reaching its exp ------------------------------------------------
{
    my $victim_token = token("se-exp-$tag", 4);
    # The token's own exp (whole seconds), not a guess from the clock.
    (my $payload = (split /\./, $victim_token)[1]) =~ tr{-_}{+/};
    my $exp = decode_json(decode_base64($payload
                                        . '=' x (-length($payload) % 4)))
              ->{exp};
    my $v = open_stream("$sse/exp-v", apikey => ANON_KEY,
                        Authorization => "Bearer $victim_token");
    my $s = open_stream("$sse/exp-s", apikey => ANON_KEY,
                        Authorization => 'Bearer '
                                         . token("se-live-$tag", 300));
    $delay{token_expired} = sse_case('token exp', $v, $s,
        sub { $exp }, 'token_expired');
    ok($delay{token_expired} > -0.5, sprintf('token exp: not ended before '
       . 'its exp (%.2f s)', $delay{token_expired}));
}

# 1b. a token revoked on the other instance (its sub, issued before now) ---
{
    my $sub = "se-rev-$tag";
    my $v = open_stream("$sse/rev-v", apikey => ANON_KEY,
                        Authorization => 'Bearer ' . token($sub, 300));
    my $s = open_stream("$sse/rev-s", apikey => ANON_KEY,
                        Authorization => 'Bearer '
                                         . token("se-live2-$tag", 300));
    $delay{token_revoked} = sse_case('token revoked on A', $v, $s, sub {
        my $t = time;
        my $res = ctl(POST => '', { kind => 'revoke',
                                    target => "sub:proj-a:$sub",
                                    value => "" . int($t), ttl => '10m' });
        die 'revoke: ' . $res->status_line . ' ' . $res->content
            unless $res->is_success;
        push @controls, decode_json($res->content)->{id};
        $t;
    }, 'token_revoked');
}

# 2. a key blocked on the other instance ------------------------------------
{
    my $v = open_stream("$sse/blk-v", apikey => $key{blocked});
    my $s = open_stream("$sse/blk-s", apikey => ANON_KEY);
    my $target = key_prefix($key{blocked});
    $delay{blocked} = sse_case('key blocked on A', $v, $s,
        sub { my $t = time; block_on_a($target); $t }, 'blocked');
}

# 3. a key's expiry, set in the store and broadcast -------------------------
{
    my $v = open_stream("$sse/kx-v", apikey => $key{expiring});
    my $s = open_stream("$sse/kx-s", apikey => ANON_KEY);
    $delay{key_expired} = sse_case('key expiry', $v, $s, sub {
        my $at = psql("update api_keys set expires_at = now() + interval "
                      . "'3 s' where key_hash = " . hash_sql($key{expiring})
                      . ' returning extract(epoch from expires_at)');
        invalidate();
        $at;
    }, 'key_expired');
}

# The rotation broadcast, as aura-control's answer to a rotation makes
# every gateway publish it (aura.keys.invalidate, payload the project).
sub invalidate {
    my @cmd = (t_dir() . '/services/aura_natsreq', '-s',
               $ENV{AURA_TEST_NATS_URL}, '-t', 200, 'aura.keys.invalidate',
               'proj-a');
    system(@cmd);          # a publish nobody answers: its exit is 1
}

# 4. a streamed NATS reply whose key is revoked -----------------------------
{
    my %h = ('X-Example-Stream-Bytes' => 1000,
             'X-Example-Stream-Pause-Ms' => 60000);
    my $v = open_stream('/v1/streams/nats/s', apikey => $key{revoked}, %h);
    my $s = open_stream('/v1/streams/nats/s', apikey => ANON_KEY, %h);
    is("$v->{status} $s->{status}", '200 200',
       'key revoked: both NATS streams open');
    pump($_, 1) for $v, $s;
    my $dies = time;
    psql('update api_keys set revoked_at = now() where key_hash = '
         . hash_sql($key{revoked}));
    invalidate();
    pump($v, 1) while !$v->{end_t} && time < $dies + $BOUND + 5;
    my $d = ($v->{end_t} // time) - $dies;
    diag(sprintf('key revoked: NATS stream ended %.2f s after the revocation '
                 . 'was broadcast', $d));
    $delay{key_revoked} = $d;
    ok($v->{eof} && !$v->{done} && $d < $BOUND,
       "key revoked: the NATS stream was cut (no last chunk) within $BOUND s");
    ok(wait_until(10, sub { p_log() =~ /AURA02600: nats stream of request \Q$v->{id}\E ended: its credential is no longer valid \(key_revoked; key:[0-9a-f]{16}\)/ }),
       'key revoked: logged with the request id, the reason and the key\'s '
       . 'hash prefix');
    pump($s, 2);
    ok(!$s->{end_t}, 'key revoked: the other key\'s NATS stream goes on');
    close $_->{sock} for $v, $s;
}

# 5. a WebSocket whose user is blocked on the other instance ----------------
SKIP: {
    skip 'AURA_TEST_NO_SDK=1: no npm ws client', 4 if $ENV{AURA_TEST_NO_SDK};
    my $sub = "se-ws-$tag";
    my @cmd = ('node', t_dir() . '/security/stream_end_ws.mjs',
               "ws://127.0.0.1:$port/v1/realtime/ws-$tag", ANON_KEY,
               token($sub, 300), token("se-ws-live-$tag", 300));
    open(my $node, '-|', @cmd) or die "node: $!";
    my (%ev, $dies, $buf, $over);
    my $sel = IO::Select->new($node);
    my $until = time + 60;
    $buf = '';
    # sysread, not <$node>: lines buffered by readline would wait for
    # the next select.
    while (!$over && time < $until && $sel->can_read($until - time)) {
        sysread($node, $buf, 65536, length $buf) or last;
      LINE: while ($buf =~ s/\A([^\n]*)\n//) {
        my $e = eval { decode_json($1) } or next LINE;
        $ev{"$e->{ev}" . ($e->{who} ? "-$e->{who}" : '')} = $e;
        if ($e->{ev} eq 'ready') {
            sleep 0.5;
            $dies = time;
            block_on_a("actor:$sub");
        }
        $over = 1 if $e->{ev} =~ /^(survivor|timeout)$/;
      }
    }
    close $node;
    ok($ev{ready}, 'WebSocket: both clients connected');
    my $c = $ev{'close-victim'} // {};
    my $d = defined $c->{t} && $dies ? $c->{t} - $dies : 999;
    diag(sprintf('actor blocked on A: WebSocket closed %.2f s later, code '
                 . '%s, reason "%s"', $d, $c->{code} // '-',
                 $c->{reason} // ''));
    $delay{websocket} = $d;
    is($c->{code}, 1008, 'WebSocket: the client received close code 1008');
    ok($d < $BOUND && ($c->{reason} // '') eq 'blocked',
       "WebSocket: within $BOUND s, reason \"blocked\"");
    ok($ev{survivor} && !$ev{'close-survivor'}
       || ($ev{'close-survivor'}{code} // 0) == 1000,
       'WebSocket: the other user\'s socket kept echoing');
}

# --- counted and logged ---------------------------------------------------
is(metric('token_expired') . ' ' . metric('key_expired') . ' '
   . metric('key_revoked'), '1 1 1',
   '/metrics: aura_streams_cred_ended_total by reason');
ok(metric('blocked') >= 1, '/metrics: blocked counted');
is(metric('token_revoked'), 1, '/metrics: token_revoked counted');
my $log = p_log();
ok($log =~ /AURA02600: http stream of request \S+ ended: its credential is no longer valid \(token_expired; key:[0-9a-f]{16}, token\)/,
   'the token\'s end is logged');
unlike($log, qr/\Q$key{blocked}\E|\Q$key{revoked}\E|\Q$key{expiring}\E/,
       'no key in the log');
diag('delays (s): ' . join(', ', map { sprintf('%s %.2f', $_, $delay{$_}) }
                                 sort keys %delay));
ok(!grep({ $_ >= $BOUND } values %delay), 'every stream ended within '
   . "$BOUND s (figure: 5 s)");
