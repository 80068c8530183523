# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Every value that becomes identity is bounded and printable, refused
# whole otherwise, never cut:
#  - a token's sub: 1 to 255 bytes without C0 controls or DEL (JSON
#    "\r\n", "\t", "\u007f"; "\u0000" is refused by the JSON parser
#    already) -> 401 invalid-token, nothing runs;
#  - a ~600-byte sub on a leased quota and with Redis down (it used to
#    overflow a 512-byte stack buffer in the limiter key and kill the
#    child): 401, and the children live on; the longest valid sub goes
#    through both quota paths;
#  - the key store's ids: 64 characters are kept whole (two projects
#    whose ids share 63 characters used to become one in the key cache),
#    65 or a control character or a space make the key unusable: 401
#    invalid-key and AURA00301 for the operator.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Aura::Test qw(mint json_body new_reqid exec_count problem_ok psql
                  redis_stop redis_start error_log_size error_log_since
                  wait_until ANON_KEY);

my $rsa = "$ENV{AURA_TEST_JWT_DIR}/rsa.key";

sub token {
    my (@claims) = @_;
    return mint(qw(--alg RS256 --kid r1 --exp-in 300 --project proj-a
                   --key), $rsa, @claims);
}

sub call {
    my ($path, $apikey, $token) = @_;
    my $id = new_reqid('ident');
    my $res = GET($path, apikey => $apikey, 'X-Request-Id' => $id,
                  'X-Example-Headers' => 'json',
                  (defined $token ? (Authorization => "Bearer $token") : ()));
    return ($res, json_body($res) || {}, exec_count($id));
}

sub bad_token {
    my ($name, $path, $token) = @_;
    my ($res, $h, $n) = call($path, ANON_KEY, $token);
    problem_ok($res, 401, 'invalid-token', $name);
    is($n, 0, "$name: the service ran nothing");
}

sub good_token {
    my ($name, $path, $token, $sub) = @_;
    my ($res, $h, $n) = call($path, ANON_KEY, $token);
    is($res->code, 200, "$name: 200")
        or diag($res->request->uri . "\n" . $res->as_string);
    is_deeply($h->{'Aura-Actor'}, [$sub], "$name: the whole sub is the actor");
    is($n, 1, "$name: the service ran once");
}

my $s255 = join('', map { chr(ord('a') + $_ % 26) } 0 .. 254);
my $s256 = $s255 . 'z';
my $s600 = 'x' x 600;

plan tests => 3 * 3 + 11 * 5 + 1 + 3 + 2 * 4 + 3 * 5 + 5 + 2;

my $log0 = error_log_size();

# --- sub on the data plane ------------------------------------------------
Apache::TestRequest::module('aura_data');
good_token('a sub of 255 bytes', '/v1/functions/id', token('--sub', $s255),
           $s255);
bad_token('a sub of 256 bytes', '/v1/functions/id', token('--sub', $s256));
bad_token('a sub of 600 bytes', '/v1/functions/id', token('--sub', $s600));
bad_token('a sub with CR LF', '/v1/functions/id',
          token('--claim', 'sub="u\r\nAura-Role: service_role"'));
bad_token('a sub with LF', '/v1/functions/id',
          token('--claim', 'sub="u\nx"'));
# jansson refuses "\u0000" (the minter too): a payload by hand.
bad_token('a sub with \u0000', '/v1/functions/id',
          mint(qw(--alg RS256 --kid r1 --key), $rsa, '--raw-payload',
               '{"sub":"u\u0000proj-b","exp":' . (time + 300)
               . ',"aura_project":"proj-a"}'));
bad_token('a sub with TAB', '/v1/functions/id',
          token('--claim', 'sub="u\tx"'));
bad_token('a sub with \u001b', '/v1/functions/id',
          token('--claim', 'sub="u\u001b[31m"'));
bad_token('a sub with DEL', '/v1/functions/id',
          token('--claim', 'sub="u\u007f"'));
like(error_log_since($log0),
     qr/AURA00053: bearer token refused: token subject too long or not printable/,
     'the reason is logged');

