# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The gateway on a secured NATS bus (issue #18): nats-server in operator
# mode (a memory resolver, JWTs and nkeys made at test time by
# t/services/aura_nkeygen) with TLS that verifies clients (a CA and
# certificates made at test time by openssl).  The gateway connects with
# a CA file, a client certificate and a creds file, its user allowed to
# publish only to the service subjects and to subscribe only to its own
# inbox prefix, and requests pass.  A wrong CA, a wrong seed and a
# revoked user each give 503 problem+json at once and AURA01320 saying
# which.  A second server without operator mode lists a user by nkey:
# AuraNATSNKeySeed passes there.  Config errors stop `httpd -t`.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use LWP::UserAgent;
use Time::HiRes qw(time);
use Aura::Test qw(t_dir private_httpd wait_until problem_ok json_body);
use Aura::SecureNats qw(pki nkey operator_jwt account_jwt user_jwt creds
                        nats_server stop_server);

plan tests => 4 + 3 + 3 * 7 + 2 + 2 + 5 * 2;

my $d = tempdir(CLEANUP => 1);
chmod 0755, $d;     # httpd's parent reads the files as root; the test
                    # services run as this user
my $pki = pki($d);

# --- operator, accounts, users --------------------------------------------
my ($os, $op) = nkey('O');
my ($as, $ap) = nkey('A');          # the gateway's and the services'
my ($bs, $bp) = nkey('A');          # an account that revoked a user
my ($gs, $gp) = nkey('U');          # the gateway
my ($ss, $sp) = nkey('U');          # the service
my ($ws)      = nkey('U');          # a seed that is not the gateway's
my ($rs, $rp) = nkey('U');          # revoked

my $inv = 'aura.keys.invalidate';
my $gw_jwt = user_jwt($as, $ap, $gp, pub => ['aura.sec.>', $inv],
                      sub => ['_INBOX_gw.>', $inv]);
creds("$d/gateway.creds", $gw_jwt, $gs);
creds("$d/wrongseed.creds", $gw_jwt, $ws);
creds("$d/service.creds",
      user_jwt($as, $ap, $sp, sub => ['aura.sec.>'], resp => [-1, 3600]),
      $ss);
creds("$d/revoked.creds", user_jwt($bs, $bp, $rp), $rs);
write_file("$d/op.jwt", operator_jwt($os, $op));
my $acc_a = account_jwt($os, $op, $ap);
my $acc_b = account_jwt($os, $op, $bp, revocations => { $rp => int(time) + 60 });

my $tls = "tls { cert_file: \"$pki->{server_cert}\", "
          . "key_file: \"$pki->{server_key}\", ca_file: \"$pki->{ca}\", "
          . "verify: true, timeout: 2 }";
my $nats = nats_server(dir => $d, name => 'secure', body => <<"CONF");
operator: "$d/op.jwt"
resolver: MEMORY
resolver_preload: { $ap: "$acc_a", $bp: "$acc_b" }
$tls
CONF
my $url = "tls://127.0.0.1:$nats->{port}";

# A plain server listing the gateway by nkey (AuraNATSNKeySeed), the
# service by user and password.
write_file("$d/gateway.nk", "$gs\n");
my $plain = nats_server(dir => $d, name => 'nkey', body => <<"CONF");
authorization { users = [
  { nkey: "$gp", permissions: { publish: ["aura.sec.>", "$inv"],
                                subscribe: ["_INBOX_gw.>", "$inv"] } },
  { user: "svc", password: "svcpass" }
] }
CONF

# --- the responders ---------------------------------------------------------
my @services;
sub service {
    my (@args) = @_;
    my $pid = fork();
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        open(STDOUT, '>', '/dev/null');
        open(STDERR, '>', "$d/service.$$.err");
        exec(t_dir() . '/services/aura_example_service', @args,
             '-c', 'aura.sec.count', 'aura.sec.test') or POSIX::_exit(127);
    }
    push @services, $pid;
}
service('-s', $url, '-A', $pki->{ca}, '-E', $pki->{client_cert},
        '-K', $pki->{client_key}, '-C', "$d/service.creds");
service('-s', "nats://svc:svcpass\@127.0.0.1:$plain->{port}");

# --- the gateways -----------------------------------------------------------
my $route = <<'ROUTE';
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    <Location "/v1/sec/">
        AuraService functions nats:aura.sec.test
        AuraPublic On
        AuraTimeout 3s
    </Location>
    # Outside the gateway user's publish permission.
    <Location "/v1/denied/">
        AuraService functions nats:aura.denied.test
        AuraPublic On
        AuraTimeout 1s
    </Location>
