# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The reply inboxes of the NATS path (mod_aura_common/nats/aura_inbox.c):
# each request waiting holds a lane, a subscription reused by one request
# after another, each with a token of its own (t/nats/lanes.t counts the
# subscriptions).
# - Many clients at once: every response is the reply to its own
#   request (request id and path echoed by the example service), none
#   is lost or crossed.
# - Replies that come after their request gave up (504 at the 1 s budget
#   of /v1/test/slow/, the service answering at 1.5 s) carry an older
#   token of their lane and are dropped: the requests around them get their own replies, and no
#   child dies.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Aura::Test qw(ANON_KEY default_key exec_count new_reqid error_log_size
                  error_log_since wait_until);
use Aura::Load qw(fan_out);

plan tests => 8;

Apache::TestRequest::module('aura_data');
default_key();
my $base = 'http://' . Apache::TestRequest::hostport();
my $tag = "$$-" . int(time);

# --- many clients at once ----------------------------------------------------
# With the service_role key, the class that may fill the whole in-flight
# cap of the route (AuraShedding): 8 anonymous clients at once would
# meet the anon share (7 of the suite's 10) and be shed, which is not
# what this test is about.
use constant SERVICE_KEY => 'ak_test_service_0123456789abcdef';
my ($clients, $n) = (8, 40);
my @lines = fan_out($clients, sub {
    my ($ua, $i) = @_;
    my ($ok, $crossed, $failed) = (0, 0, 0);
    for my $j (1 .. $n) {
        my $id = "inbox-$tag-$i-$j";
        my $res = $ua->get("$base/v1/functions/echo/c$i/r$j",
                           'X-Request-Id' => $id);
        if ($res->code != 200) {
            $failed++;
        }
        elsif (($res->header('X-Example-Request-Id') // '') eq $id
               && ($res->header('X-Example-Path') // '')
                  eq "/v1/functions/echo/c$i/r$j") {
            $ok++;
        }
        else {
            $crossed++;
        }
    }
    return "$ok $crossed $failed";
}, { apikey => SERVICE_KEY });
my ($ok, $crossed, $failed) = (0, 0, 0);
for (@lines) {
    my @f = split / /;
    $ok += $f[0] // 0;
    $crossed += $f[1] // 0;
    $failed += $f[2] // 0;
}
is($ok, $clients * $n, "$clients clients x $n requests: every reply is its "
                       . "request's own");
is($crossed, 0, 'no reply reached another request');
is($failed, 0, 'no request failed');

# --- late replies are dropped ------------------------------------------------
my $log_from = error_log_size();
my @late = map { "inbox-late-$tag-$_" } 1 .. 3;
my @slow = fan_out(3, sub {
    my ($ua, $i) = @_;
    my $res = $ua->get("$base/v1/test/slow/late$i",
                       'X-Request-Id' => $late[$i - 1],
                       'X-Example-Delay-Ms' => 1500);
    return $res->code;
}, { apikey => ANON_KEY });
is_deeply(\@slow, [504, 504, 504], 'three requests past their budget: 504');
# Meanwhile (the late replies land about 0.5 s after the 504s) and after:
# requests keep getting their own replies.
my $t0 = time;
my ($good, $total) = (0, 0);
while (time - $t0 < 1.5 || $total < 20) {
    my $id = new_reqid('inbox-after');
    my $res = GET('/v1/functions/echo/after', 'X-Request-Id' => $id);
    $total++;
    $good++ if $res->code == 200
               && ($res->header('X-Example-Request-Id') // '') eq $id;
    last if $total >= 500;
}
is($good, $total, "$total requests around the late replies: all answered "
                  . 'with their own reply');
ok(wait_until(5, sub { exec_count($late[0]) == 1 && exec_count($late[1]) == 1
                       && exec_count($late[2]) == 1 }),
   'the late requests did run once each (their replies were sent)');
my $log = error_log_since($log_from);
unlike($log, qr/exit signal|Segmentation fault|AddressSanitizer/,
       'no child died');
is(scalar(() = $log =~ /AURA00021/g), 3,
   'each timeout logged once (AURA00021)');
