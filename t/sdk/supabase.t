# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Issue #30: the stock SDK, unchanged.  npm's @supabase/supabase-js v2
# (pinned in t/sdk/package.json and package-lock.json, installed by
# build/install-deps with npm ci) and its ws transport on Node, pointed
# at the data plane, whose VirtualHost Includes conf/aura-sdk-routes.conf
# (the SDK's /<service>/v1/ layout).  t/sdk/supabase_check.mjs makes the
# calls as an application would and prints what the SDK returned; this
# file judges it, with the service's execution counts and the HTTP
# upstream's log:
# - an anonymous function call (the SDK sends the anon key as apikey AND
#   as "Authorization: Bearer <key>": a 401 invalid-token before);
# - a signed-in user (its token through the accessToken option), a
#   service_role client, a storage download, a /rest/v1 query;
# - the realtime WebSocket opens (the key leaves its URL at the gateway);
# - CORS from a real browser: headless Debian Chromium (driven by
#   playwright-core) loads a page of another origin that uses the SDK's
#   browser bundle to call the function anonymously.
# Node, the SDK and Chromium are required, never skipped: CI installs
# them (build/install-deps); only the package's autopkgtest opts out.  Each wait is generous; nothing is timed.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use JSON::PP ();
use Aura::Test qw(mint exec_count t_dir ANON_KEY);
use Aura::Upstream qw(upstream_stats upstream_log);

# Only the Debian package's autopkgtest, which has no npm registry to
# install the SDK from, says AURA_TEST_NO_SDK=1 (debian/tests/suite).
plan skip_all => 'AURA_TEST_NO_SDK=1 (the autopkgtest: no npm registry)'
    if $ENV{AURA_TEST_NO_SDK};
plan tests => 4 + 3 * 4 + 2 + 4 + 4 + 7 + 8;

my $SERVICE = 'ak_test_service_0123456789abcdef';
my $CHROMIUM = '/usr/bin/chromium';
my $sdk = t_dir() . '/sdk';
my $cfg = Apache::Test::config();
my $url = "http://127.0.0.1:$cfg->{vhosts}{aura_data}{port}";
my $user = mint(qw(--alg RS256 --kid r1 --exp-in 300 --sub sdk-user
                   --project proj-a --key), "$ENV{AURA_TEST_JWT_DIR}/rsa.key");
my $rid = sprintf('t-sdk-%d-%d', $$, time);
my $json = JSON::PP->new;

# --- run the SDK --------------------------------------------------------
diag("$sdk/node_modules is missing: run build/install-deps (npm ci)")
    unless -d "$sdk/node_modules/\@supabase/supabase-js";
my $since = upstream_stats()->{log_lines};
my %got;
{
    local $ENV{AURA_SDK_URL} = $url;
    local $ENV{AURA_SDK_ANON} = ANON_KEY;
    local $ENV{AURA_SDK_SERVICE} = $SERVICE;
    local $ENV{AURA_SDK_USER} = $user;
    local $ENV{AURA_SDK_RID} = $rid;
    local $ENV{AURA_SDK_CHROMIUM} = $CHROMIUM;
    # Under the suite's user HOME is unset: Chromium and npm want one.
    local $ENV{HOME} = $ENV{HOME} || "$ENV{AURA_TEST_RUN}";
    # A bound on a hung run (the checks' own waits are 20 s each).
    open(my $fh, '-|', 'timeout', '300', 'node',
         "$sdk/supabase_check.mjs") or die "cannot run node: $!";
    while (my $line = <$fh>) {
        my $o = eval { $json->decode($line) } or next;
        $got{ $o->{check} } = $o;
    }
    close $fh;
    diag("node exited with $?") if $?;
}

my $pin = $json->decode(do {
    open(my $p, '<', "$sdk/package.json") or die "$sdk/package.json: $!";
    local $/; <$p> })->{dependencies}{'@supabase/supabase-js'};