</VirtualHost>
ROUTE
my $client = "AuraNATSCertificate $pki->{client_cert}\n"
             . "AuraNATSCertificateKey $pki->{client_key}\n";
my %gw;
sub gateway {
    my ($name, $conf) = @_;
    my $dir = "$d/httpd-$name";
    mkdir $dir or die "$dir: $!";
    my ($port, $httpd) = private_httpd(dir => $dir, children => 1,
        body => "AuraNATSReconnectWait 100ms\n$conf$route");
    system("$httpd -k start") == 0 or die "httpd $name did not start";
    $gw{$name} = { port => $port, httpd => $httpd, dir => $dir };
}
gateway('good', "AuraNATSServers $url\nAuraNATSCAFile $pki->{ca}\n$client"
        . "AuraNATSServerName localhost\n"
        . "AuraNATSCredentials $d/gateway.creds\n"
        . "AuraNATSInboxPrefix _INBOX_gw\n");
gateway('wrongca', "AuraNATSServers $url\nAuraNATSCAFile $pki->{other_ca}\n"
        . "${client}AuraNATSCredentials $d/gateway.creds\n");
gateway('wrongseed', "AuraNATSServers $url\nAuraNATSCAFile $pki->{ca}\n"
        . "${client}AuraNATSCredentials $d/wrongseed.creds\n"
        . "AuraNATSInboxPrefix _INBOX_gw\n");
gateway('revoked', "AuraNATSServers $url\nAuraNATSCAFile $pki->{ca}\n"
        . "${client}AuraNATSCredentials $d/revoked.creds\n");
# Credentials that expire a few seconds from now, while connected.
my $expiring_at = int(time) + 10;
creds("$d/expiring.creds",
      user_jwt($as, $ap, $gp, pub => ['aura.sec.>', $inv],
               sub => ['_INBOX_gw.>', $inv], exp => $expiring_at), $gs);
gateway('expiring', "AuraNATSServers $url\nAuraNATSCAFile $pki->{ca}\n"
        . "${client}AuraNATSCredentials $d/expiring.creds\n"
        . "AuraNATSInboxPrefix _INBOX_gw\n");
gateway('nkey', "AuraNATSServers nats://127.0.0.1:$plain->{port}\n"
        . "AuraNATSNKeySeed $d/gateway.nk\nAuraNATSInboxPrefix _INBOX_gw\n");

END {
    local $?;   # the test's exit status, not the last waitpid's
    for my $g (values %gw) {
        system("$g->{httpd} -k stop") if -s "$g->{dir}/httpd.pid";
    }
    for my $pid (@services) { kill 'TERM', $pid; waitpid($pid, 0) }
    stop_server($nats);
    stop_server($plain);
}

my $ua = LWP::UserAgent->new(timeout => 10);
sub get {
    my ($name) = @_;
    return $ua->get("http://127.0.0.1:$gw{$name}{port}/v1/sec/x",
                    'X-Example-Status' => 200);
}

# --- requests pass ----------------------------------------------------------
my $res;
ok(wait_until(15, sub { ($res = get('good'))->code == 200 }),
   'TLS + client certificate + creds: the request passes')
    or diag($res->status_line, ' ', $res->decoded_content,
            slurp("$gw{good}{dir}/error.log"));
my $n = grep { get('good')->code == 200 } 1 .. 20;
is($n, 20, 'and keeps passing (20 of 20), replies on the _INBOX_gw prefix');
ok(wait_until(15, sub { ($res = get('nkey'))->code == 200 }),
   'AuraNATSNKeySeed: the request passes')
    or diag($res->status_line, slurp("$gw{nkey}{dir}/error.log"));
unlike(slurp("$gw{good}{dir}/error.log") . slurp("$gw{nkey}{dir}/error.log"),
       qr/\Q$gs\E|\Q$ss\E|PRIVATE KEY|\Q$gw_jwt\E/,
       'no seed, key or JWT in the error logs');

# --- credentials that expire while connected --------------------------------
ok(wait_until(5, sub { get('expiring')->code == 200 }) && time < $expiring_at,
   'expiring credentials: the request passes before they expire');
my $elog = "$gw{expiring}{dir}/error.log";
ok(wait_until(15, sub { get('expiring')->code == 503 }),
   'once they expired: 503');
ok(wait_until(5, sub { slurp($elog) =~ /AURA01320: NATS connection refused: credentials expired/ }),
   'the log says: credentials expired') or diag(slurp($elog));
