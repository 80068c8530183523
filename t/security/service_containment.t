# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Only the service that received a request can answer it (issue #29,
# point 1).  A real nats-server in operator mode with the permissions
# docs/nats.md gives (the gateway subscribes to its own inbox prefix
# only; each service subscribes to its subject and may publish only on
# the reply subjects of what it received: allow_responses), the example
# service as the victim of three services on both planes (storage and
# auth on the data plane, control behind the console on the management
# plane), and t/services/aura_hostile_service as a compromised service.
#
# The hostile service first learns the reply subjects of 40 of its own
# requests, then, for 4 s while the victims are called from several
# clients, hits every subject it can derive from them with forged 200
# replies carrying a Set-Cookie, forged 503 replies, header-less
# messages, and bursts of 20 junk messages (a gateway inbox holds 16).
# Twice: as the documented user, and as a user with the permissions the
# previous docs gave (publish on the gateway's whole inbox prefix,
# subscribe to _INBOX.>), where only the tokens' unpredictability holds.
# Each time: zero forged answers, zero failed requests of the victims,
# every victim reply its own (its request id), and no breaker of a
# victim moved (state closed, no failure counted).
#
# On the code before (lanes, counters): the victims got 503s as their
# inboxes overflowed, both variants, and forged answers with the broad
# permissions (numbers in the commit message).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempdir);
use JSON::PP qw(decode_json);
use LWP::UserAgent;
use POSIX ();
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Time::HiRes qw(time);
use Aura::Test qw(t_dir aura_module private_httpd free_port wait_until
                  console_token);
use Aura::SecureNats qw(nkey operator_jwt account_jwt user_jwt creds
                        nats_server stop_server);

plan tests => 1 + 2 * 6 + 2;

my $d = tempdir(CLEANUP => 1);
chmod 0755, $d;
my $ANON = 'ak_test_anon_0123456789abcdef';

# --- the bus, with the documented permissions ---------------------------------
my ($os, $op) = nkey('O');
my ($as, $ap) = nkey('A');
my $inv = 'aura.keys.invalidate';
my %user;
sub user {
    my ($name, %perm) = @_;
    my ($seed, $pub) = nkey('U');
    creds("$d/$name.creds", user_jwt($as, $ap, $pub, %perm), $seed);
    chmod 0644, "$d/$name.creds";   # the services run as this user
    return "$d/$name.creds";
}
# docs/nats.md, "A nats-server configuration".
my $gw_creds = user('gateway', pub => ['aura.>', $inv, '_ACK.>'],
                    sub => ['_INBOX_gw.>', $inv]);
my $victim_creds = user('victim',
    sub => ['aura.cont.victim', 'aura.cont.auth', 'aura.cont.control',
            '_ACK.victim.>'],
    resp => [-1, 3600]);
my $hostile_creds = user('hostile', sub => ['aura.cont.hostile',
                                            '_ACK.hostile.>'],
                         resp => [-1, 3600]);
# The previous docs: publish on the gateway's inbox prefix, subscribe to
# every client's default inboxes.
my $broad_creds = user('broad', sub => ['aura.cont.broad', '_INBOX.>'],
                       pub => ['_INBOX_gw.>']);
open(my $ofh, '>', "$d/op.jwt") or die $!;
print $ofh operator_jwt($os, $op);
close $ofh;
my $acc = account_jwt($os, $op, $ap);
my $nats = nats_server(dir => $d, name => 'containment', body => <<"CONF");
operator: "$d/op.jwt"
resolver: MEMORY
resolver_preload: { $ap: "$acc" }
CONF
my $url = "nats://127.0.0.1:$nats->{port}";

my @procs;
sub spawn {
    my ($name, @cmd) = @_;
    my $pid = fork() // die "fork: $!";
    if (!$pid) {
        open(STDOUT, '>', "$d/$name.out");
        open(STDERR, '>', "$d/$name.err");
        exec(@cmd) or POSIX::_exit(127);
    }
    push @procs, $pid;
}
spawn('victim', t_dir() . '/services/aura_example_service', '-s', $url,
      '-C', $victim_creds, '-c', 'aura.cont.victim.count',
      'aura.cont.victim', 'aura.cont.auth', 'aura.cont.control');
