# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# OpenID Connect Back-Channel Logout 1.0 (docs/directives.md
# AuraBackchannelLogout, docs/security.md 3.16): A (the test server)
# mounts the endpoint at /v1/test/bcl for proj-a (issuer
# https://idp.test, audience aura-client); B is a private httpd on the
# same NATS with the same keys.
#   - a valid logout_token naming a sid: 200 no-store, and that
#     session's tokens get 401 token-revoked on A and on B (the delay is
#     printed), another session's work; the same logout_token again:
#     200, nothing changes (a token issued since still works);
#   - one naming only a sub: that user's tokens are revoked;
#   - each malformed variant: 400 invalid_request (or 405, 413) and
#     nothing revoked;
#   - B's audit log gets one record per revocation a logout made, with
#     the provider as its actor; none for a replay or a refused one;
#   - a logout_token typed "logout+jwt" (section 2.4) is taken as one
#     without typ; another explicit type (at+jwt) is refused; and a
#     token typed "logout+jwt" is never a bearer token.
#
# On the code before: the handler does not exist (the Location answers
# no 200/400) and nothing is revoked.  Before typed tokens were
# verified, the typed logout_token got 400 (2 assertions fail); before
# logouts were audited, B's audit log stayed empty (5 fail).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use JSON::PP qw(decode_json encode_json);
use LWP::UserAgent;
use MIME::Base64 qw(encode_base64);
use Time::HiRes qw(time sleep);
use Aura::Test qw(ua_request t_dir wait_until private_httpd json_body mint new_reqid
                  exec_count problem_ok ANON_KEY);

plan tests => 71;

my $cfg = Apache::Test::config();
my $a_data = "http://127.0.0.1:$cfg->{vhosts}{aura_data}{port}";
my $a_mgmt = "http://127.0.0.1:$cfg->{vhosts}{aura_mgmt}{port}";
my $ua = LWP::UserAgent->new(timeout => 30);
my $ops = 'Basic ' . encode_base64('ops:ops-secret', '');
my $dir = tempdir(CLEANUP => !$ENV{AURA_TEST_KEEP});
my $jwt = $ENV{AURA_TEST_JWT_DIR};
my $key = "$jwt/rsa.key";
my $EVENT = 'http://schemas.openid.net/event/backchannel-logout';
my $n = 0;