note((slurp($elog) =~ /(AURA01320[^\n]*)/)[0] // '');

# --- refused: 503 at once and the reason logged ----------------------------
for my $case (
    [ 'wrongca',   qr/AURA01320: NATS connection refused: TLS handshake failed/ ],
    [ 'wrongseed', qr/AURA01320: NATS connection refused: authorization violation/ ],
    [ 'revoked',   qr/AURA01320: NATS connection refused: (authorization violation|credentials revoked)/ ],
) {
    my ($name, $re) = @$case;
    my $log = "$gw{$name}{dir}/error.log";
    my $t0 = time;
    $res = get($name);
    my $took = time - $t0;
    problem_ok($res, 503, 'upstream-error', $name);
    ok($took < 1, sprintf('%s: answered in %.3f s, not at the budget',
                          $name, $took));
    ok(wait_until(10, sub { get($name); slurp($log) =~ $re }),
       "$name: the log says which") or diag(slurp($log));
    note((slurp($log) =~ /(AURA01320[^\n]*)/)[0] // '');
    unlike(slurp($log), qr/\Q$gs\E|\Q$ws\E|\Q$rs\E|PRIVATE KEY/,
           "$name: no secret in the log");
}

# --- a forbidden publish: nats-server refuses it, the log says so ----------
my $t0 = time;
$res = $ua->get("http://127.0.0.1:$gw{good}{port}/v1/denied/x");
isnt($res->code, 200, 'a subject outside the publish permission fails');
note(sprintf('forbidden publish: %s after %.3f s: %s', $res->code, time - $t0,
             $res->decoded_content));
ok(wait_until(5, sub {
       slurp("$gw{good}{dir}/error.log")
           =~ /AURA01320: NATS connection refused: permissions violation/
   }), 'the log says: permissions violation')
    or diag(slurp("$gw{good}{dir}/error.log"));

# --- config errors stop httpd -t -------------------------------------------
my $httpd_bin = Apache::Test::vars('httpd');
sub conf_test {
    my ($name, $conf) = @_;
    my $dir = "$d/conf-$name";
    mkdir $dir or die "$dir: $!";
    my (undef, $httpd) = private_httpd(dir => $dir, children => 1,
                                       body => $conf);
    my $out = `$httpd -t 2>&1`;
    my $rc = $? >> 8;
    $? = 0;     # not the test's exit status
    return ($rc, $out);
}
ok(-x $httpd_bin, 'httpd binary');
my ($rc, $out) = conf_test('good', "AuraNATSCAFile $pki->{ca}\n$client"
                           . "AuraNATSCredentials $d/gateway.creds\n");
is($rc, 0, 'the good configuration passes -t') or diag($out);
for my $c (
    [ 'missing', "AuraNATSCAFile $d/nope.pem\n",
      qr/AuraNATSCAFile: cannot read '\Q$d\E\/nope\.pem'/ ],
    [ 'mismatch', "AuraNATSCertificate $pki->{client_cert}\n"
                  . "AuraNATSCertificateKey $pki->{server_key}\n",
      qr/AURA01322: AuraNATSCertificate '\Q$pki->{client_cert}\E' does not match AuraNATSCertificateKey '\Q$pki->{server_key}\E'/ ],
    [ 'both', "AuraNATSCredentials $d/gateway.creds\n"
              . "AuraNATSNKeySeed $d/gateway.nk\n",
      qr/AuraNATSNKeySeed: AuraNATSCredentials and AuraNATSNKeySeed exclude each other/ ],
    [ 'notcreds', "AuraNATSCredentials $pki->{ca}\n",
      qr/AuraNATSCredentials: '\Q$pki->{ca}\E' no user JWT/ ],
    [ 'badseed', "AuraNATSNKeySeed $d/op.jwt\n",
      qr/AuraNATSNKeySeed: '\Q$d\E\/op\.jwt' the seed is not a valid nkey seed/ ],
) {
    my ($name, $conf, $re) = @$c;
    ($rc, $out) = conf_test($name, $conf);
    isnt($rc, 0, "$name: httpd -t fails");
    like($out, $re, "$name: names the directive and the file") or diag($out);
}

sub write_file {
    my ($file, $text) = @_;
    open(my $fh, '>', $file) or die "$file: $!";
    print $fh $text;
    close $fh;
}

sub slurp {
    my ($file) = @_;
    open(my $fh, '<', $file) or return '';
    local $/;
    my $t = <$fh>;
    return defined $t ? $t : '';
}
