# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Issue #15, found by fuzz/fuzz_envelope.c: a service reply whose header
# name is not an HTTP token, or whose header value holds a control
# character, is malformed (502, AURA00023), and nothing of it reaches
# the client.  nats.c runs a header line without a colon on into the
# next one, so such a name could carry a second header (X-Request-Id,
# Aura-*) into the response.  A reply with well-formed odd fields (a
# tab, obs-text, token punctuation) still crosses.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Aura::Test qw(default_console new_reqid problem_ok proto error_log_size
                  error_log_since exec_count);

plan tests => 3 * (4 + 2) + 1 + 2;

default_console();

Apache::TestRequest::module('aura_data');
my $log_from = error_log_size();

# Names that are not tokens: a space, a byte above 127, a slash.  Each
# time the service ran once and the client saw none of its headers.
for my $case (['Bad Name: x', 'a name with a space'],
              ["X-\xe9: x", 'a name with a byte above 127'],
              ['X/Y: x', 'a name with a slash']) {
    my ($spec, $what) = @$case;
    my $id = new_reqid('field');
    my $res = GET('/v1/functions/m', 'X-Example-Reply-Header' => $spec,
                  'X-Example-Reply-Header-2' => 'X-Leak: 1',
                  'X-Request-Id' => $id);
    problem_ok($res, 502, 'upstream-error', "reply header with $what");
    ok(!defined $res->header('X-Leak'),
       "$what: no header of that reply reaches the client");
    is(exec_count($id), 1, "$what: the service ran once");
}
like(error_log_since($log_from),
     qr/AURA00023: malformed reply on aura\.functions[^\n]*not an HTTP token/,
     'the refusal is logged with its tag and reason');

# A value with a control character cannot travel in an HTTP request
# header to the example service (httpd refuses it with 400), so it is
# covered by t/unit/test_envelope.c; here, what stays allowed.
SKIP: {
    # The HTTP/2 passes' client (Protocol::HTTP2 1.10) refuses the tchars
    # '.', '|' and '~' in a header name and mangles obs-text; nghttp
    # shows the gateway passes both on HTTP/2 as on HTTP/1.1.
    skip 'the HTTP/2 test client cannot carry this header', 2
        unless proto() eq 'h1';
    my $res = GET('/v1/functions/m',
                  'X-Example-Reply-Header' => "X-Odd!#\$%&'*+.^`|~: a\tb \xe9");
    is($res->code, 200, 'token punctuation, a tab and obs-text: 200');
    is($res->header("X-Odd!#\$%&'*+.^`|~"), "a\tb \xe9",
       'that header crosses as it was sent');
}
