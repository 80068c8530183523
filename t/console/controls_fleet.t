# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The incident controls across two instances on one NATS (docs/
# console.md, "Incident controls"): A is the test server (console at
# /ops on the management plane), B a private httpd (console at /ops on
# its data plane, an audit log of its own).
#   - B, started after a control was set on A, learns it;
#   - a control set on A is applied on B (the delay is measured and
#     printed; the issue's figure is 1 s, asserted with a generous bound),
#     and so is its lift; one set on B is applied on A;
#   - one set on A while NATS is down reaches B once NATS is back;
#   - B's actions are written once each to B's audit log, refused ones
#     included, A's none; aura-audit-verify accepts the log;
#   - B keeps a control (set while NATS is down, so nobody can teach it
#     back) across many graceful restarts (the number and the time they
#     took are printed).
#
# On the code before: /ops/api/controls does not exist (404) and no
# control reaches B: every test fails.
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
use Aura::Test qw(t_dir wait_until private_httpd nats_stop nats_start
                  json_body ANON_KEY);

my $GRACEFULS = $ENV{AURA_TEST_GRACEFULS} || 100;

plan tests => 29;

my $cfg = Apache::Test::config();
my $a_data = "http://127.0.0.1:$cfg->{vhosts}{aura_data}{port}";
my $a_mgmt = "http://127.0.0.1:$cfg->{vhosts}{aura_mgmt}{port}";
my $ua = LWP::UserAgent->new(timeout => 30);
my $ops = 'Basic ' . encode_base64('ops:ops-secret', '');
my $mods = '/usr/lib/apache2/modules';
my $dir = tempdir(CLEANUP => !$ENV{AURA_TEST_KEEP});
my $log = "$dir/audit.log";
my $verify = t_dir() . '/../build/aura-audit-verify';
my $htpasswd = t_dir() . '/conf/operators.htpasswd';

