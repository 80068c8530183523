# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The operator console's fleet view (issue #31 point 2; docs/console.md):
# three instances on one NATS, each publishing a snapshot every 200 ms
# (AuraFleet On): the test server (t-main) and two private ones
# (t-priv-1, t-priv-2, the second with the console mounted too).
# - every instance's fleet API lists all three, live;
# - a breaker opened on t-priv-1 (storage routed to a closed port,
#   threshold 2) shows on t-main's and t-priv-2's API and page, with the
#   change in "recent changes": the delay from the open to t-main's API
#   showing it is measured and printed (asserted against a generous
#   bound only);
# - forged snapshots on the subject (garbage, 64 KiB, a subject naming
#   another instance, markup in the names) are dropped or shown escaped,
#   and the server keeps answering;
# - t-priv-2 stopped becomes stale, then gone (AuraFleetGoneAfter 3s),
#   and started again is live again;
# - the page and the API need the operator (401 without Basic).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempdir);
use IO::Socket::INET;
use JSON::PP qw(decode_json encode_json);
use LWP::UserAgent;
use MIME::Base64 qw(encode_base64);
use Time::HiRes qw(time);
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Aura::Test qw(private_httpd wait_until free_ports);

plan tests => 6 + 12 + 3 + 12 + 7 + 3 + 4;

my $ANON = 'ak_test_anon_0123456789abcdef';
my $ops = 'Basic ' . encode_base64('ops:ops-secret', '');
my ($dead_http) = free_ports(1);
my $mods = '/usr/lib/apache2/modules';

Apache::TestRequest::module('aura_mgmt');
my $main = 'http://' . Apache::TestRequest::hostport();
my $ua = LWP::UserAgent->new(keep_alive => 1, timeout => 30);

sub instance_conf {
    my ($name, $extra) = @_;
    return <<"CONF";
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraDBParams "$ENV{AURA_TEST_PG_CONNINFO}"
AuraFleet On
AuraInstanceName $name
AuraFleetInterval 200ms
AuraFleetGoneAfter 3s
AuraBreaker storage threshold=2 cooldown=600s
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    <Location "/health">
        SetHandler aura-health
        AuraPublic On
        AuraRateLimit off
    </Location>
    <Location "/v1/storage/">
        AuraService storage http://127.0.0.1:$dead_http
        AuraRateLimit off
    </Location>
$extra
</VirtualHost>
CONF
}

my @dirs = (tempdir(CLEANUP => 1), tempdir(CLEANUP => 1));
system('htpasswd', '-bcB', "$dirs[1]/ops.htpasswd", 'ops', 'ops-secret') == 0
    or die 'htpasswd failed';
my ($p1, $httpd1) = private_httpd(dir => $dirs[0], children => 2,
                                  body => instance_conf('t-priv-1', ''));
my ($p2, $httpd2) = private_httpd(dir => $dirs[1], children => 2,
                                  body => <<"MODS" . instance_conf('t-priv-2', <<"OPS"));
LoadModule auth_basic_module $mods/mod_auth_basic.so
LoadModule authn_core_module $mods/mod_authn_core.so
LoadModule authn_file_module $mods/mod_authn_file.so
LoadModule authz_user_module $mods/mod_authz_user.so
MODS
    <Location "/ops">
        SetHandler aura-console
        AuraPublic On
        AuraRateLimit off
        AuthType Basic
        AuthName "mod_aura operators"
        AuthBasicProvider file
        AuthUserFile $dirs[1]/ops.htpasswd
        Require user ops
    </Location>
OPS
for my $h ($httpd1, $httpd2) {
    system("$h -k start") == 0 or die "$h did not start";
}
END {
    for my $i (0, 1) {
        system(($httpd1, $httpd2)[$i] . ' -k stop')
            if -s "$dirs[$i]/httpd.pid";
    }
}

