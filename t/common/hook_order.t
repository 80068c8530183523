# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The real order of the hooks (DESIGN.md section 2: verify the order
# httpd runs, never the order a file reads in), read from mod_info's
# ?hooks view of the running test server.  (mod_perl is Apache::Test's:
# its hooks run REALLY_FIRST and decline for these requests.)  The
# behaviour this order implies is tested elsewhere: preflights without a
# key (t/data/cors.t), the flood cut before any key lookup
# (t/data/ratelimit.t), headers on every response (t/data/cors.t,
# t/common/errors.t).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);

Apache::TestRequest::module('unrelated');
my $res = GET('/server-info?hooks');
my $html = $res->content;

# phase title => [ "NN module.c", ... ] in run order.
my %hooks;
# mod_info writes each phase as <dt><strong>Name:</strong> then entries
# "&nbsp;&nbsp; NN <a href="?module.c">module.c</a>" up to </dt>.
while ($html =~ m{<dt><strong>([^<]+):</strong>(.*?)</dt>}sg) {
    my ($phase, $body) = ($1, $2);
    push @{ $hooks{$phase} }, "$1 $2"
        while $body =~ m{(-?\d+)\s+<a href="\?([^"]+)">}g;
}

sub order {
    my ($phase) = @_;
    return map { (split /\s+/)[1] } @{ $hooks{$phase} || [] };
}
sub pos_of {
    my ($phase, $module) = @_;
    my @m = order($phase);
    my ($i) = grep { $m[$_] eq $module } 0 .. $#m;
    return $i;
}
sub before {
    my ($phase, $first, $then, $name) = @_;
    my ($a, $b) = (pos_of($phase, $first), pos_of($phase, $then));
    ok(defined $a && defined $b && $a < $b, $name)
        or diag("$phase: " . join(', ', order($phase)));
}
# $module is registered at $order (APR_HOOK_FIRST 0, REALLY_FIRST -10).
sub at_order {
    my ($phase, $module, $order, $name) = @_;
    my ($entry) = grep { /\s\Q$module\E$/ } @{ $hooks{$phase} || [] };
    like($entry // '', qr/^0*\Q$order\E\s/, $name)
        or diag("$phase: " . join(', ', @{ $hooks{$phase} || [] }));
}
sub first_in { at_order($_[0], $_[1], 0, $_[2]) }

plan tests => 1 + 2 + 2 + 3 + 3 + 2 + 3 + 2;

is($res->code, 200, 'mod_info answers') or diag($html);

first_in('Post-Read Request', 'mod_aura_data.c',
         'post_read_request: the data plane sets up first (FIRST)');
first_in('Post-Read Request', 'mod_aura_mgmt.c',
         'post_read_request: and the management plane');
first_in('Quick Handler', 'mod_aura_data.c',
         'quick_handler: CORS preflights answered before anything (FIRST)');
first_in('Quick Handler', 'mod_aura_mgmt.c', 'quick_handler: management');
before('Translate Name', 'mod_aura_data.c', 'mod_proxy.c',
       'translate_name: routes claimed before mod_proxy');
before('Translate Name', 'mod_aura_mgmt.c', 'mod_proxy.c',
       'translate_name: management routes too');
first_in('Translate Name', 'mod_aura_data.c', 'translate_name: FIRST');
before('Check Access', 'mod_aura_data.c', 'mod_authz_core.c',
       'access_checker_ex: limiter and authentication before authz');
before('Check Access', 'mod_aura_mgmt.c', 'mod_authz_core.c',
       'access_checker_ex: management too');
first_in('Check Access', 'mod_aura_data.c', 'access_checker_ex: FIRST');
before('Check Access', 'mod_aura_common.c', 'mod_aura_data.c',
       'access_checker_ex: the incident controls before the data plane');
before('Check Access', 'mod_aura_common.c', 'mod_aura_mgmt.c',
       'access_checker_ex: and before the management plane');
before('Fixups', 'mod_aura_common.c', 'mod_proxy.c',
       'fixups: identity, breaker and the db router before mod_proxy');
first_in('Fixups', 'mod_aura_common.c', 'fixups: FIRST');
before('Pre-Config', 'mod_log_config.c', 'mod_aura_common.c',
       'pre_config: after mod_log_config, which makes the table of '
       . 'LogFormat items %{...}^au joins');
ok(defined pos_of('Transaction Logging', 'mod_aura_common.c'),
   'log_transaction: the traffic tables count what is logged');
before('Transaction Logging', 'mod_aura_common.c', 'mod_log_config.c',
       'log_transaction: the query string is redacted before '
       . 'mod_log_config prints it (t/security/leaks.t)');