sub req {
    my ($method, $url, $body, %h) = @_;
    my $r = HTTP::Request->new($method => $url);
    $r->header($_ => $h{$_}) for keys %h;
    $r->content($body) if defined $body;
    return $ua->request($r);
}
sub ctl {
    my ($base, $method, $path, $doc) = @_;
    return req($method, "$base/ops/api/controls$path",
               ref $doc ? encode_json($doc) : $doc,
               Authorization => $ops, 'X-Aura-CSRF' => 1,
               'Content-Type' => 'application/json');
}
sub status_of { req(GET => $_[0])->code }
sub problem_of { (json_body(req(GET => $_[0])) || {})->{type} // '' }

# --- A: a control before B exists -------------------------------------------
my $late = decode_json(ctl($a_mgmt, POST => '', {
    kind => 'maintenance', target => '/v1/functions/late/', ttl => '10m' })
    ->content);

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
AuraAuditLog $log gw-b
AuraRateLimitZone default rate=100000r/s burst=100000
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    <Location "/v1/functions/">
        AuraService functions nats:aura.functions
    </Location>
    <Location "/health">
        SetHandler aura-health
        AuraHealthDetail On
        AuraPublic On
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
my $bi = "http://127.0.0.1:$port";
system("$httpd -k start") == 0 or die 'httpd B did not start';
END {
    local $?;
    system("$httpd -k stop") if -s "$dir/httpd.pid";
}
ok(wait_until(30, sub { status_of("$bi/health") == 200 }), 'B is up');
my $t0 = time;
ok(wait_until(20, sub { problem_of("$bi/v1/functions/late/x")
                        eq '/problems/maintenance' }),
   'B, started later, learnt the control in force');
diag(sprintf('B learnt it %.2f s after answering /health', time - $t0));

# --- propagation A -> B, measured ---------------------------------------------
my @delays;
for my $i (1 .. 5) {
    my $path = "/v1/functions/prop$i/";
    my $start = time;
    my $c = decode_json(ctl($a_mgmt, POST => '', {
        kind => 'maintenance', target => $path, ttl => '5m' })->content);
    my $seen;
    while (time - $start < 10) {
        if (problem_of("$bi${path}x") eq '/problems/maintenance') {
            $seen = time - $start;
            last;
        }
        sleep 0.01;
    }
    push @delays, $seen // 99;
    ctl($a_mgmt, DELETE => "/$c->{id}");
}
my @sorted = sort { $a <=> $b } @delays;
diag(sprintf('POST on A until applied on B: min %.3f s, median %.3f s, '
             . 'max %.3f s (%s)', $sorted[0], $sorted[2], $sorted[-1],
             join(' ', map { sprintf '%.3f', $_ } @delays)));
cmp_ok($sorted[-1], '<', 5, 'every control reached B (generous bound)');
is(scalar(grep { $_ < 1 } @delays), 5, 'each within the issue\'s 1 s');

# The lift reaches B too.
ctl($a_mgmt, DELETE => "/$late->{id}");
ok(wait_until(10, sub { status_of("$bi/v1/functions/late/x") == 401 }),
   'the lift on A reached B');

# --- actions on B: applied on A, audited on B only ----------------------------
my $r = ctl($bi, POST => '', { kind => 'maintenance',
                              target => '/v1/functions/fromb/', ttl => '5m',
                              reason => 'from B' });
is($r->code, 201, 'B: set');
my $fromb = decode_json($r->content);
ok(wait_until(10, sub { problem_of("$a_data/v1/functions/fromb/x")
                        eq '/problems/maintenance' }),
   'a control set on B is applied on A');
is(ctl($bi, POST => '', { kind => 'maintenance', target => '/v1/functions/fromb/',
                         ttl => '6m' })->code, 200, 'B: update');
is(ctl($bi, POST => '', { kind => 'block', target => 'addr:1.2.3.4/40',
                         ttl => 60 })->code, 400, 'B: a refused one');
is(ctl($bi, DELETE => "/$fromb->{id}")->code, 200, 'B: lift');
is(ctl($bi, DELETE => "/$fromb->{id}")->code, 200, 'B: lift twice');
ok(wait_until(10, sub { status_of("$a_data/v1/functions/fromb/x") == 401 }),
   'the lift on B reached A');

sub records {
    my @r;
    open(my $fh, '<', $log) or return @r;
    @r = map { chomp; decode_json($_) } <$fh>;
    close $fh;
    return @r;
}
my @recs = records();
is_deeply([map { $_->{action} } @recs],
          [qw(control.maintenance.set control.maintenance.update
              control.block.set control.maintenance.lift
              control.maintenance.lift)],
          'one record per action on B, none for what A did');
is_deeply([map { $_->{actor} } @recs], [('operator:ops') x 5],
          'the operator is the actor');
is_deeply([map { $_->{outcome} } @recs],
          [qw(executed executed refused executed executed)], 'outcomes');
is_deeply([map { $_->{status} } @recs], [201, 200, 400, 200, 200],
          'statuses');
is($recs[0]{target}, 'maintenance /v1/functions/fromb/', 'the target');
is(system("$verify $log >/dev/null 2>&1") >> 8, 0,
   'aura-audit-verify accepts the log');

# --- NATS down: set on A (learnt by B once NATS is back), and on B
# alone, kept across B's gracefuls (nobody else holds it, so only B's
# shared segment can keep it).  One outage: nats_stop() waits for the
# server it started last to be gone, which a server this test started
# (its zombie) never is.
nats_stop();
$r = ctl($a_mgmt, POST => '', { kind => 'maintenance',
                                target => '/v1/functions/away/', ttl => '5m' });
is($r->code, 201, 'set on A while NATS is down');
my $away = decode_json($r->content);
ok(!$away->{fleet}, 'the answer says it did not reach the fleet');
is(status_of("$bi/v1/functions/away/x"), 401, 'B does not have it');
$r = ctl($bi, POST => '', { kind => 'maintenance',
                            target => '/v1/functions/kept/', ttl => '30m' });
is($r->code, 201, 'set on B alone');
my $kept = decode_json($r->content);
sub health { json_body(req(GET => "$bi/health")) || {} }
my $h0 = health();
open(my $fh, '<', "$dir/httpd.pid") or die "B's pid: $!";
chomp(my $bpid = <$fh>);
close $fh;
my ($done, $all_kept) = (0, 1);
$t0 = time;
for my $i (1 .. $GRACEFULS) {
    my $gen = health()->{generation} // -1;
    kill('USR1', $bpid) or last;
    wait_until(30, sub { (health()->{generation} // -1) > $gen }) or last;
    $done++;
    $all_kept = 0
        if problem_of("$bi/v1/functions/kept/x") ne '/problems/maintenance';
}
my $took = time - $t0;
diag(sprintf('%d gracefuls of B took %.1f s (%.2f s each)', $done, $took,
             $done ? $took / $done : 0));
is($done, $GRACEFULS, "$GRACEFULS gracefuls done");
ok($all_kept, 'the control held after every one of them');
is(health()->{shm}{id}, $h0->{shm}{id}, 'the same shared segment');

nats_start();
$t0 = time;
ok(wait_until(30, sub { problem_of("$bi/v1/functions/away/x")
                        eq '/problems/maintenance' }),
   'B learnt the control set on A once NATS was back');
diag(sprintf('learnt %.2f s after NATS was started again', time - $t0));
ok(wait_until(30, sub { problem_of("$a_data/v1/functions/kept/x")
                        eq '/problems/maintenance' }),
   'and A the one set on B');
is(ctl($a_mgmt, DELETE => "/$away->{id}")->code, 200, 'lifted on A');
is(ctl($bi, DELETE => "/$kept->{id}")->code, 200, 'lifted on B');
