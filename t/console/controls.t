# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The incident controls on one instance (docs/console.md, "Incident
# controls"), through the console's API at /ops/api/controls on the
# management plane, against the data plane's requests:
#   maintenance: 503 + Retry-After before any key (a request without a
#     key gets 503, not 401); lifted and expired, the Location is back;
#   block addr: 403 before the per-address limit and any key lookup;
#   block key: 403 after the key is parsed, without a key store lookup;
#   block actor: 403 after the token is verified;
#   drain: new requests 503, the one in flight finishes;
#   breaker: forced open refuses as an open breaker does;
# refused requests never reach the service (exec_count); POST is
# idempotent; lift, lift twice, unknown id; the gate refuses a POST
# without X-Aura-CSRF and it sets nothing; hostile bodies and forged NATS
# messages are refused and logged; the page and its script.
#
# On the code before: /ops/api/controls is no part of the console (404),
# so every control test fails.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use Digest::SHA qw(sha256_hex);
use JSON::PP qw(decode_json encode_json);
use LWP::UserAgent;
use POSIX ();
use MIME::Base64 qw(encode_base64);
use Aura::Test qw(problem_ok new_reqid exec_count wait_until natsreq mint
                  error_log_size error_log_since json_body ANON_KEY);

plan tests => 149;

my $cfg = Apache::Test::config();
my $data = "http://127.0.0.1:$cfg->{vhosts}{aura_data}{port}";
my $mgmt = "http://127.0.0.1:$cfg->{vhosts}{aura_mgmt}{port}";
my $ua = LWP::UserAgent->new(timeout => 30);
my $ops = 'Basic ' . encode_base64('ops:ops-secret', '');
my $service_key = 'ak_test_service_0123456789abcdef';

sub req {
    my ($method, $url, $body, %h) = @_;
    my $r = HTTP::Request->new($method => $url);
    $r->header($_ => $h{$_}) for keys %h;
    $r->content($body) if defined $body;
    return $ua->request($r);
}
# The console, as a script drives it.
sub ctl {
    my ($method, $path, $doc, %h) = @_;
    my $body = ref $doc ? encode_json($doc) : $doc;
    return req($method, "$mgmt/ops/api/controls$path", $body,
               Authorization => $ops, 'X-Aura-CSRF' => 1,
               'Content-Type' => 'application/json', %h);
}
sub set_control {
    my (%c) = @_;
    my $res = ctl(POST => '', \%c);
    die 'set ' . encode_json(\%c) . ': ' . $res->status_line . ' '
        . $res->content unless $res->code == 201 || $res->code == 200;
    return decode_json($res->content);
}
sub lift { ctl(DELETE => "/$_[0]") }
sub list { decode_json(ctl(GET => '')->content)->{controls} }
sub data_get {
    my ($path, %h) = @_;
    return req(GET => "$data$path", undef, %h);
}
sub keyed { (apikey => ANON_KEY, 'X-Request-Id' => $_[0] || new_reqid('ctl')) }
sub lookups {
    my $res = req(GET => "$mgmt/health");
    my $s = (json_body($res) || {})->{shm}
        or die 'health: ' . $res->status_line . ' ' . $res->content;
    return $s->{key_cache_hits} + $s->{key_cache_misses};
}

# --- maintenance -----------------------------------------------------------
my $m = set_control(kind => 'maintenance', target => '/v1/functions/maint/',
                    ttl => '10m', reason => 'storage migration');
like($m->{id}, qr/^[0-9a-f]{16}$/, 'maintenance: an id');
is($m->{state}, 'active', 'maintenance: active');
my $res = data_get('/v1/functions/maint/x');
problem_ok($res, 503, 'maintenance', 'maintenance, no key at all');
my $ra = $res->header('Retry-After') // '';
ok($ra =~ /^\d+$/ && $ra > 500 && $ra <= 600,
   "Retry-After: the time until it expires ($ra)");
