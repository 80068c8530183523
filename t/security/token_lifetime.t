# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# AuraTokenMaxLifetime, and revocations held as long as the tokens they
# name can live (issue #32: "revocations are held with a lifetime equal
# to the longest token lifetime"; docs/security.md 3.16).  B is a
# private httpd: a data plane with the test keys, its console and a
# back-channel logout endpoint, AuraTokenMaxLifetime 1h in the main
# server and 4 s in the VirtualHost (the one that takes tokens), leeway
# 1 s, its own control subject (nothing it revokes reaches another
# server).  So a token is accepted at most 4 + 2 x 1 = 6 s after its
# iat (the token horizon), and a revocation of time T lasts until
# T + 1 s + 6 s (iat is read in whole seconds).
#   - the lifetime: exp - iat at the limit, at the limit plus the
#     leeway: 200; a second more, or no iat: 401 invalid-token with the
#     exact reason (AURA00053), and the service never runs;
#   - the test server A (the default, 24 h) refuses a data-plane and a
#     console token living 25 h, and one without iat, and takes the
#     suite's usual 300 s tokens;
#   - a revoke without ttl is taken, and lists its expiry T + 7 s; one
#     with a ttl of 1 s too: its token stays refused (token-revoked)
#     right up to its own exp and leeway, never served again (before,
#     the revocation ended after 1 s and the token worked again);
#   - what a revocation's time may be (not far ahead; not so old that
#     nothing is left to revoke), other kinds still need a ttl;
#   - a back-channel logout's revocation lasts iat + 7 s;
#   - the console page lets the ttl be empty;
#   - C, another private httpd, sets AuraTokenMaxLifetime in the main
#     server only: its VirtualHost inherits it;
#   - config: the lifetime's range, AuraBackchannelLogout's old
#     lifetime argument refused with a message naming the new directive.
#
# On the code before: B does not start (AuraTokenMaxLifetime is no
# directive), and A takes the 25 h tokens and the token without iat.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use JSON::PP qw(encode_json);
use LWP::UserAgent;
use MIME::Base64 qw(encode_base64);
use POSIX qw(strftime);
use Time::HiRes qw(time sleep);
use Aura::Test qw(ua_request t_dir wait_until private_httpd json_body mint
                  console_token new_reqid exec_count problem_ok ANON_KEY);

# B up; B's lifetime; A's default on two planes; revocations; their
# time; logout; the page; inheritance; configuration.
plan tests => 1 + (2 + 3 * 7 + 2) + 2 * 7 + (5 + 8 + 1) + 12 + 6 + 3 + 3
              + 7;

my $cfg = Apache::Test::config();
my $a_data = "http://127.0.0.1:$cfg->{vhosts}{aura_data}{port}";
my $a_mgmt = "http://127.0.0.1:$cfg->{vhosts}{aura_mgmt}{port}";
my $ua = LWP::UserAgent->new(timeout => 30);
my $ops = 'Basic ' . encode_base64('ops:ops-secret', '');
my $dir = tempdir(CLEANUP => !$ENV{AURA_TEST_KEEP});
my $jwt = $ENV{AURA_TEST_JWT_DIR};
my $key = "$jwt/rsa.key";
my $mods = '/usr/lib/apache2/modules';
my $htpasswd = t_dir() . '/conf/operators.htpasswd';
my $EVENT = 'http://schemas.openid.net/event/backchannel-logout';
my $HORIZON = 4 + 2 * 1;     # AuraTokenMaxLifetime + 2 x AuraJWTLeeway

