# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The operator console's gate (console/aura_console_gate.c): the
# operator is whom httpd authenticated for the console's Location (Basic
# here); a tenant's console token, a wrong password or a user Require
# does not name get nothing; a console mounted without authentication
# answers nothing; a change must carry X-Aura-CSRF and come from the
# console's own origin.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET POST);
use HTTP::Request;
use MIME::Base64 qw(encode_base64);
use JSON::PP qw(decode_json);
use Aura::Test qw(console_token problem_ok error_log_size error_log_since
                  wait_until);

plan tests => 4 + 6 + 4 + 3 + (4 + 3) + 4 * 4 + 3 + 3;

Apache::TestRequest::module('aura_mgmt');
my $ua = Apache::TestRequest::user_agent();
my $hostport = Apache::TestRequest::hostport();

sub basic { 'Basic ' . encode_base64("$_[0]:$_[1]", '') }
my $ops = basic('ops', 'ops-secret');

sub req {
    my ($method, $path, @h) = @_;
    my $req = HTTP::Request->new($method =>
                                 Apache::TestRequest::resolve_url($path));
    $req->header(@h) if @h;
    return $ua->request($req);
}

# Who is not the operator.
my $res = GET('/ops/');
is($res->code, 401, 'no credential: 401');
like($res->header('WWW-Authenticate') || '', qr/^Basic realm="mod_aura operators"/,
     'no credential: httpd asks for Basic');
unlike($res->content, qr/operator console/, 'no credential: no page');
$res = GET('/ops/', Authorization => basic('ops', 'wrong'));
is($res->code, 401, 'wrong password: 401');

$res = GET('/ops/', Authorization => basic('intruder', 'intruder-secret'));
ok($res->code == 401 || $res->code == 403,
   'a valid user Require does not name: refused (' . $res->code . ')');
unlike($res->content, qr/Signed in/, 'that user: no page');
my $token = console_token('user-owner');
$res = GET('/ops/', Authorization => "Bearer $token");
is($res->code, 401, "a tenant owner's console token: 401");
unlike($res->content, qr/Signed in/, 'the console token: no page');
$res = GET('/ops/api/whoami', Authorization => "Bearer $token",
           'X-Project-Id' => 'proj-a');
is($res->code, 401, 'the console token on the API: 401');
ok($res->content !~ /"operator"/, 'the console token: no operator JSON');

# The operator.
$res = GET('/ops/', Authorization => $ops);
is($res->code, 200, 'operator: 200');
like($res->content, qr/Signed in as ops/, 'operator: the page names them');
like($res->header('Content-Security-Policy') || '',
     qr/frame-ancestors 'none'/, 'the page may not be framed (CSP)');
is($res->header('X-Frame-Options'), 'DENY', 'nor with X-Frame-Options');

$res = GET('/ops/api/whoami', Authorization => $ops);
is($res->code, 200, 'whoami: 200');
my $me = eval { decode_json($res->content) } || {};
is($me->{operator}, 'ops', 'whoami: the operator');
is($res->header('Cache-Control'), 'no-store', 'console answers: no-store');

# Mounted without authentication: nothing.
my $from = error_log_size();
$res = GET('/ops-open/', Authorization => "Bearer $token");
problem_ok($res, 403, 'operator-required', 'no AuthType on the Location');
ok(wait_until(10, sub { error_log_since($from) =~ /AURA02050/ }),
   'and the error log says why (AURA02050)');
is(GET('/ops-open/api/whoami')->code, 403, 'its API too');
ok(GET('/ops-open/api/whoami')->content !~ /"operator"/,
   'no operator JSON there');

# A change from another site.  whoami takes GET only, so a request the
# gate lets through gets 405 from the part, one it stops gets 403.
for my $case (['no X-Aura-CSRF', []],
              ['X-Aura-CSRF: 0', ['X-Aura-CSRF' => '0']],
              ['another Origin', ['X-Aura-CSRF' => '1',
                                  Origin => 'https://evil.example']],
              ['Sec-Fetch-Site: cross-site',
               ['X-Aura-CSRF' => '1', 'Sec-Fetch-Site' => 'cross-site']]) {
    my ($name, $h) = @$case;
    $res = req('POST', '/ops/api/whoami', Authorization => $ops, @$h);
    problem_ok($res, 403, 'cross-site-request', "POST, $name");
}
$res = req('POST', '/ops/api/whoami', Authorization => $ops,
           'X-Aura-CSRF' => '1', Origin => "http://$hostport",
           'Sec-Fetch-Site' => 'same-origin');
is($res->code, 405, 'POST from the own origin passes the gate (405 from whoami)');
$res = req('DELETE', '/ops/api/whoami', Authorization => $ops,
           'X-Aura-CSRF' => '1');
is($res->code, 405, 'DELETE with the header, no Origin (a script): passes');
$res = req('DELETE', '/ops/api/whoami', Authorization => $ops);
is($res->code, 403, 'DELETE without the header: 403');

# Paths that are not the console's.
is(GET('/ops/nothing-here', Authorization => $ops)->code, 404,
   'an unknown part: 404');
is(GET('/ops/api/whoami/x', Authorization => $ops)->code, 404,
   'below a part that has no subtree: 404');
isnt(GET('/opsx', Authorization => $ops)->content =~ /Signed in/ ? 1 : 0, 1,
     '/opsx is not the console');