my $id = new_reqid('maint');
$res = data_get('/v1/functions/maint/x', keyed($id));
is($res->code, 503, 'maintenance, with a key: 503');
is(exec_count($id), 0, 'maintenance: the service never ran');
is(data_get('/v1/functions/other', keyed())->code, 200,
   'another Location: served');
is(data_get('/v1/functions/maintenance', keyed())->code, 200,
   'a path that only starts the same: served');
is(data_get('/v1/functions/other')->code, 401,
   'without a key elsewhere: still 401');
$res = lift($m->{id});
is($res->code, 200, 'lifted: 200');
is(decode_json($res->content)->{state}, 'lifted', 'lifted: its state');
is(data_get('/v1/functions/maint/x', keyed())->code, 200,
   'after the lift: served');
is(data_get('/v1/functions/maint/x')->code, 401,
   'after the lift: no key is 401 again');

# The value names Retry-After.
$m = set_control(kind => 'maintenance', target => '/v1/functions/maint/',
                 value => '120', ttl => 600);
is(data_get('/v1/functions/maint/x')->header('Retry-After'), '120',
   'maintenance with a value: that Retry-After');
lift($m->{id});

# Expiry: a 2 s control stops matching by itself.
$m = set_control(kind => 'maintenance', target => '/v1/functions/exp/',
                 ttl => '2s');
is(data_get('/v1/functions/exp/x', keyed())->code, 503, 'short: in force');
ok(wait_until(15, sub { data_get('/v1/functions/exp/x', keyed())->code
                        == 200 }), 'short: expired by itself');
my ($e) = grep { $_->{id} eq $m->{id} } @{ list() };
is($e && $e->{state}, 'expired', 'the list marks it expired');

# --- idempotent, list, lift twice -----------------------------------------
my $first = ctl(POST => '', { kind => 'drain', target => 'ai', ttl => 60 });
is($first->code, 201, 'a new control: 201');
my $second = ctl(POST => '', { kind => 'drain', target => 'ai', ttl => 120,
                               reason => 'again' });
is($second->code, 200, 'the same kind and target again: 200');
my ($d1, $d2) = map { decode_json($_->content) } $first, $second;
is($d2->{id}, $d1->{id}, 'the same id');
cmp_ok($d2->{revision}, '>', $d1->{revision}, 'a new revision');
cmp_ok($d2->{expires_in}, '>', 60, 'the new expiry');
is(scalar(grep { $_->{id} eq $d1->{id} } @{ list() }), 1,
   'one control in the list');
$res = ctl(GET => "/$d1->{id}");
is(decode_json($res->content)->{reason}, 'again', 'GET one: the update');
is(lift($d1->{id})->code, 200, 'lift');
$res = lift($d1->{id});
is($res->code, 200, 'lift twice: 200 again');
is(decode_json($res->content)->{state}, 'lifted', 'lift twice: still lifted');
problem_ok(lift('0123456789abcdef'), 404, 'unknown-control', 'unknown id');
problem_ok(lift('nothex'), 404, 'unknown-control', 'malformed id');

# --- block addr ------------------------------------------------------------
my $before = lookups();
my $b = set_control(kind => 'block', target => 'addr:127.0.0.0/8',
                    ttl => '5m', reason => 'scanner');
is($b->{target}, 'addr:127.0.0.0/8', 'addr block: canonical target');
$res = data_get('/v1/functions/x');
problem_ok($res, 403, 'blocked', 'addr block, no key');
$id = new_reqid('blk');
is(data_get('/v1/functions/x', keyed($id))->code, 403,
   'addr block, with a key: 403');
is(exec_count($id), 0, 'addr block: the service never ran');
my @codes = map { data_get('/v1/functions/x', keyed())->code } 1 .. 20;
is_deeply(\@codes, [(403) x 20], 'twenty blocked requests');
is(req(GET => "$mgmt/health")->code, 403, 'the management plane: blocked too');
is(ctl(GET => '')->code, 200, 'the console is never blocked');
is(lift($b->{id})->code, 200, 'lifted from the console');
is(lookups(), $before, 'the blocked requests looked no key up');
is(data_get('/v1/functions/x', keyed())->code, 200, 'unblocked');

