# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# A child closes its NATS connection before the key cache that the
# connection's invalidation handler writes into (issue #29 point 6).
# On a private httpd with the suite's NATS, key invalidations are
# published all along while the server is restarted gracefully three
# times: every child of the old generation exits, and none of them
# releases its key cache while its NATS connection is still open
# (AURA01800, the key cache's own check at its release) or gives up
# waiting for the handler (AURA01801); no child crashes.  Run under the
# sanitizers (build/test's second pass), a use of the cache after its
# release would be an AddressSanitizer report, which fails the run.
#
# The order is decided by the pool cleanups alone (the NATS connection
# is closed in a pre-cleanup of the child pool), so the assertion on
# AURA01800 holds or fails on every child exit, however the
# invalidations fall; they are published to exercise the handler
# around the exit, and the test counts that the children handled some.
#
# AURA_TEST_ROUNDS=N restarts N times instead of 3 (a stress run).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempdir);
use IO::Socket::INET;
use POSIX ();
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Aura::Test qw(private_httpd wait_until);

use constant ROUNDS => $ENV{AURA_TEST_ROUNDS} || 3;
use constant SUBJECT => 'aura.keys.invalidate';

plan tests => 2 + 4 * ROUNDS + 5;

# AURA_TEST_KEEP=1 keeps the private httpd's folder (its error.log) and
# says where it is.
my $dir = tempdir(CLEANUP => !$ENV{AURA_TEST_KEEP});
diag("private httpd in $dir") if $ENV{AURA_TEST_KEEP};
my ($port, $httpd) = private_httpd(dir => $dir, children => 2,
                                   body => <<"CONF");
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
LogLevel info aura_common:debug
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
</VirtualHost>
CONF

sub log_text {
    open(my $fh, '<', "$dir/error.log") or return '';
    local $/;
    return <$fh> // '';
}

# The pids that logged "NATS connected" (AURA00010) after byte $from.
sub connected_pids {
    my ($from) = @_;
    my $text = substr(log_text(), $from);
    my %pids = map { $_ => 1 } $text =~ /AURA00010: NATS connected .*\(pid (\d+)\)/g;
    return sort keys %pids;
}

# The children alive now among those that ever connected.
sub live { grep { !gone($_) } connected_pids(0) }

# The children of MPM generation $gen that listen for key invalidations
# (AURA02710, debug, logged once the subscription is made; it names the
# child's generation: 0 at start, one more at each restart).
sub ready_of {
    my ($gen) = @_;
    my %gen = log_text() =~ /AURA02710: listening for key invalidations on \S+ \(pid (\d+), generation (\d+)\)/g;
    return sort grep { $gen{$_} == $gen } keys %gen;
}

sub gone {
    my ($pid) = @_;
    return 1 unless kill(0, $pid);
    open(my $s, '<', "/proc/$pid/stat") or return 1;
    my $stat = <$s> // '';
    return $stat =~ /^\d+ \(.*\) Z/;
}

# Whether every pid of @_ still alive has handled an invalidation since
# byte $from (AURA00014, debug; httpd's log line names the pid), and one
# at least.  A child the MPM stopped before its first invalidation
# cannot; a live child that handles nothing still fails.
sub all_handled {
    my ($from, @want) = @_;
    my $text = substr(log_text(), $from);
    my %seen = map { $_ => 1 }
        $text =~ /\[pid (\d+):tid \d+\] (?:\S+\(\d+\): )?AURA00014: key invalidation for project proj-exit0/g;
    return (grep { $seen{$_} } @want)
           && !grep { !$seen{$_} && !gone($_) } @want;
}

# A process of this test that publishes invalidations (a project no key
# belongs to) on the suite's NATS until it is killed: bursts of 50, each
# flushed with a PING, every 100 ms.
sub start_publisher {
    my ($host, $nport) = $ENV{AURA_TEST_NATS_URL} =~ m{^nats://([^:/]+):(\d+)}
        or die "AURA_TEST_NATS_URL: $ENV{AURA_TEST_NATS_URL}";
    my $pid = fork() // die "fork: $!";
    return $pid if $pid;
    my $s = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $nport)
        or POSIX::_exit(1);
    <$s>;    # INFO
    print $s qq(CONNECT {"verbose":false,"pedantic":false}\r\n);
    while (1) {
        print $s 'PUB ' . SUBJECT . " 10\r\nproj-exit0\r\n" for 1 .. 50;
        print $s "PING\r\n";
        while (defined(my $l = <$s>)) {
            last if $l =~ /^PONG/;
            print $s "PONG\r\n" if $l =~ /^PING/;
            POSIX::_exit(1) if $l =~ /^-ERR/;
        }
        select(undef, undef, undef, 0.1);
    }
}

system("$httpd -k start") == 0 or die 'httpd did not start';
my $publisher;
END {
    kill('TERM', $publisher) if $publisher;
    system("$httpd -k stop") if -s "$dir/httpd.pid";
}

my @pids;
ok(wait_until(60, sub { (@pids = grep { !gone($_) } ready_of(0)) >= 2 }),
   'both children listen for invalidations');
$publisher = start_publisher();
ok(wait_until(60, sub { all_handled(0, @pids) }),
   'both children handle invalidations');

# Round N's graceful restart makes generation N.  The MPM starts its
# children as the old ones free their slots, and may start only one
# while its threads are idle: a round waits for at least one.  A child
# of the generation going away may still be starting when the restart
# begins: it connects after the round began, is stopped at once and
# handles nothing.  It is no child of the new generation, and the
# children of the new generation are told by their own word
# (AURA02710), not by when they connected: counted as the new child,
# such a child failed the wait below (an ASan run, where a child takes
# longer to start).
for my $round (1 .. ROUNDS) {
    my $from = length log_text();
    my @old = live();
    is(system("$httpd -k graceful"), 0, "round $round: graceful restart");
    ok(wait_until(60, sub { !grep { !gone($_) } @old }),
       "round $round: the old children (@old) exited");
    ok(wait_until(60, sub { (@pids = ready_of($round)) >= 1 }),
       "round $round: a child of generation $round listens");
    # So that each child exits while invalidations keep coming in.  The
    # generation's children are asked again at each try: one that
    # started later is waited for too.
    ok(wait_until(60, sub { all_handled($from, @pids = ready_of($round)) }),
       "round $round: the new children (@pids) handle invalidations");
}

kill('TERM', $publisher);
waitpid($publisher, 0);
$publisher = undef;
open(my $fh, '<', "$dir/httpd.pid") or die "$dir/httpd.pid: $!";
chomp(my $ppid = <$fh>);
close $fh;
@pids = live();
system("$httpd -k stop");
ok(wait_until(60, sub { gone($ppid) && !grep { !gone($_) } @pids }),
   'stopped: the last children exited too');

my $log = log_text();
my @early = $log =~ /(AURA01800: [^\n]*)/g;
is(scalar @early, 0, 'no child released its key cache with NATS open')
    or diag(join("\n", @early[0 .. ($#early < 4 ? $#early : 4)]));
unlike($log, qr/AURA01801/, 'no child gave up waiting for the handler');
unlike($log, qr/AH00\d+: .*(segfault|exit signal)/i, 'no child crashed');
my $handled = () = $log =~ /AURA00014: key invalidation for project proj-exit0/g;
ok($handled > 0, "the handler ran ($handled invalidations handled)");