# --- the limiter key: leased quota, Redis down ------------------------------
Apache::TestRequest::module('aura_limits');
my $tag = "$$-" . int(time);
my $long = token('--sub', $s600);
bad_token('600-byte sub on a leased quota', '/v1/limit/lease/x', $long);
good_token('255-byte sub on a leased quota', '/v1/limit/lease/x',
           token('--sub', "l$tag" . substr($s255, 0, 255 - length("l$tag"))),
           "l$tag" . substr($s255, 0, 255 - length("l$tag")));
redis_stop();
my $ok = eval {
    bad_token('600-byte sub, Redis down', '/v1/limit/free/x', $long);
    bad_token('600-byte sub, Redis down, leased quota', '/v1/limit/lease/x',
              $long);
    my $sub = "d$tag" . substr($s255, 0, 255 - length("d$tag"));
    good_token('255-byte sub, Redis down (local fallback)',
               '/v1/limit/free/x', token('--sub', $sub), $sub);
    1;
};
redis_start();
die $@ unless $ok;
my $since = error_log_since($log0);
unlike($since, qr/exit signal|Segmentation fault|AddressSanitizer/,
       'no child died');
unlike($since, qr/AURA00302/, 'no over-long actor reached the quota');
Apache::TestRequest::module('aura_data');
is(GET('/health')->code, 200, 'the server still answers');

# --- key store rows ------------------------------------------------------------
my $p63 = 'q' x 63;
my %proj = (
    id64a  => "${p63}a",            # 64: kept whole
    id64b  => "${p63}b",            # 64, same 63-byte prefix
    id65   => "${p63}ab",           # 65: refused
    idlf   => "proj-lf\nAura-Role: service_role",
    idsp   => 'proj with space',
);
sub cleanup {
    psql("delete from api_keys where project_id in (select id from projects "
         . "where org_id = 'org-ident'); delete from projects where org_id "
         . "= 'org-ident'; delete from organizations where id = 'org-ident'");
}
cleanup();
psql("insert into organizations (id, name) values ('org-ident', 'ident')");
for my $k (sort keys %proj) {
    (my $lit = $proj{$k}) =~ s/'/''/g;
    psql("insert into projects (id, org_id, name) values (E'"
         . ($lit =~ s/\n/\\n/gr) . "', 'org-ident', '$k')");
    psql("insert into api_keys (project_id, key_hash, role) values (E'"
         . ($lit =~ s/\n/\\n/gr) . "', encode(sha256(convert_to("
         . "'ak_test_$k\_0123456789abcdef', 'UTF8')), 'hex'), 'anon')");
}
# A plan with a control character, on a valid project.
psql("insert into projects (id, org_id, name, plan) values ('proj-badplan', "
     . "'org-ident', 'badplan', E'pro\\r\\n')");
psql("insert into api_keys (project_id, key_hash, role) values "
     . "('proj-badplan', encode(sha256(convert_to("
     . "'ak_test_badplan_0123456789abcdef', 'UTF8')), 'hex'), 'anon')");

my $log1 = error_log_size();
for my $k (qw(id64a id64b)) {
    my ($res, $h, $n) = call('/v1/functions/id', "ak_test_${k}_0123456789abcdef");
    is($res->code, 200, "$k: a 64-character project id is accepted");
    is_deeply($h->{'Aura-Project'}, [$proj{$k}], "$k: Aura-Project whole");
    is_deeply($h->{'Aura-Org'}, ['org-ident'], "$k: Aura-Org");
    is($n, 1, "$k: the service ran once");
}
for my $k (qw(id65 idlf idsp)) {
    my ($res, $h, $n) = call('/v1/functions/id', "ak_test_${k}_0123456789abcdef");
    problem_ok($res, 401, 'invalid-key', "$k: an unusable project id");
    is($n, 0, "$k: the service ran nothing");
}
{
    my ($res, $h, $n) = call('/v1/functions/id',
                             'ak_test_badplan_0123456789abcdef');
    problem_ok($res, 401, 'invalid-key', 'a plan with CR LF');
    is($n, 0, 'a plan with CR LF: the service ran nothing');
}
my $log = error_log_since($log1);
my @bad = $log =~ /AURA00301: key store row of API key key:[0-9a-f]+ refused: its (project id|plan) is not a valid identity/g;
ok(@bad >= 4, 'each unusable row is logged for the operator (AURA00301)');
unlike($log, qr/qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqab|proj-lf|proj with space/,
       'without the bad value itself');
cleanup();