my $v = $got{versions} || {};
ok(%$v, 'the SDK ran (versions reported)');
is($v->{'supabase-js'}, $pin, "supabase-js is the pinned $pin");
like($v->{node} // '', qr/^v\d+\./, 'node reported its version');
ok($v->{ws} && $v->{'realtime-js'}, 'ws and realtime-js reported');
diag(sprintf('SDK: supabase-js %s, realtime-js %s, ws %s, playwright-core '
             . '%s on node %s', map { $_ // '?' }
             @{$v}{qw(supabase-js realtime-js ws playwright-core node)}));

# The headers the example service received, from an echo the SDK parsed.
sub echoed {
    my ($o) = @_;
    my $d = $o->{data};
    $d = eval { $json->decode($d) } if defined $d && !ref $d;
    return ref $d eq 'HASH' ? $d : {};
}

# --- functions: anonymous, a user, service_role -------------------------
for my $c ([ 'anon-function', 'anon', 'key:' ],
           [ 'user-function', 'authenticated', 'sdk-user' ],
           [ 'service-function', 'service_role', 'key:' ]) {
    my ($check, $role, $actor) = @$c;
    my $o = $got{$check} || {};
    my $h = echoed($o);
    ok($o->{ok}, "$check: the SDK call succeeded")
        or diag($json->encode($o));
    is_deeply($h->{'Aura-Role'}, [ $role ], "$check: Aura-Role $role");
    if ($actor eq 'key:') {
        like(($h->{'Aura-Actor'} || [])->[0] // '', qr/^key:[0-9a-f]{16}$/,
             "$check: the key acts");
    }
    else {
        is_deeply($h->{'Aura-Actor'}, [ $actor ], "$check: the user acts");
    }
    is(exec_count("$rid-$check"), 1, "$check: the service ran once");
    if ($check eq 'anon-function') {
        ok(!exists $h->{authorization} && !exists $h->{apikey},
           'anon-function: neither the key nor Authorization reached it');
        is_deeply($h->{'Aura-Path'}, [ '/functions/v1/hello' ],
                  'anon-function: Aura-Path is the SDK path as sent');
    }
}

# --- storage: a download over the HTTP path -----------------------------
{
    my $o = $got{'anon-storage'} || {};
    ok($o->{ok}, 'storage download: the SDK call succeeded')
        or diag($json->encode($o));
    is_deeply($o->{data}, { size => 64, pattern => JSON::PP::true },
              'storage download: the 64 bytes of the upstream');
    my ($r) = grep { ($_->{headers}{'aura-request-id'} // '')
                     eq "$rid-anon-storage" } @{ upstream_log($since) };
    $r ||= { headers => {}, raw_head => '' };
    is($r->{path}, '/storage/object/sdk-bucket/download/64',
       'storage download: the path after /storage/v1/ on the upstream');
    ok($r->{headers}{'aura-role'} && $r->{headers}{'aura-role'} eq 'anon'
       && $r->{raw_head} !~ /^(?:authorization|apikey):/mi,
       'storage download: anon, no key or Authorization upstream');
}

# --- rest: the db route -------------------------------------------------
{
    my $o = $got{'anon-rest'} || {};
    my $h = echoed($o);
    ok($o->{ok}, 'rest query: the SDK call succeeded')
        or diag($json->encode($o));
    is_deeply($h->{'Aura-Role'}, [ 'anon' ], 'rest query: Aura-Role anon');
    is_deeply($h->{'Aura-Path'}, [ '/rest/v1/todos' ],
              'rest query: by aura-db, at the SDK path');
    is(exec_count("$rid-anon-rest"), 1, 'rest query: aura-db ran once');
}

# --- realtime: the WebSocket opens --------------------------------------
{
    my $o = $got{realtime} || {};
    ok($o->{ok}, 'realtime: the socket opened')
        or diag($json->encode($o));
    is($o->{state}, 'open', 'realtime: the SDK says open');
    like($o->{endpoint} // '', qr{^ws://127\.0\.0\.1:\d+/realtime/v1/websocket\?apikey=KEY},
         'realtime: the SDK put the key in the URL');
    my ($r) = grep { ($_->{path} // '') =~ m{^/realtime/websocket} }
              @{ upstream_log($since) };
    $r ||= { headers => {}, path => '' };
    ok($r->{path} ne '', 'realtime: the upstream got the WebSocket request');
    like($r->{path}, qr{^/realtime/websocket\?vsn=[\d.]+$},
         'realtime: the key left the URL, the rest of the query is kept');
    is($r->{headers}{upgrade} // '', 'websocket',
       'realtime: as a WebSocket upgrade');
    is($r->{headers}{'aura-role'} // '', 'anon', 'realtime: Aura-Role anon');
}

# --- a real browser, another origin: CORS -------------------------------
{
    my $o = $got{browser} || {};
    ok(-x $CHROMIUM, "Debian's Chromium is installed ($CHROMIUM)");
    ok($o->{ok}, 'browser: the SDK call from the page succeeded')
        or diag($json->encode($o));
    is_deeply(echoed($o), { from => 'browser' },
              'browser: the page read the echo of its body');
    like($o->{page_origin} // '', qr{^http://127\.0\.0\.1:\d+$},
         'browser: the page has an origin of its own');
    isnt($o->{page_origin} // '', $url, 'browser: not the gateway\'s origin');
    my ($post) = grep { $_->{method} eq 'POST' } @{ $o->{responses} || [] };
    is($post && $post->{status}, 200, 'browser: the POST got 200');
    is($post && $post->{acao}, '*',
       'browser: Access-Control-Allow-Origin: * on it');
    is(exec_count("$rid-browser"), 1, 'browser: the service ran once');
    diag("browser: Chromium $o->{browser}") if $o->{browser};
}