my $stats = "$d/hostile.stats";
spawn('hostile', t_dir() . '/services/aura_hostile_service', '-s', $url,
      '-C', $hostile_creds, '-o', $stats, 'aura.cont.hostile');
spawn('broad', t_dir() . '/services/aura_hostile_service', '-s', $url,
      '-C', $broad_creds, '-o', $stats, 'aura.cont.broad');

# --- the gateway: both planes ------------------------------------------------
my $dir = "$d/httpd";
mkdir $dir or die "$dir: $!";
my $mport = free_port();
my $mgmt_mod = aura_module('mgmt');
my ($port, $httpd) = private_httpd(dir => $dir, children => 2, threads => 16,
                                   body => <<"CONF");
LoadModule aura_mgmt_module $mgmt_mod
Listen 127.0.0.1:$mport
AuraNATSServers $url
AuraNATSCredentials $gw_creds
AuraNATSInboxPrefix _INBOX_gw
AuraDBParams "$ENV{AURA_TEST_PG_CONNINFO}"
AuraRateLimitZone default rate=100000r/s burst=100000
AuraServiceMaxInFlight off
AuraPlaneMaxInFlight off
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    <Location "/health">
        SetHandler aura-health
        AuraHealthDetail On
        AuraPublic On
        AuraRateLimit off
    </Location>
    <Location "/v1/storage/">
        AuraService storage nats:aura.cont.victim
        AuraStreamAckPrefix _ACK.victim.
    </Location>
    <Location "/v1/auth/">
        AuraService auth nats:aura.cont.auth
        AuraPublic On
    </Location>
    <Location "/v1/hostile/">
        AuraService functions nats:aura.cont.hostile
        AuraStreamAckPrefix _ACK.hostile.
        AuraTimeout 30s
    </Location>
    <Location "/v1/broad/">
        AuraService ai nats:aura.cont.broad
        AuraTimeout 30s
    </Location>
</VirtualHost>
<VirtualHost 127.0.0.1:$mport>
    AuraPlane management
    AuraJWTKeyFile $ENV{AURA_TEST_JWT_DIR}/console.jwks
    <Location "/v1/projects/">
        AuraService control nats:aura.cont.control
        AuraScope project-path
        AuraRequireRole member
    </Location>
</VirtualHost>
CONF
system("$httpd -k start") == 0 or die 'httpd did not start';
END {
    local $?;
    system("$httpd -k stop") if $httpd && -s "$dir/httpd.pid";
    for (@procs) { kill 'TERM', $_; waitpid($_, 0) }
    stop_server($nats) if $nats;
}

my $base = "http://127.0.0.1:$port";
my $mbase = "http://127.0.0.1:$mport";
my $ua = LWP::UserAgent->new(timeout => 30);
my $console = console_token('user-owner');
ok(wait_until(20, sub {
       $ua->get("$base/v1/storage/x", apikey => $ANON)->code == 200
       && $ua->get("$base/v1/hostile/learn", apikey => $ANON)->code == 200
       && $ua->get("$base/v1/broad/learn", apikey => $ANON)->code == 200
       && $ua->get("$mbase/v1/projects/proj-a/logs",
                   Authorization => "Bearer $console")->code == 200 }),
   'the victims and the hostile services answer through the secured bus')
    or diag(`tail -n 20 $dir/error.log $d/*.err`);