# --- block key ---------------------------------------------------------------
my $prefix = substr(sha256_hex(ANON_KEY), 0, 16);
my $k = set_control(kind => 'block',
                    target => 'key:' . uc $prefix, ttl => '5m');
is($k->{target}, "key:$prefix", 'key block: canonical target');
$before = lookups();
$id = new_reqid('key');
$res = data_get('/v1/functions/x', keyed($id));
problem_ok($res, 403, 'blocked', 'key block');
is(exec_count($id), 0, 'key block: the service never ran');
@codes = map { data_get('/v1/functions/x', keyed())->code } 1 .. 10;
is_deeply(\@codes, [(403) x 10], 'ten blocked requests');
is(lookups(), $before, 'a key block costs no key lookup (no query)');
is(data_get('/v1/functions/x', apikey => $service_key)->code, 200,
   'another key: served');
lift($k->{id});
is(data_get('/v1/functions/x', keyed())->code, 200, 'key unblocked');

# --- block actor -------------------------------------------------------------
my $token = mint(qw(--alg RS256 --kid r1 --sub user-evil --exp-in 300
                    --project proj-a --key),
                 "$ENV{AURA_TEST_JWT_DIR}/rsa.key");
my $a = set_control(kind => 'block', target => 'actor:user-evil',
                    ttl => '5m');
$id = new_reqid('actor');
$res = data_get('/v1/functions/x', keyed($id),
                Authorization => "Bearer $token");
problem_ok($res, 403, 'blocked', 'actor block');
is(exec_count($id), 0, 'actor block: the service never ran');
is(data_get('/v1/functions/x', keyed())->code, 200,
   'the same key without that user: served');
lift($a->{id});
is(data_get('/v1/functions/x', keyed(), Authorization => "Bearer $token")
   ->code, 200, 'actor unblocked');

# --- drain: what is in flight finishes --------------------------------------
my $slow = new_reqid('inflight');
my $pid = fork();
die "fork: $!" unless defined $pid;
if (!$pid) {
    my $r = data_get('/v1/functions/slow', keyed($slow),
                     'X-Example-Delay-Ms' => 1500);
    POSIX::_exit($r->code == 200 ? 0 : 1);
}
ok(wait_until(10, sub { exec_count($slow) >= 1 }),
   'a slow request is at the service');