sub req { return ua_request($ua, @_) }
# A logout_token: valid unless the arguments say otherwise.
sub logout_token {
    my (%o) = @_;
    $n++;
    my $alg = $o{alg} || 'RS256';
    my @a = ('--alg', $alg, '--kid', 'r1',
             ($alg eq 'none' ? () : ('--key', $o{key} || $key)),
             '--iss', $o{iss} || 'https://idp.test',
             '--aud', $o{aud} || 'aura-client',
             '--exp-in', $o{exp_in} // 120);
    push @a, '--now', $o{now} if $o{now};
    push @a, '--typ', $o{typ} if defined $o{typ};
    push @a, '--sub', $o{sub} if $o{sub};
    push @a, '--claim', "sid=\"$o{sid}\"" if $o{sid};
    push @a, '--claim', "jti=\"" . ($o{jti} || "lt-$$-$n") . "\""
        unless $o{no_jti};
    push @a, '--claim', 'events=' . ($o{events}
                                     // encode_json({ $EVENT => {} }))
        unless $o{no_events};
    push @a, '--claim', 'nonce="n-1"' if $o{nonce};
    return mint(@a);
}
sub logout {
    my ($token, %h) = @_;
    return req(POST => "$a_data/v1/test/bcl", 'logout_token=' . $token,
               'Content-Type' => 'application/x-www-form-urlencoded', %h);
}
sub user_token {
    my ($sub, $iat, @more) = @_;
    return mint(qw(--alg RS256 --kid r1 --exp-in 300 --sub), $sub,
                '--now', $iat, '--key', $key, '--project', 'proj-a', @more);
}
sub code_on {
    my ($base, $token) = @_;
    my $id = new_reqid('bcl');
    my $res = req(GET => "$base/v1/functions/bcl", undef,
                  apikey => ANON_KEY, 'X-Request-Id' => $id,
                  Authorization => "Bearer $token");
    return wantarray ? ($res->code, exec_count($id), $res) : $res->code;
}
sub controls {
    my $res = req(GET => "$a_mgmt/ops/api/controls", undef,
                  Authorization => $ops);
    return grep { $_->{kind} eq 'revoke' && $_->{state} eq 'active' }
           @{ (json_body($res) || {})->{controls} || [] };
}
my @lift;
END {
    local $?;
    req(DELETE => "$a_mgmt/ops/api/controls/$_", undef,
        Authorization => $ops, 'X-Aura-CSRF' => 1) for @lift;
}

my ($port, $httpd) = private_httpd(dir => $dir, children => 2, threads => 4,
                                   body => <<"CONF");
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraNATSReconnectWait 100ms
AuraNATSConnectTimeout 1s
AuraDBParams "$ENV{AURA_TEST_PG_CONNINFO}"
AuraRateLimitZone default rate=100000r/s burst=100000
AuraAuditLog $dir/audit.log gw-b
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    AuraJWTKeyFile $jwt/jwks.json
    AuraJWTLeeway 5s
    <Location "/v1/test/bcl">
        SetHandler aura-backchannel-logout
        AuraPublic On
        AuraBackchannelLogout proj-a https://idp.test aura-client
    </Location>
    <Location "/v1/functions/">
        AuraService functions nats:aura.functions
    </Location>
    <Location "/health">
        SetHandler aura-health
        AuraPublic On
    </Location>
</VirtualHost>
CONF
my $b = "http://127.0.0.1:$port";
system("$httpd -k start") == 0 or die 'httpd B did not start';
END { local $?; system("$httpd -k stop") if -s "$dir/httpd.pid"; }
ok(wait_until(30, sub { req(GET => "$b/health")->code == 200 }), 'B is up');

my $t = int(time);
my @before = controls();

# --- malformed: 400 and nothing revoked -------------------------------------
sub refused_ok {
    my ($name, $res, $status) = @_;
    $status ||= 400;
    is($res->code, $status, "$name: $status");
    if ($status == 400) {
        my $e = json_body($res) || {};
        is($e->{error}, 'invalid_request', "$name: error invalid_request");
    }
    else {
        pass("$name: no body to check");
    }
}
my %bad = (
    'nonce present' => logout_token(sid => 'x-1', nonce => 1),
    'no events' => logout_token(sid => 'x-1', no_events => 1),
    'events without the member' =>
        logout_token(sid => 'x-1', events => '{"other":{}}'),
    'wrong aud' => logout_token(sid => 'x-1', aud => 'someone-else'),
    'wrong iss' => logout_token(sid => 'x-1', iss => 'https://evil.test'),
    'alg none' => logout_token(sid => 'x-1', alg => 'none'),
    'HS256 with the public key' =>
        logout_token(sid => 'x-1', alg => 'HS256', key => "$jwt/rsa.pub"),
    'no jti' => logout_token(sid => 'x-1', no_jti => 1),
    'neither sub nor sid' => logout_token(),
    'expired' => logout_token(sid => 'x-1', exp_in => -60),
);
# Another token's signature on this one's header and payload.
my ($h1, $p1) = split /\./, logout_token(sid => 'x-1');
my (undef, undef, $sig2) = split /\./, logout_token(sid => 'x-2');
$bad{'bad signature'} = "$h1.$p1.$sig2";
for my $name (sort keys %bad) {
    refused_ok($name, logout($bad{$name}));
}
refused_ok('no logout_token', req(POST => "$a_data/v1/test/bcl", 'x=1',
           'Content-Type' => 'application/x-www-form-urlencoded'));
refused_ok('JSON body', req(POST => "$a_data/v1/test/bcl",
           encode_json({ logout_token => logout_token(sid => 'x-1') }),
           'Content-Type' => 'application/json'));
refused_ok('GET', req(GET => "$a_data/v1/test/bcl?logout_token="
                      . logout_token(sid => 'x-1')), 405);
refused_ok('a huge body', logout(logout_token(sid => 'x-1') . ('A' x 70000)),
           413);
is(scalar(controls()), scalar(@before), 'the malformed ones revoked nothing');

# --- a valid logout by sid ---------------------------------------------------
my $s1 = user_token('bcl-dan', $t - 20, '--claim', 'sid="bcl-s1"');
my $s2 = user_token('bcl-dan', $t - 20, '--claim', 'sid="bcl-s2"');
is(code_on($b, $s1), 200, 'sid: the session works on B before');
my $lt = logout_token(sid => 'bcl-s1', sub => 'bcl-dan', now => $t - 5);
my $t0 = time;
my $res = logout($lt);
is($res->code, 200, 'sid: the logout is taken: 200');
is($res->header('Cache-Control'), 'no-store', 'sid: Cache-Control no-store');
my @mine = grep { $_->{target} eq 'sid:proj-a:bcl-s1' } controls();
push @lift, map { $_->{id} } @mine;
is(scalar(@mine), 1, 'sid: one revocation, of the session');
is($mine[0]{value}, $t - 5, "sid: revoked at the logout_token's iat");
ok(wait_until(10, sub { code_on($b, $s1) == 401 }), 'sid: refused on B');
diag(sprintf('logout on A until 401 on B: %.3f s', time - $t0));
my ($code, $ran, $r401) = code_on($b, $s1);
problem_ok($r401, 401, 'token-revoked', 'sid on B');
is($ran, 0, 'sid on B: the service never ran');
is(code_on($a_data, $s1), 401, 'sid: refused on A');
is(code_on($b, $s2), 200, "sid: the user's other session works");
my $after = user_token('bcl-dan', $t, '--claim', 'sid="bcl-s1"');
is(code_on($b, $after), 200, 'sid: a token issued after the logout works');
is(logout($lt)->code, 200, 'sid: the same logout_token again: 200');
@mine = grep { $_->{target} eq 'sid:proj-a:bcl-s1' } controls();
is($mine[0]{value}, $t - 5, 'sid: the replay changed nothing');
is(code_on($b, $after), 200, 'sid: the token issued since still works');

# --- a valid logout by sub ---------------------------------------------------
my $e1 = user_token('bcl-eve', $t - 20);
is(code_on($b, $e1), 200, 'sub: works before');
is(logout(logout_token(sub => 'bcl-eve', now => $t - 5))->code, 200,
   'sub: the logout is taken');
push @lift, map { $_->{id} }
            grep { $_->{target} eq 'sub:proj-a:bcl-eve' } controls();
ok(wait_until(10, sub { code_on($b, $e1) == 401 }), 'sub: refused on B');

# --- explicitly typed logout_tokens (section 2.4, RFC 8725 3.11) ------------
my $f1 = user_token('bcl-fay', $t - 20, '--claim', 'sid="bcl-s3"');
is(code_on($b, $f1), 200, 'typed: the session works before');
refused_ok('typed at+jwt', logout(logout_token(sid => 'bcl-s3',
                                               typ => 'at+jwt')));
is(scalar(grep { $_->{target} eq 'sid:proj-a:bcl-s3' } controls()), 0,
   'typed at+jwt: nothing revoked');
is(logout(logout_token(sid => 'bcl-s3', now => $t - 5,
                       typ => 'logout+jwt'))->code, 200,
   'typed logout+jwt: the logout is taken');
push @lift, map { $_->{id} }
            grep { $_->{target} eq 'sid:proj-a:bcl-s3' } controls();
ok(wait_until(10, sub { code_on($b, $f1) == 401 }),
   'typed logout+jwt: the session is refused on B');
# A token typed for logout, with everything a user token needs, is not
# a bearer token: a logout_token cannot be replayed as a credential.
my $typed_user = user_token('bcl-gus', $t - 20, '--typ', 'logout+jwt');
($code, $ran, $r401) = code_on($a_data, $typed_user);
problem_ok($r401, 401, 'invalid-token', 'a bearer token typed logout+jwt');
is($ran, 0, 'a bearer token typed logout+jwt: the service never ran');

# --- the audit log: what the provider revoked, on the instance that took it --
sub audit_records {
    open(my $fh, '<', "$dir/audit.log") or return ();
    my @r = map { chomp; decode_json($_) } <$fh>;
    close $fh;
    return @r;
}
my $on_b = sub {
    my ($token) = @_;
    return req(POST => "$b/v1/test/bcl", 'logout_token=' . $token,
               'Content-Type' => 'application/x-www-form-urlencoded');
};
my $audit_lt = logout_token(sid => 'bcl-s4', sub => 'bcl-hal',
                            now => $t - 5);
is($on_b->($audit_lt)->code, 200, 'audit: a logout on B is taken');
push @lift, map { $_->{id} }
            grep { $_->{target} eq 'sid:proj-a:bcl-s4' } controls();
is($on_b->($audit_lt)->code, 200, 'audit: the same logout again on B');
is($on_b->(logout_token(sid => 'bcl-s4', nonce => 1))->code, 400,
   'audit: a refused logout on B');
my @recs = audit_records();
is(scalar(@recs), 1, 'audit: one record (none for the replay, none for '
   . 'the refused one)');
is($recs[0]{action}, 'control.revoke.set', 'audit: the action');
is($recs[0]{actor}, 'idp:https://idp.test', 'audit: the provider is the actor');
is_deeply([@{ $recs[0] }{qw(role project target outcome status)}],
          ['identity-provider', 'proj-a', 'revoke sid:proj-a:bcl-s4',
           'executed', 200], 'audit: role, project, target, outcome, status');
my $verify = t_dir() . '/../build/aura-audit-verify';
is(system("$verify $dir/audit.log >/dev/null 2>&1") >> 8, 0,
   'audit: aura-audit-verify accepts the log');