sub req { return ua_request($ua, @_) }
# A user token of proj-a issued at $iat (now unless given), living
# $life seconds.
sub token {
    my ($sub, $life, $iat, @more) = @_;
    return mint(qw(--alg RS256 --kid r1 --project proj-a --sub), $sub,
                '--exp-in', $life, (defined $iat ? ('--now', $iat) : ()),
                '--key', $key, @more);
}
# A request with a token on a data plane: (response, executions).
sub call {
    my ($base, $token) = @_;
    my $id = new_reqid('life');
    my $res = req(GET => "$base/v1/functions/life", undef,
                  apikey => ANON_KEY, 'X-Request-Id' => $id,
                  Authorization => "Bearer $token");
    return ($res, exec_count($id));
}
sub code_on { (call(@_))[0]->code }
sub detail { (json_body($_[0]) || {})->{detail} // '' }

my $ctl_subject = "aura.test.lifetime.$$";
my ($port, $httpd) = private_httpd(dir => $dir, children => 2, threads => 4,
                                   body => <<"CONF");
LoadModule auth_basic_module $mods/mod_auth_basic.so
LoadModule authn_core_module $mods/mod_authn_core.so
LoadModule authn_file_module $mods/mod_authn_file.so
LoadModule authz_user_module $mods/mod_authz_user.so
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraNATSReconnectWait 100ms
AuraNATSConnectTimeout 1s
AuraDBParams "$ENV{AURA_TEST_PG_CONNINFO}"
AuraRateLimitZone default rate=100000r/s burst=100000
AuraControlSubject $ctl_subject
# The main server takes no token: its hour must not lengthen B's
# revocations.
AuraTokenMaxLifetime 1h
AuraJWTLeeway 1s
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    AuraJWTKeyFile $jwt/jwks.json
    AuraTokenMaxLifetime 4
    <Location "/v1/functions/">
        AuraService functions nats:aura.functions
    </Location>
    <Location "/health">
        SetHandler aura-health
        AuraPublic On
    </Location>
    <Location "/bcl">
        SetHandler aura-backchannel-logout
        AuraPublic On
        AuraBackchannelLogout proj-a https://idp.test aura-client
    </Location>
    <Location "/ops">
        SetHandler aura-console
        AuraPublic On
        AuthType Basic
        AuthName "mod_aura operators"
        AuthBasicProvider file
        AuthUserFile $htpasswd
        Require user ops
    </Location>
</VirtualHost>
CONF
my $b = "http://127.0.0.1:$port";
system("$httpd -k start") == 0 or die 'httpd B did not start';
END { local $?; system("$httpd -k stop") if -s "$dir/httpd.pid"; }
ok(wait_until(30, sub { req(GET => "$b/health")->code == 200 }), 'B is up');

sub ctl {
    my ($body) = @_;
    return req(POST => "$b/ops/api/controls", encode_json($body),
               Authorization => $ops, 'X-Aura-CSRF' => 1,
               'Content-Type' => 'application/json');
}
sub iso { strftime('%Y-%m-%dT%H:%M:%SZ', gmtime($_[0])) }
sub b_log {
    open(my $fh, '<', "$dir/error.log") or return '';
    local $/;
    return <$fh> // '';
}

# --- the lifetime on B (4 s, leeway 1 s) -------------------------------------
my $now = int(time);
my ($res, $n) = call($b, token('lt-ok', 4, $now));
is($res->code, 200, 'B: exp - iat exactly AuraTokenMaxLifetime: 200');
is($n, 1, 'B: ... and the service ran');
for my $case ([ 'over the limit plus the leeway', 6, $now,
                'token outlives AuraTokenMaxLifetime' ],
              [ "the suite's usual 300 s", 300, $now,
                'token outlives AuraTokenMaxLifetime' ],
              [ 'no iat', 3, undef, 'token has no issue time' ]) {
    my ($name, $life, $iat, $why) = @$case;
    my $t = defined $iat ? token('lt-x', $life, $iat)
                         : token('lt-x', $life, undef, '--no-iat');
    ($res, $n) = call($b, $t);
    problem_ok($res, 401, 'invalid-token', "B: $name");
    is(detail($res), $why, "B: $name: the reason");
    like($res->header('WWW-Authenticate') // '',
         qr/^Bearer error="invalid_token"/, "B: $name: WWW-Authenticate");
    is($n, 0, "B: $name: the service never ran");
}
is(code_on($b, token('lt-lw', 5, $now)), 200,
   'B: the limit plus the leeway (5 s): 200');
my $log = b_log();
my $refused = 'AURA00053: bearer token refused';
ok($log =~ /$refused: token outlives AuraTokenMaxLifetime/
   && $log =~ /$refused: token has no issue time/,
   'B: AURA00053 gives both reasons');

# --- the default (24 h) on A, both planes --------------------------------
my $day = 86400 + 3600;
for my $case (['data', sub { code_on($a_data, $_[0]) }, sub {
                   token('lt-a', @_) }],
              ['console', sub {
                   req(GET => "$a_mgmt/v1/functions/life", undef,
                       'X-Project-Id' => 'proj-a',
                       Authorization => "Bearer $_[0]")->code }, sub {
                   my ($life, $iat, @more) = @_;
                   console_token('user-owner', '--exp-in', $life,
                                 (defined $iat ? ('--now', $iat) : ()),
                                 @more) }]) {
    my ($plane, $code, $make) = @$case;
    is($code->($make->(300, undef)), 200,
       "A $plane: a 300 s token works under the default 24 h");
    my $long = $make->($day, undef);
    my $r = $plane eq 'data'
        ? (call($a_data, $long))[0]
        : req(GET => "$a_mgmt/v1/functions/life", undef,
              'X-Project-Id' => 'proj-a', Authorization => "Bearer $long");
    problem_ok($r, 401, 'invalid-token', "A $plane: a token living 25 h");
    is(detail($r), 'token outlives AuraTokenMaxLifetime',
       "A $plane: a token living 25 h: the reason");
    is($code->($make->(300, undef, '--no-iat')), 401,
       "A $plane: a token without iat: 401");
}

# --- revoke without ttl: it lasts until its tokens are dead ----------------
# A token issued at T0 living the whole 4 s, revoked at T0 with a ttl of
# 1 s (what kept it for 1 s before): it must stay refused until its own
# exp plus the leeway, then be refused as expired, never served.
my $t0 = int(time);
my $victim = token('lt-victim', 4, $t0);
is(code_on($b, $victim), 200, 'revoke: the token works before');
$res = ctl({ kind => 'revoke', target => 'sub:proj-a:lt-victim',
             value => "$t0", ttl => '1s', reason => 'token_lifetime.t' });
is($res->code, 201, 'revoke with a ttl of 1 s: 201');
my $rec = json_body($res) || {};
is($rec->{expires}, iso($t0 + 1 + $HORIZON),
   'revoke: the 1 s ttl does not cut it: expires T + 1 + 4 + 2 x 1 s');
my ($served, $seen, $types) = (0, 0, {});
while (time < $t0 + 4 + 1 + 0.8) {
    my ($r, $ran) = call($b, $victim);
    $served++ if $r->code == 200 || $ran;
    $types->{(json_body($r) || {})->{type} // $r->code}++;
    $seen++;
    sleep 0.1;
}
diag('revoke: answers until the token died: '
     . join(', ', map { "$_ x$types->{$_}" } sort keys %$types));
is($served, 0, 'revoke: the token was never served again before it died');
ok($types->{'/problems/token-revoked'} && $seen > 20,
   'revoke: refused as revoked, over the whole of its life');
# Without a ttl, and a token issued after the time works.
my $t1 = int(time);
$res = ctl({ kind => 'revoke', target => 'sub:proj-a:lt-bob',
             value => "$t1" });
is($res->code, 201, 'revoke without ttl: 201');
$rec = json_body($res) || {};
is($rec->{expires}, iso($t1 + 1 + $HORIZON),
   'revoke without ttl: expires T + 1 s + the token horizon');
my $in = $rec->{expires_in} // -1;
ok($in <= 1 + $HORIZON && $in >= 5,
   'revoke without ttl: expires_in as listed');
is(code_on($b, token('lt-bob', 4, $t1)), 401,
   'revoke without ttl: a token issued at T is refused');
is(code_on($b, token('lt-bob', 4, $t1 + 1)), 200,
   'revoke without ttl: a token issued after T works');
my @listed = grep { $_->{target} eq 'sub:proj-a:lt-bob' }
             @{ (json_body(req(GET => "$b/ops/api/controls", undef,
                                Authorization => $ops)) || {})->{controls}
                || [] };
is($listed[0]{state} // '', 'active', 'revoke without ttl: listed active');
ok(wait_until(15, sub {
       my ($l) = grep { $_->{target} eq 'sub:proj-a:lt-bob' }
           @{ (json_body(req(GET => "$b/ops/api/controls", undef,
                              Authorization => $ops)) || {})->{controls}
              || [] };
       $l && $l->{state} eq 'expired' }),
   'revoke without ttl: expired by itself, once its tokens are dead');
ok(time >= $t1 + 1 + $HORIZON, 'revoke without ttl: not before then');
# A longer ttl still lengthens it.
$res = ctl({ kind => 'revoke', target => 'sub:proj-a:lt-carol',
             value => int(time) . '', ttl => '10m' });
ok($res->code == 201
   && (json_body($res) || {})->{expires_in} >= 590,
   'revoke with a ttl longer than the horizon: the ttl');

# --- what a revocation's time may be ---------------------------------------
$res = ctl({ kind => 'revoke', target => 'sub:proj-a:lt-x',
             value => int(time) + 1000 . '' });
problem_ok($res, 400, 'invalid-request', 'a time 1000 s ahead');
like(detail($res), qr/at most 300 s ahead/, 'a time 1000 s ahead: why');
$res = ctl({ kind => 'revoke', target => 'sub:proj-a:lt-x',
             value => int(time) + 200 . '' });
is($res->code, 201, 'a time 200 s ahead (a clock ahead): 201');
$res = ctl({ kind => 'revoke', target => 'sub:proj-a:lt-y',
             value => int(time) - 100 . '' });
is($res->code, 400, 'a time whose tokens are all dead, no ttl: 400');
like(detail($res), qr/nothing to revoke/, '... nothing to revoke');
is(ctl({ kind => 'revoke', target => 'sub:proj-a:lt-y',
         value => int(time) - 100 . '', ttl => '2s' })->code, 201,
   '... with a ttl: 201 (the operator asked)');
$res = ctl({ kind => 'maintenance', target => '/v1/functions/lt/' });
is($res->code, 400, 'another kind without ttl: 400');
like(detail($res), qr/"ttl" is required/, 'another kind: ttl required');
is(ctl({ kind => 'revoke', target => 'sub:proj-a:lt-z',
         value => int(time) . '', ttl => '8d' })->code, 400,
   'a ttl over 7 days: still 400');

# --- back-channel logout: iat + 1 s + the token horizon --------------------
my $lt_iat = int(time);
my $lt = mint('--alg', 'RS256', '--kid', 'r1', '--key', $key,
              '--iss', 'https://idp.test', '--aud', 'aura-client',
              '--exp-in', 4, '--now', $lt_iat, '--claim', 'sid="lt-s1"',
              '--claim', "jti=\"lt-$$\"",
              '--claim', 'events=' . encode_json({ $EVENT => {} }));
$res = req(POST => "$b/bcl", "logout_token=$lt",
           'Content-Type' => 'application/x-www-form-urlencoded');
is($res->code, 200, 'logout: 200');
($rec) = grep { $_->{target} eq 'sid:proj-a:lt-s1' }
         @{ (json_body(req(GET => "$b/ops/api/controls", undef,
                            Authorization => $ops)) || {})->{controls} || [] };
is($rec->{value} // '', "$lt_iat",
   "logout: revoked as of the logout_token's iat");
is($rec->{expires} // '', iso($lt_iat + 1 + $HORIZON),
   'logout: the revocation lasts iat + 1 s + the token horizon');
is(code_on($b, token('lt-dan', 4, $lt_iat, '--claim', 'sid="lt-s1"')), 401,
   "logout: the session's token is refused");
my $long_lt = mint('--alg', 'RS256', '--kid', 'r1', '--key', $key,
                   '--iss', 'https://idp.test', '--aud', 'aura-client',
                   '--exp-in', 60, '--claim', 'sid="lt-s2"',
                   '--claim', "jti=\"lt2-$$\"",
                   '--claim', 'events=' . encode_json({ $EVENT => {} }));
$res = req(POST => "$b/bcl", "logout_token=$long_lt",
           'Content-Type' => 'application/x-www-form-urlencoded');
is($res->code, 400, 'logout: a logout_token living 60 s: 400');
like((json_body($res) || {})->{error_description} // '',
     qr/token outlives AuraTokenMaxLifetime/, '... the reason');

# --- the console page: the ttl may be empty --------------------------------
my $page = req(GET => "$b/ops/controls", undef, Authorization => $ops)
    ->content;
my ($ttl_input) = $page =~ /(<input name="ttl"[^>]*>)/;
ok($ttl_input && $ttl_input !~ /required/, 'page: the ttl is not required');
my $js = req(GET => "$b/ops/assets/controls.js", undef,
             Authorization => $ops)->content;
like($js, qr/if \(f\.get\('ttl'\)\) \{ body\.ttl = f\.get\('ttl'\); \}/,
     'page: an empty ttl is not sent');
unlike($js, qr/ttl: f\.get\('ttl'\)/, 'page: nor as ""');

# --- inheritance: a VirtualHost without its own takes the main server's --
my $cdir = tempdir(CLEANUP => !$ENV{AURA_TEST_KEEP});
my ($cport, $chttpd) = private_httpd(dir => $cdir, children => 1,
                                     body => <<"CONF");
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraNATSReconnectWait 100ms
AuraNATSConnectTimeout 1s
AuraDBParams "$ENV{AURA_TEST_PG_CONNINFO}"
AuraRateLimitZone default rate=100000r/s burst=100000
AuraControlSubject $ctl_subject.c
AuraTokenMaxLifetime 2
AuraJWTLeeway 0
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    AuraJWTKeyFile $jwt/jwks.json
    <Location "/v1/functions/">
        AuraService functions nats:aura.functions
    </Location>
    <Location "/health">
        SetHandler aura-health
        AuraPublic On
    </Location>
</VirtualHost>
CONF
my $c = "http://127.0.0.1:$cport";
system("$chttpd -k start") == 0 or die 'httpd C did not start';
END { local $?; system("$chttpd -k stop") if -s "$cdir/httpd.pid"; }
ok(wait_until(30, sub { req(GET => "$c/health")->code == 200 }), 'C is up');
is(code_on($c, token('lt-in', 2)), 200,
   "inherited: the main server's 2 s (leeway 0): a 2 s token works");
is(code_on($c, token('lt-in', 3)), 401, 'inherited: a 3 s token: 401');

# --- configuration -------------------------------------------------------
sub config_error {
    my ($body) = @_;
    my $d = tempdir(CLEANUP => !$ENV{AURA_TEST_KEEP});
    my (undef, $cmd) = private_httpd(dir => $d, body => $body);
    my $out = `$cmd -t 2>&1`;
    return ($? == 0 ? '' : $out || 'failed');
}
is(config_error("AuraTokenMaxLifetime 7d\n"), '', 'config: 7d is taken');
like(config_error("AuraTokenMaxLifetime 8d\n"),
     qr/AuraTokenMaxLifetime: '8d' is not a token lifetime between 1 s/,
     'config: 8d is refused, with the range');
like(config_error("AuraTokenMaxLifetime 0\n"), qr/AuraTokenMaxLifetime/,
     'config: 0 is refused');
like(config_error("AuraTokenMaxLifetime 90min\n"), qr/AuraTokenMaxLifetime/,
     "config: httpd's 90min is not the controls' syntax");
my $bcl = <<'CONF';
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    <Location "/bcl">
        SetHandler aura-backchannel-logout
        AuraBackchannelLogout proj-a https://idp.test aura-client%s
    </Location>
</VirtualHost>
CONF
is(config_error(sprintf($bcl, '')), '',
   'config: AuraBackchannelLogout project issuer audience');
like(config_error(sprintf($bcl, ' 24h')),
     qr/AuraBackchannelLogout: .*argument is gone.*AuraTokenMaxLifetime/,
     'config: the old lifetime argument is refused, naming the directive');
like(config_error(sprintf($bcl, '') =~ s/ aura-client//r),
     qr/AuraBackchannelLogout: takes a project, an issuer and an audience/,
     'config: two words are too few');