my $dr = set_control(kind => 'drain', target => 'functions', ttl => '5m');
$id = new_reqid('drain');
$res = data_get('/v1/functions/x', keyed($id));
problem_ok($res, 503, 'draining', 'drain: a new request');
like($res->header('Retry-After') // '', qr/^\d+$/, 'drain: Retry-After');
is(exec_count($id), 0, 'drain: the new request never ran');
is(data_get('/v1/functions/x')->code, 503, 'drain: decided before the key');
waitpid($pid, 0);
is($? >> 8, 0, 'the request in flight finished with 200');
isnt((json_body(data_get('/v1/storage/x', keyed())) || {})->{type} // '',
     '/problems/draining', 'another service: not drained');
lift($dr->{id});
is(data_get('/v1/functions/x', keyed())->code, 200, 'drain lifted');

# --- breaker forced open -----------------------------------------------------
my $br = set_control(kind => 'breaker', target => 'functions',
                     value => 'open', ttl => '5m');
$id = new_reqid('brk');
$res = data_get('/v1/functions/x', keyed($id));
problem_ok($res, 503, 'breaker-open', 'breaker forced open');
like($res->header('Retry-After') // '', qr/^\d+$/, 'forced open: Retry-After');
is(exec_count($id), 0, 'forced open: the service never ran');
is(data_get('/v1/functions/x')->code, 401,
   'forced open: the key is still checked first');
lift($br->{id});
is(data_get('/v1/functions/x', keyed())->code, 200, 'breaker back');

# --- rate: a zone's rate lowered, then given back ----------------------------
my $limits = "http://127.0.0.1:$cfg->{vhosts}{aura_limits}{port}";
is(ctl(POST => '', { kind => 'rate', target => 'controls', value => '100r/s',
                     ttl => 60 })->code, 400, 'rate: never raised (400)');
is(ctl(POST => '', { kind => 'rate', target => 'nosuch', value => '1r/s',
                     ttl => 60 })->code, 400, 'rate: an unknown zone (400)');
my $rt = set_control(kind => 'rate', target => 'controls', value => '1r/m',
                     ttl => '5m');
my @r = map { req(GET => "$limits/v1/limit/ctlrate/x") } 1 .. 3;
my @refused = grep { $_->code == 429 } @r;
cmp_ok(scalar @refused, '>=', 2, 'rate 1r/m: the second request is refused');
my $rra = @refused ? $refused[0]->header('Retry-After') // 0 : 0;
ok($rra > 10, "rate 1r/m: Retry-After of the lower rate ($rra s)");
is((json_body($refused[0] || $r[0]) || {})->{type}, '/problems/ip-rate-limit',
   'rate: ip-rate-limit');
lift($rt->{id});
@codes = map { req(GET => "$limits/v1/limit/ctlrate/x")->code } 1 .. 5;
is_deeply(\@codes, [(404) x 5],
          'lifted: the zone\'s own rate at once (its count untouched)');

# --- quota: a plan's quota lowered -----------------------------------------
sub policy { ($_[0]->header('RateLimit-Policy') // '') =~ /q=(\d+)/ ? $1 : '' }
my $qt = set_control(kind => 'quota', target => 'pro', value => '2',
                     ttl => '5m');
@r = map { req(GET => "$limits/v1/limit/ctlquota/x", undef, apikey => ANON_KEY) }
     1 .. 4;
is(policy($r[0]), 2, 'quota: the lower quota is the policy');
my @q = grep { $_->code == 429 } @r;
cmp_ok(scalar @q, '>=', 2, 'quota: at most 2 admitted');
is((json_body($q[0] || $r[0]) || {})->{type}, '/problems/actor-quota',
   'quota: actor-quota');
lift($qt->{id});
is(policy(req(GET => "$limits/v1/limit/ctlquota/x", undef, apikey => ANON_KEY)),
   8, 'lifted: the plan\'s own quota');
$qt = set_control(kind => 'quota', target => 'pro', value => '1000',
                  ttl => '5m');
is(policy(req(GET => "$limits/v1/limit/ctlquota/x", undef, apikey => ANON_KEY)),
   8, 'quota: a higher value never raises it');
lift($qt->{id});

# --- breaker forced closed --------------------------------------------------
# The notifications breaker (threshold 3) opened by the service's 503s;
# held closed, every request reaches the service, failing ones too
# (open or half-open, at most one probe would).
req(GET => "$limits/v1/brk/fail/x", undef, 'X-Example-Status' => 503)
    for 1 .. 3;
problem_ok(req(GET => "$limits/v1/brk/fail/x"), 503, 'breaker-open',
           'the notifications breaker opened');
my $bc = set_control(kind => 'breaker', target => 'notifications',
                     value => 'closed', ttl => '5m');
my @ids = map { new_reqid('closed') } 1 .. 5;
@codes = map { req(GET => "$limits/v1/brk/fail/x", undef,
                   'X-Request-Id' => $_, 'X-Example-Status' => 503)->code }
         @ids;
is_deeply([map { exec_count($_) } @ids], [(1) x 5],
          'forced closed: each request reached the service');
is_deeply(\@codes, [(503) x 5], 'forced closed: the service\'s own 503s');
lift($bc->{id});
# Left closed for the tests after this one: a probe after the cooldown.
ok(wait_until(15, sub { req(GET => "$limits/v1/brk/fail/x")->code == 200 }),
   'the breaker closes again after the lift');

# --- the gate ----------------------------------------------------------------
my $n = scalar @{ list() };
$res = req(POST => "$mgmt/ops/api/controls",
           encode_json({ kind => 'maintenance', target => '/v1/', ttl => 60 }),
           Authorization => $ops, 'Content-Type' => 'application/json');
problem_ok($res, 403, 'cross-site-request', 'POST without X-Aura-CSRF');
is(scalar @{ list() }, $n, 'it set nothing');
is(data_get('/v1/functions/x', keyed())->code, 200, 'nothing is refused');

# --- hostile bodies ----------------------------------------------------------
my @bad = (
    [ '{"kind":', 'malformed JSON' ],
    [ '[]', 'not an object' ],
    [ encode_json({ kind => 'wipe', target => '/', ttl => 60 }), 'unknown kind' ],
    [ encode_json({ kind => 'block', target => 'addr:10.0.0.0/33', ttl => 60 }),
      'bad CIDR' ],
    [ encode_json({ kind => 'block', target => 'addr:10.0.0.1' }), 'no ttl' ],
    [ encode_json({ kind => 'block', target => 'addr:10.0.0.1', ttl => '8d' }),
      'ttl above 7 days' ],
    [ encode_json({ kind => 'drain', target => 'nosuch', ttl => 60 }),
      'unknown service' ],
    [ encode_json({ kind => 'drain', target => 'ai', ttl => 60, x => 1 }),
      'unknown member' ],
    [ encode_json({ kind => 'breaker', target => 'ai', value => 'ajar',
                    ttl => 60 }), 'breaker value' ],
);
for my $c (@bad) {
    $res = ctl(POST => '', $c->[0]);
    is($res->code, 400, "$c->[1]: 400");
    is((json_body($res) || {})->{type}, '/problems/invalid-request',
       "$c->[1]: invalid-request");
}
$res = ctl(POST => '', '{"reason":"' . ('x' x 5000) . '"}');
problem_ok($res, 413, 'payload-too-large', 'a huge body');
is(scalar @{ list() }, $n, 'none of them set anything');

# Forged messages on the subject: ignored, logged, nothing crashes.
my $from = error_log_size();
natsreq('aura.gateway.controls.set', 'garbage');
my $forged = encode_json({ v => 1, id => '0123456789abcdef',
                           kind => 'maintenance', target => '/v1/',
                           value => '', updated => 1, expires => 2 ** 52,
                           by => 'x', reason => '', lifted => JSON::PP::false });
natsreq('aura.gateway.controls.set', $forged);
natsreq('aura.gateway.controls.set', 'x' x 5000);
ok(wait_until(10, sub { error_log_since($from) =~ /AURA02203/ }),
   'a forged message is logged (AURA02203)');
is(scalar @{ list() }, $n, 'and merged nowhere');
is(data_get('/v1/functions/x', keyed())->code, 200, 'the server serves on');

# --- the page ----------------------------------------------------------------
$m = set_control(kind => 'maintenance', target => '/v1/functions/page/',
                 ttl => '5m', reason => '<b>html</b>');
$res = req(GET => "$mgmt/ops/controls", undef, Authorization => $ops);
is($res->code, 200, 'the page: 200');
like($res->header('Content-Type'), qr{^text/html}, 'the page: HTML');
my $html = $res->content;
like($html, qr{/v1/functions/page/}, 'the page lists the control');
like($html, qr{data-lift="$m->{id}"}, 'with a lift button');
like($html, qr{&lt;b&gt;html&lt;/b&gt;}, 'the reason escaped');
like($html, qr{<script src="assets/controls\.js"}, 'its script is a file');
unlike($html, qr{<script>|<style>| style=}, 'no inline script or style');
like($html, qr{href="\./"}, 'a link back to the console');
like($res->header('Content-Security-Policy') // '', qr/script-src 'self'/,
     'the page: CSP lets its own script run');
like($res->header('Content-Security-Policy') // '', qr/frame-ancestors 'none'/,
     'the page: never framed');
$res = req(GET => "$mgmt/ops/assets/controls.js", undef, Authorization => $ops);
is($res->code, 200, 'the script: 200');
like($res->content, qr/'X-Aura-CSRF': '1'/, 'the script sends X-Aura-CSRF');
lift($m->{id});