sub fleet {
    my ($base) = @_;
    my $res = $ua->get("$base/ops/api/fleet", Authorization => $ops);
    return $res->is_success ? (eval { decode_json($res->content) } || {})
                            : {};
}

sub instance {
    my ($f, $name) = @_;
    my ($i) = grep { $_->{name} eq $name } @{ $f->{instances} || [] };
    return $i || {};
}

sub states {
    my ($base) = @_;
    my $f = fleet($base);
    return { map { $_->{name} => $_->{state} } @{ $f->{instances} || [] } };
}

my @names = qw(t-main t-priv-1 t-priv-2);
my $all_live = sub {
    my ($base) = @_;
    my $s = states($base);
    return !grep { ($s->{$_} // '') ne 'live' } @names;
};

# ---- three instances, all live, seen from two of them ------------------
ok(wait_until(30, sub { $all_live->($main) }),
   't-main lists t-main, t-priv-1, t-priv-2, all live');
ok(wait_until(30, sub { $all_live->("http://127.0.0.1:$p2") }),
   't-priv-2 lists the same three, live');
my $f = fleet($main);
is($f->{instance}, 't-main', 'the API names the instance serving it');
ok($f->{enabled}, 'the fleet view is on');
my $p1i = instance($f, 't-priv-1');
like($p1i->{nats_server} // '', qr{^nats://127\.0\.0\.1:\d+ \S+$},
     "t-priv-1's NATS node is shown");
is(($p1i->{snapshot} || {})->{instance}, 't-priv-1',
   'its latest snapshot is in the API');
diag(sprintf("snapshot sizes (JSON bytes): t-main %d, t-priv-1 %d "
             . "(bound 16384)", map { length(JSON::PP->new->canonical
                  ->encode(instance($f, $_)->{snapshot} || {})) }
             qw(t-main t-priv-1)));

# ---- a breaker opens on t-priv-1 ---------------------------------------
is(instance($f, 't-priv-1')->{breakers}{storage}, 'closed',
   "t-priv-1's storage breaker is closed to begin with");
for my $i (1, 2) {
    my $r = $ua->get("http://127.0.0.1:$p1/v1/storage/x", apikey => $ANON);
    like($r->code . ' ' . $r->content, qr/^503 .*upstream-error/s,
         "storage request $i on t-priv-1: 503 upstream-error");
}
my $opened = time;
like($ua->get("http://127.0.0.1:$p1/v1/storage/x", apikey => $ANON)->content,
     qr/breaker-open/, "t-priv-1's storage breaker is open");
my $shown = wait_until(30, sub {
    (instance(fleet($main), 't-priv-1')->{breakers}{storage} // '') eq 'open'
});
my $delay = time - $opened;
ok($shown, "t-main's API shows t-priv-1's storage breaker open");
diag(sprintf('breaker opened on t-priv-1, shown by t-main\'s fleet API '
             . 'after %.0f ms (interval 200 ms; the issue asks for 2 s)',
             $delay * 1000));
ok($delay < 10, 'within a generous bound (10 s)');
ok(wait_until(30, sub {
       (instance(fleet("http://127.0.0.1:$p2"), 't-priv-1')->{breakers}
            {storage} // '') eq 'open' }),
   "t-priv-2's API shows it too");
$f = fleet($main);
is(instance($f, 't-main')->{breakers}{storage}, 'closed',
   "t-main's own storage breaker stays closed");
my ($ev) = grep { $_->{kind} eq 'breaker' && $_->{instance} eq 't-priv-1'
                  && $_->{what} eq 'storage' && $_->{to} eq 'open' }
               @{ $f->{events} || [] };
ok($ev, 'recent changes: t-priv-1 breaker storage closed -> open');
my $page = $ua->get("$main/ops/", Authorization => $ops)->content;
like($page,
     qr{<article class="card live" data-instance="t-priv-1"[^>]*>.*?<tr data-service="storage"><td>storage</td><td class="brk-open">open</td>}s,
     "t-main's page: t-priv-1's card has storage open");
like($page, qr{<dt>Generation</dt><dd>\d+ \(seq \d+\)</dd>},
     "the page's numbers are numbers");
like($page, qr{<dt>Limiter refusals</dt><dd>per address \d+, per actor \d+; zones: [^<]*default \d+ \(\d+/\d+ used\)},
     "the zones' refusals and fill");

# ---- a graceful restart of t-priv-1: one publisher, its sequence goes on --
my $before_g = instance(fleet($main), 't-priv-1');
system("$httpd1 -k graceful") == 0 or die 'graceful t-priv-1';
ok(wait_until(30, sub {
       my $i = instance(fleet($main), 't-priv-1');
       (($i->{snapshot} || {})->{generation} // 0)
           > (($before_g->{snapshot} || {})->{generation} // 0)
       && ($i->{state} // '') eq 'live' }),
   "t-priv-1's next generation publishes, live");
my $after_g = instance(fleet($main), 't-priv-1');
ok($after_g->{epoch} eq $before_g->{epoch}
   && $after_g->{seq} > $before_g->{seq},
   "same epoch, its sequence goes on ($before_g->{seq} -> "
   . "$after_g->{seq}): the shared segment kept it");
ok(!grep({ $_->{instance} eq 't-priv-1' && $_->{kind} eq 'restarted' }
         @{ fleet($main)->{events} || [] })
   && $after_g->{breakers}{storage} eq 'open',
   'no "restarted" change, and the open breaker is still open');

# ---- forged snapshots ------------------------------------------------------
# Straight to NATS, as anyone on an unsecured bus could.
sub nats_pub {
    my (@msgs) = @_;
    my ($host, $port) = $ENV{AURA_TEST_NATS_URL} =~ m{//([^:/]+):(\d+)}
        or die 'AURA_TEST_NATS_URL';
    my $s = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port,
                                  Proto => 'tcp', Timeout => 10)
        or die "nats connect: $!";
    my $info = <$s>;
    print $s qq(CONNECT {"verbose":false,"pedantic":false}\r\n);
    while (my ($subj, $data) = splice(@msgs, 0, 2)) {
        print $s 'PUB ' . $subj . ' ' . length($data) . "\r\n$data\r\n";
    }
    print $s "PING\r\n";
    while (my $line = <$s>) {
        last if $line =~ /^PONG/;
        die "nats: $line" if $line =~ /^-ERR/;
    }
    close $s;
}

my $hostile = '<script>alert(1)</script><img src=x onerror=alert(2)>';
sub token {
    (my $t = $_[0]) =~ s/([^A-Za-z0-9_-])/sprintf('%%%02X', ord $1)/ge;
    return $t;
}
sub forged {
    my ($name, %more) = @_;
    return encode_json({ fleet => 1, instance => $name, epoch => 'abc',
                         seq => 1, sent => int(time * 1e6),
                         interval_ms => 200, %more });
}
my $before = fleet($main)->{counters}{malformed} // 0;
my $big = forged('t-big', pad => 'x' x 65536);
nats_pub('aura.fleet.snapshot.t-junk' => 'not json at all {',
         'aura.fleet.snapshot.t-big' => $big,
         'aura.fleet.snapshot.t-other' => forged('t-main'),
         'aura.fleet.snapshot.t-ctl' => forged("t-\x07ctl"),
         'aura.fleet.snapshot.' . token($hostile) => forged($hostile,
             breakers => { '<i>evil</i>' => { state => 'open' } },
             nats_server => '<b>node</b>'));
ok(wait_until(20, sub {
       (fleet($main)->{counters}{malformed} // 0) >= $before + 4 }),
   'garbage, 64 KiB, a subject naming another instance and a control '
   . 'character: dropped and counted');
ok(wait_until(20, sub { instance(fleet($main), $hostile)->{name} }),
   'the snapshot with markup in its names is kept, as data');
$f = fleet($main);
ok(!grep({ $_->{name} =~ /^t-(?:junk|big|ctl|other)/ }
         @{ $f->{instances} }), 'none of the dropped ones is listed');
is(instance($f, 't-main')->{epoch} ne 'abc' ? 'own' : 'forged', 'own',
   "t-main's row was not overwritten through another instance's subject");
$page = $ua->get("$main/ops/", Authorization => $ops)->content;
unlike($page, qr{<script>alert|<img src=x|<i>evil|<b>node}, 'no markup '
       . 'of theirs on the page');
like($page, qr{&lt;script&gt;alert\(1\)&lt;/script&gt;&lt;img src=x},
     'the name is shown, escaped');
like($page, qr{&lt;i&gt;evil&lt;/i&gt;}, 'the breaker name, escaped');
my @scripts = $page =~ m{<script\b[^>]*>}g;
is(scalar(@scripts), 1, 'the one script tag is the page\'s own');
like($scripts[0], qr{src="/ops/assets/fleet\.js"}, '... fleet.js');
is($ua->get("$main/health")->code, 200, 't-main still answers');
is($ua->get("http://127.0.0.1:$p1/health")->code, 200,
   't-priv-1 still answers');
like($ua->get("$main/ops/api/fleet", Authorization => $ops)->content,
     qr{\\u003c|<script>}, 'the API carries the name as JSON data');

# ---- an instance stops: stale, then gone; back: live -------------------
system("$httpd2 -k stop") == 0 or die 'stop t-priv-2';
wait_until(30, sub { !-s "$dirs[1]/httpd.pid" });
ok(wait_until(20, sub { (states($main)->{'t-priv-2'} // '') eq 'stale' }),
   't-priv-2 stopped: stale');
ok(wait_until(20, sub { (states($main)->{'t-priv-2'} // '') eq 'gone' }),
   '... then gone (AuraFleetGoneAfter 3s)');
# The API's state is computed when asked; the change is recorded by
# t-main's next sweep (every interval): waited for, not assumed.
my %kinds;
ok(wait_until(10, sub {
       %kinds = map { $_->{kind} => 1 }
                grep { $_->{instance} eq 't-priv-2' }
                @{ fleet($main)->{events} || [] };
       $kinds{stale} && $kinds{gone} }),
   'recent changes: t-priv-2 stale, gone');
like($ua->get("$main/ops/", Authorization => $ops)->content,
     qr{<article class="card gone" data-instance="t-priv-2"},
     'the page shows it gone');
system("$httpd2 -k start") == 0 or die 'start t-priv-2';
ok(wait_until(30, sub { (states($main)->{'t-priv-2'} // '') eq 'live' }),
   't-priv-2 started again: live');
$f = fleet($main);
%kinds = map { $_->{kind} => 1 }
         grep { $_->{instance} eq 't-priv-2' } @{ $f->{events} };
ok($kinds{back}, 'recent changes: t-priv-2 back');
ok($kinds{restarted}, '... restarted (its state started afresh)');

# ---- only the operator ------------------------------------------------------
is($ua->get("$main/ops/")->code, 401, 'the page without Basic: 401');
is($ua->get("$main/ops/api/fleet")->code, 401, 'the API without Basic: 401');
is($ua->get("http://127.0.0.1:$p2/ops/api/fleet")->code, 401,
   "t-priv-2's API without Basic: 401");

# ---- the parts ----------------------------------------------------------------
my $css = $ua->get("$main/ops/assets/console.css", Authorization => $ops);
like($css->header('Content-Type') // '', qr{^text/css}, 'console.css');
my $js = $ua->get("$main/ops/assets/fleet.js", Authorization => $ops);
like($js->header('Content-Type') // '', qr{^text/javascript}, 'fleet.js');
like($js->header('Content-Security-Policy') // '', qr{script-src 'self'},
     'served under the console CSP');
like($ua->get("$main/ops", Authorization => $ops)->content,
     qr{Signed in as ops }, 'the page names the operator');
