# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The fleet page in a real browser (issue #31 point 2): headless Debian
# Chromium, driven by playwright-core (t/console/fleet_browser.mjs),
# loads the test server's console (/ops on the management plane) with
# the operator's Basic credentials on a 1366x768 viewport, while two
# private instances (t-br-1, t-br-2) publish on the same NATS and
# t-br-1's storage breaker is open.  Asserted: the three instances'
# cards, live; the open breaker on t-br-1's card only; the change in
# "recent changes"; the style applied (the cards' grid) and no
# horizontal scrolling; the script ran (it refreshed the page); no
# console error and no CSP violation.  The screenshot is kept as a test
# artifact: t/logs/artifacts/fleet.png of the run (build/test copies
# t/logs/artifacts back to artifacts/ of the tree); its path is printed.
# Node, playwright-core and Chromium are required, as for
# t/sdk/supabase.t; only AURA_TEST_NO_SDK=1 (the package's autopkgtest)
# skips this file.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Path qw(make_path);
use File::Temp qw(tempdir);
use JSON::PP qw(decode_json);
use LWP::UserAgent;
use MIME::Base64 qw(encode_base64);
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use Aura::Test qw(private_httpd wait_until free_ports t_dir);

plan skip_all => 'AURA_TEST_NO_SDK=1 (the autopkgtest: no npm registry)'
    if $ENV{AURA_TEST_NO_SDK};
plan tests => 3 + 3 + 4 + 4 + 3;

my $ANON = 'ak_test_anon_0123456789abcdef';
my $CHROMIUM = '/usr/bin/chromium';
my ($dead_http) = free_ports(1);
Apache::TestRequest::module('aura_mgmt');
my $main = 'http://' . Apache::TestRequest::hostport();
my $ua = LWP::UserAgent->new(keep_alive => 1, timeout => 30);
my $ops = 'Basic ' . encode_base64('ops:ops-secret', '');

my (@dirs, @httpd, @port);
for my $i (1, 2) {
    my $dir = tempdir(CLEANUP => 1);
    my ($port, $h) = private_httpd(dir => $dir, children => 1, body => <<"CONF");
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraDBParams "$ENV{AURA_TEST_PG_CONNINFO}"
AuraFleet On
AuraInstanceName t-br-$i
AuraFleetInterval 200ms
AuraFleetGoneAfter 3s
AuraBreaker storage threshold=2 cooldown=600s
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    <Location "/v1/storage/">
        AuraService storage http://127.0.0.1:$dead_http
        AuraRateLimit off
    </Location>
</VirtualHost>
CONF
    system("$h -k start") == 0 or die "$h did not start";
    push @dirs, $dir;
    push @httpd, $h;
    push @port, $port;
}
END {
    for my $i (0 .. $#httpd) {
        system("$httpd[$i] -k stop") if -s "$dirs[$i]/httpd.pid";
    }
}

sub fleet {
    my $res = $ua->get("$main/ops/api/fleet", Authorization => $ops);
    return $res->is_success ? (eval { decode_json($res->content) } || {})
                            : {};
}

sub instance {
    my ($f, $name) = @_;
    my ($i) = grep { $_->{name} eq $name } @{ $f->{instances} || [] };
    return $i || {};
}

my @names = qw(t-main t-br-1 t-br-2);
ok(wait_until(30, sub {
       my $f = fleet();
       !grep { (instance($f, $_)->{state} // '') ne 'live' } @names }),
   'the API lists t-main, t-br-1 and t-br-2, live');
for my $i (1, 2) {
    $ua->get("http://127.0.0.1:$port[0]/v1/storage/x", apikey => $ANON);
}
ok(wait_until(30, sub {
       (instance(fleet(), 't-br-1')->{breakers}{storage} // '') eq 'open' }),
   "t-br-1's storage breaker is open, and the API says so");
diag("$CHROMIUM is missing: run build/install-deps") unless -x $CHROMIUM;
ok(-x $CHROMIUM, 'Chromium is there');

# ---- the browser --------------------------------------------------------
my $art = t_dir() . '/logs/artifacts';
make_path($art);
my $shot = "$art/fleet.png";
unlink $shot;
my $got = {};
{
    local $ENV{AURA_FLEET_URL} = "$main/ops/";
    local $ENV{AURA_FLEET_USER} = 'ops';
    local $ENV{AURA_FLEET_PASSWORD} = 'ops-secret';
    local $ENV{AURA_FLEET_SHOT} = $shot;
    local $ENV{AURA_FLEET_CHROMIUM} = $CHROMIUM;
    local $ENV{AURA_SDK_DIR} = t_dir() . '/sdk';
    # Under the suite's user HOME is unset: Chromium wants one.
    local $ENV{HOME} = $ENV{HOME} || $ENV{AURA_TEST_RUN};
    open(my $fh, '-|', 'timeout', '300', 'node',
         t_dir() . '/console/fleet_browser.mjs') or die "node: $!";
    while (my $line = <$fh>) {
        my $o = eval { decode_json($line) } or next;
        $got = $o;
    }
    close $fh;
    diag("node exited with $?") if $?;
}
ok($got->{ok}, 'the page loaded in Chromium ' . ($got->{browser} // '?'))
    or diag($got->{thrown} // 'no output');
is($got->{status}, 200, 'with the Basic credentials: 200');
like($got->{who} // '', qr/Signed in as ops/, 'it names the operator');

my %card = map { $_->{instance} => $_ } @{ $got->{cards} || [] };
diag('cards: ' . join(', ', map { "$_->{instance} ($_->{state})" }
                           @{ $got->{cards} || [] }));
is(join(' ', map { $card{$_} ? $card{$_}{state} : 'missing' } @names),
   'live live live', 'a live card for t-main, t-br-1 and t-br-2');
is(($card{'t-br-1'} || {})->{breakers}{storage}, 'open',
   "t-br-1's card: storage open");
is(join(' ', map { ($card{$_} || {})->{breakers}{storage} // '-' }
                 qw(t-main t-br-2)), 'closed closed',
   "the others' storage breakers: closed");
ok(grep({ /t-br-1\s+breaker storage closed\s*\S\s*open/ }
        @{ $got->{changes} || [] }),
   'recent changes: t-br-1 breaker storage closed -> open');

is($got->{grid}, 'grid', 'console.css applied (the cards are a grid)');
ok(($got->{scrollWidth} // 99999) <= 1366,
   'no horizontal scrolling at 1366 px (' . ($got->{scrollWidth} // '?')
   . ')');
ok(($got->{refreshes} // 0) >= 1, 'fleet.js ran: it refreshed the page');
ok(grep({ m{/ops/controls$} } @{ $got->{nav} || [] }),
   'the nav links to the controls');

is_deeply($got->{errors} || ['no report'], [], 'no console error')
    or diag('error answers: ' . join(', ', @{ $got->{failed} || [] }));
is_deeply($got->{csp} || ['no report'], [], 'no CSP violation');
ok(-s $shot, 'the screenshot is kept');
diag("screenshot: $shot (build/test keeps it as artifacts/"
     . "<pass>/fleet.png of the tree)");