# The victims' requests, one client per line, until $stop exists: each
# answer must be 200 with the request's own id echoed by the example
# service; forged: anything saying FORGED or carrying its cookie.
sub victims {
    my ($stop, $tag) = @_;
    my @targets = (
        [ "$base/v1/storage/objects", apikey => $ANON ],
        [ "$base/v1/auth/user", apikey => $ANON ],
        [ "$mbase/v1/projects/proj-a/logs",
          Authorization => "Bearer $console" ],
    );
    my @pids;
    for my $i (0 .. 5) {
        my $pid = fork() // die "fork: $!";
        if ($pid) { push @pids, $pid; next }
        my $cua = LWP::UserAgent->new(keep_alive => 1, timeout => 30);
        my ($url, @h) = @{ $targets[$i % @targets] };
        my %c = (total => 0, own => 0, forged => 0, failed => 0);
        my $n = 0;
        while (!-e $stop) {
            my $id = "cont-$tag-$$-" . $n++;
            my $res = $cua->get($url, @h, 'X-Request-Id' => $id,
                                'X-Example-Delay-Ms' => 20);
            $c{total}++;
            my $body = $res->content // '';
            if ($body =~ /FORGED/
                || ($res->header('Set-Cookie') // '') =~ /forged/) {
                $c{forged}++;
            }
            elsif ($res->code != 200) {
                $c{failed}++;
                $c{"status_" . $res->code}++;
            }
            elsif (($res->header('X-Example-Request-Id') // '') eq $id) {
                $c{own}++;
            }
        }
        open(my $out, '>', "$d/victim.$tag.$i") or die $!;
        print {$out} join(' ', map { "$_=$c{$_}" } sort keys %c), "\n";
        close $out;
        POSIX::_exit(0);
    }
    return @pids;
}

sub breakers {
    my $h = decode_json($ua->get("$base/health")->content);
    return $h->{breakers} || {};
}

for my $variant (['hostile', 'the documented user'],
                 ['broad', 'the previous docs\' permissions']) {
    my ($route, $who) = @$variant;
    # What a service learns: the reply subjects of its own requests.
    $ua->get("$base/v1/$route/learn", apikey => $ANON) for 1 .. 40;

    my $stop = "$d/stop.$route";
    my @pids = victims($stop, $route);
    my $attack = $ua->get("$base/v1/$route/attack/4", apikey => $ANON);
    open(my $sfh, '>', $stop) or die $!;
    close $sfh;
    waitpid($_, 0) for @pids;

    my ($published) = ($attack->content // '') =~ /published=(\d+)/;
    ok($attack->code == 200 && ($published // 0) > 0,
       "$who: the attack ran (" . ($attack->content // '') =~ s/\n//r . ')')
        or diag($attack->status_line);
    my %sum;
    for my $f (glob "$d/victim.$route.*") {
        open(my $fh, '<', $f) or die $!;
        for (split ' ', scalar <$fh>) {
            my ($k, $v) = split /=/;
            $sum{$k} += $v;
        }
        close $fh;
    }
    diag("$who: " . join(' ', map { "$_=$sum{$_}" } sort keys %sum));
    cmp_ok($sum{total}, '>=', 30,
           "$who: the victims were called throughout ($sum{total})");
    is($sum{forged}, 0, "$who: no forged answer reached a client");
    is($sum{failed}, 0, "$who: no request of a victim failed");
    is($sum{own}, $sum{total}, "$who: every victim's answer was its own");
    my $b = breakers();
    is_deeply([ map { ($b->{$_}{state} // '?') . '/'
                      . ($b->{$_}{failures} // '?') }
                qw(storage auth control) ],
              [ ('closed/0') x 3 ],
              "$who: no breaker of a victim moved (state/failures)");
}
# A service that keeps sending on its reply subject as its requests
# end: the gateway unsubscribes while those messages arrive (nats.c 3.4
# crashed on freeing a subscription its reader thread was delivering
# to; aura_inbox.c frees it only past that thread).
my @flood;
for my $i (1 .. 4) {
    my $pid = fork() // die "fork: $!";
    if (!$pid) {
        my $cua = LWP::UserAgent->new(keep_alive => 1, timeout => 30);
        my %what;
        for (1 .. 25) {
            my $res = $cua->get("$base/v1/hostile/flood/3000",
                                apikey => $ANON);
            next if $res->code == 200;
            my ($type) = ($res->content // '') =~ m{"(/problems/[\w-]+)"};
            $what{join(' ', $res->code, $type // $res->message // '',
                       $res->header('Client-Warning') // '')}++;
        }
        open(my $out, '>', "$d/flood.$i") or die $!;
        print {$out} map { "$_ x$what{$_}\n" } sort keys %what;
        close $out;
        POSIX::_exit(%what ? 1 : 0);
    }
    push @flood, $pid;
}
my $flood_ok = 0;
for (@flood) { waitpid($_, 0); $flood_ok++ if $? == 0 }
is($flood_ok, 4, '100 requests answered while their service floods the '
   . 'reply subjects as they end')
    or diag(map { "flood client: " . `cat $_` } glob "$d/flood.*");
unlike(`cat $dir/error.log`, qr/exit signal|Segmentation fault/,
       'no child died');
