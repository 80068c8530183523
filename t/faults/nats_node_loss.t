# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Losing a NATS node costs almost nothing (issue #18): a private httpd
# (2 children of 16 workers) whose NATS connection lists the three nodes
# of a cluster of the test's own (Aura::Cluster), responders that record
# every request id they execute (t/services/aura_count_responder, in a
# queue group), and 4000 requests, 16 at a time, each timed (every
# request in flight on the killed node may fail: 16 of 4000 is 0.4 %).
#
# - one node: every responder on one node; in the middle, kill -9 the
#   node the gateway's children are connected to (never the responders'
#   node): at most 0.5 % of the requests answered 503 (upstream-error),
#   none 504 nor slower than the budget, zero request ids executed
#   twice, every 200 executed exactly once, and each child that used the
#   killed node serving (a 200 to a request sent after the kill) within
#   2 s of the kill;
# - spread: the same with responders on every node (the queue group on
#   every node), the killed node's responders reconnecting elsewhere.
#   Requests in flight on a route to the killed node (to its responders,
#   or their replies coming back) are lost inside the cluster, and
#   nothing tells the gateway, whose own connection may be fine: they
#   end at their budget with 504 (never replayed).  Here 503 and 504
#   together stay within 0.5 %, every 504 was in flight at the kill, and
#   nothing is answered past the budget;
# - graceful: the same load with a graceful restart of httpd (SIGUSR1 to
#   the parent) in the middle instead: every request answered 200 (or
#   503 upstream-error, counted), none executed twice.
# The killed node is started again (same ports) before the next run; the
# nodes, the responders and httpd are stopped at the end by pid, also on
# failure.  AuraRetries is left at its default (2): a "no responders"
# while the cluster drops the killed node (seen once in seven runs with
# retries off) proves the request reached nobody and is sent again.
# Short budgets (AuraTimeout 2s, reconnect wait 100 ms): the
# whole file runs in well under a minute.  Plain NATS here;
# t/faults/nats_node_loss_tls.t runs this file with $SECURE set: the
# cluster then has TLS verifying clients (routes too) and accounts
# (Aura::SecureNats::secure_cluster), the gateway and the responders
# connect with client certificates and creds files, and the "one" and
# "spread" runs are made (not the graceful, which is about httpd, not
# the bus); first, gateways with a wrong CA, a wrong seed and a revoked
# user each answer 503 upstream-error at once and log AURA01320 saying
# which.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use File::Temp qw(tempdir);
use LWP::UserAgent;
use POSIX ();
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Time::HiRes qw(time sleep);
use Aura::Test qw(private_httpd wait_until t_dir pid_alive problem_ok);
use Aura::SecureNats qw(secure_cluster);
use Aura::Cluster qw(cluster_start cluster_urls node_kill node_start
                     routes_up node_of_port interest_seen);

my $REQUESTS = 4000;
my $CLIENTS = 16;
my $BUDGET = 2;           # AuraTimeout, s
my $CHILDREN = 2;

our $SECURE;              # set by t/faults/nats_node_loss_tls.t
my %REFUSED = (
    wrongca   => qr/AURA01320: NATS connection refused: TLS handshake failed/,
    wrongseed => qr/AURA01320: NATS connection refused: authorization violation/,
    revoked   => qr/AURA01320: NATS connection refused: (?:authorization violation|credentials revoked)/,
);

plan tests => $SECURE ? 2 * 9 + 1 + 6 * keys %REFUSED : 3 * 9 + 1;

# Stopped from outside: the END blocks still stop what was started.
$SIG{$_} = sub { exit 1 } for qw(TERM INT);

my $dir = tempdir(CLEANUP => 1);
chmod 0755, $dir;
my $subject = 'aura.test.nodeloss';
my $sec = $SECURE ? secure_cluster($dir, $subject) : {};
my $cluster = cluster_start(dir => $dir, nodes => 3, %$sec);
my $servers = join(' ', map { $_->{url} } @{ $cluster->{nodes} });

my ($port, $httpd) = private_httpd(dir => $dir, children => $CHILDREN,
                                   threads => 16, body => <<"CONF");
# Room for the new generation at a graceful (docs/resilience.md,
# "Graceful restarts"): it does not wait for the old one's slots.
ServerLimit 4
AuraNATSServers $servers
$cluster->{gateway_conf}
AuraNATSReconnectWait 100ms
AuraNATSPingInterval 1s
AuraBreaker * threshold=1000000
AuraRateLimitZone default rate=100000r/s burst=100000
AuraServiceMaxInFlight off
AuraPlaneMaxInFlight off
LogFormat "%P %>s %{request-id}^au %{problem}^au %D" nodeloss
CustomLog $dir/access.log nodeloss
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    <Location "/health">
        SetHandler aura-health
        AuraHealthDetail On
        AuraPublic On
        AuraRateLimit off
    </Location>
    <Location "/svc/">
        AuraPublic On
        AuraService functions nats:$subject
        AuraTimeout ${BUDGET}s
    </Location>
</VirtualHost>
CONF

my %responders;           # pid => 1
sub responders_stop {
    for my $pid (keys %responders) {
        kill 'TERM', $pid;
        wait_until(5, sub { !pid_alive($pid) }) or kill 'KILL', $pid;
        waitpid($pid, 0);
        delete $responders{$pid};
    }
}
END {
    local $?;
    system("$httpd -k stop >/dev/null 2>&1") if $httpd && -s "$dir/httpd.pid";
    responders_stop();
}

# $n responders in the queue group on node $i only, recording to
# $dir/exec-<run>-<i>-<k>.
sub responders_start {
    my ($run, $i, $n) = @_;
    for my $k (1 .. $n) {
        responder_start("$run-$i-$k", $i);
    }
}

# One responder; a first connection refused (seen once on a loaded
# machine: a TLS handshake of a node just restarted) is tried again, at
# most 3 times, saying why.
sub responder_start {
    my ($name, $i) = @_;
    for my $try (1 .. 3) {
        my $pidfile = "$dir/resp-$name.pid";
        unlink $pidfile;
        my $pid = fork() // die "fork: $!";
        if (!$pid) {
            open(STDOUT, '>>', "$dir/responders.log");
            open(STDERR, '>&', \*STDOUT);
            exec(t_dir() . '/services/aura_count_responder',
                 '-s', $cluster->{nodes}[$i]{url}, '-q', 'q', '-n', $name,
                 @{ $cluster->{client_args} },
                 '-o', "$dir/exec-$name", '-p', $pidfile, $subject)
                or POSIX::_exit(127);
        }
        $responders{$pid} = 1;
        my $exited;
        wait_until(10, sub {
            $exited = waitpid($pid, POSIX::WNOHANG()) == $pid;
            return -s $pidfile || $exited;
        });
        return if -s $pidfile;
        delete $responders{$pid} if $exited;
        diag("responder $name did not start: "
             . `tail -n 3 $dir/responders.log 2>&1`);
        die "responder $name did not start" unless $exited;
    }
    die "responder $name did not start in 3 tries";
}

system("$httpd -k start") == 0 or die 'httpd did not start';
my $base = "http://127.0.0.1:$port";
wait_until(10, sub {
    LWP::UserAgent->new(timeout => 5)->get("$base/health")->is_success
}) or die 'httpd does not answer';

sub httpd_log {
    open(my $fh, '<', "$dir/error.log") or return '';
    local $/;
    return <$fh>;
}

# The node each live child is connected to, from its last AURA00010
# ("NATS connected to <url> (pid <pid>)"): pid => node index.
sub child_nodes {
    my %node;
    my $log = httpd_log();
    while ($log =~ /AURA00010: NATS connected to \S+?:(\d+) \(pid (\d+)\)/g) {
        $node{$2} = node_of_port($cluster, $1);
    }
    delete $node{$_} for grep { !kill(0, $_) } keys %node;
    return \%node;
}

# The node most children use.
sub busiest_node {
    my %n;
    $n{$_}++ for values %{ child_nodes() };
    my ($best) = sort { $n{$b} <=> $n{$a} || $a <=> $b } keys %n;
    return $best;
}

sub exec_lines {
    my ($run) = @_;
    my $n = 0;
    for my $f (glob("$dir/exec-$run-*")) {
        open(my $fh, '<', $f) or next;
        $n++ while <$fh>;
    }
    return $n;
}

# The load: $CLIENTS processes, $REQUESTS in all, each request timed;
# each client writes "<start> <end> <status> <request id> <problem>" per
# request to $dir/load-<run>-<client>.  Returns the clients' pids.
sub load_start {
    my ($run, $keep_alive) = @_;
    my @pids;
    for my $c (1 .. $CLIENTS) {
        my $pid = fork() // die "fork: $!";
        if (!$pid) {
            my $ua = LWP::UserAgent->new(keep_alive => $keep_alive,
                                         timeout => 30);
            my $out = '';
            for (my $i = $c; $i <= $REQUESTS; $i += $CLIENTS) {
                my $t0 = time;
                my $res = $ua->get("$base/svc/$run/$i");
                my ($type) = ($res->content // '') =~ m{"type":\s*"/problems/([\w-]+)"};
                $out .= sprintf("%.4f %.4f %d %s %s\n", $t0, time, $res->code,
                                $res->header('X-Request-Id') // '-',
                                $type // '-');
            }
            open(my $fh, '>', "$dir/load-$run-$c") or POSIX::_exit(1);
            print $fh $out;
            close $fh;
            POSIX::_exit(0);
        }
        push @pids, $pid;
    }
    return @pids;
}

# Waits for the clients; returns the requests: [start, end, code, rid,
# problem].
sub load_collect {
    my ($run, @pids) = @_;
    waitpid($_, 0) for @pids;
    my @req;
    for my $f (glob("$dir/load-$run-*")) {
        open(my $fh, '<', $f) or next;
        push @req, [split ' '] while <$fh>;
    }
    return @req;
}

# Executions per request id, all responders of the run.
sub executions {
    my ($run) = @_;
    my %n;
    for my $f (glob("$dir/exec-$run-*")) {
        open(my $fh, '<', $f) or next;
        while (<$fh>) {
            my ($rid) = split;
            $n{$rid}++;
        }
    }
    return \%n;
}

# Request id => pid of the child that answered, from the access log.
sub child_of_requests {
    my %pid;
    open(my $fh, '<', "$dir/access.log") or return \%pid;
    while (<$fh>) {
        my ($pid, $code, $rid) = split;
        $pid{$rid} = $pid if defined $rid;
    }
    return \%pid;
}

# Checks one run: 8 tests.  $event is the time of the kill (or the
# graceful); $affected the pids of the children that used the killed
# node (none for the graceful).
sub check_run {
    my ($run, $event, $affected, $lost_inside, @req) = @_;
    my (%codes, @bad, $slowest, $slowest503);
    for my $q (@req) {
        $codes{$q->[2]}++;
        my $took = $q->[1] - $q->[0];
        $slowest = $took if !defined $slowest || $took > $slowest;
        $slowest503 = $took if $q->[2] == 503
            && (!defined $slowest503 || $took > $slowest503);
        push @bad, "$q->[2] $q->[4]"
            if $q->[2] != 200 && !($q->[2] == 503 && $q->[4] eq 'upstream-error')
               && !($lost_inside && $q->[2] == 504
                    && $q->[4] eq 'upstream-timeout')
               && @bad < 5;
    }
    my $n503 = $codes{503} // 0;
    my $summary = join(', ', map { "$_: $codes{$_}" } sort keys %codes);
    is(scalar(@req), $REQUESTS, "$run: every request answered ($summary)");
    my $n504 = $codes{504} // 0;
    is(scalar(@bad), 0, "$run: only 200 or 503 upstream-error"
       . ($lost_inside ? ' (or 504 upstream-timeout)' : '')
       . (@bad ? " (e.g. @bad)" : ''));
    cmp_ok($n503 + $n504, '<=', $REQUESTS * 0.005, "$run: at most 0.5 %"
           . " answered 503 or 504 ($n503 + $n504 of $REQUESTS)");
    if ($lost_inside) {
        # A request in flight on a route to the killed node (to one of
        # its responders, or its reply on the way back) is lost inside
        # the cluster: nothing tells the gateway, whose own connection
        # is fine, so it ends at its budget (504, never replayed).
        # In flight at the kill, or sent while the surviving nodes had
        # not yet dropped the killed node's subscriptions.
        my @after = grep { $_->[2] == 504 && $_->[0] > $event + 0.1 } @req;
        is(scalar(@after), 0, "$run: the $n504 answered 504 were sent at"
           . ' most 100 ms after the kill');
    }
    else {
        is($n504, 0, "$run: none answered 504");
    }
    cmp_ok($slowest // 0, '<', $lost_inside ? $BUDGET + 0.25 : $BUDGET,
           sprintf("$run: none took longer than the budget (slowest %.3f s)",
                   $slowest // 0));
    # A request whose node went away is told at once, not at its budget.
    cmp_ok($slowest503 // 0, '<', 1, sprintf("$run: every 503 within 1 s"
           . ' (slowest %.3f s)', $slowest503 // 0));
    my $exec = executions($run);
    my @twice = grep { $exec->{$_} > 1 } keys %$exec;
    is(scalar(@twice), 0, "$run: zero request ids executed twice ("
       . scalar(keys %$exec) . ' executed)' . (@twice ? " e.g. $twice[0]" : ''));
    my @ok_not_once = grep { $_->[2] == 200 && ($exec->{$_->[3]} // 0) != 1 }
                      @req;
    is(scalar(@ok_not_once), 0, "$run: every 200 executed exactly once");
    # Per child that used the killed node: the first 200 to a request
    # sent after the kill.
    my $child_of = child_of_requests();
    my @late;
    my $worst = 0;
    for my $pid (@$affected) {
        my ($first) = sort { $a <=> $b } map { $_->[1] - $event }
            grep { $_->[0] >= $event && $_->[2] == 200
                   && ($child_of->{$_->[3]} // 0) == $pid } @req;
        $first //= 99;
        $worst = $first if $first > $worst;
        push @late, sprintf('%d: %.3f s', $pid, $first) if $first >= 2;
    }
    if (@$affected) {
        ok(!@late, sprintf("$run: every child on the killed node served"
           . ' again within 2 s (%d children, slowest %.3f s)',
           scalar(@$affected), $worst) . (@late ? " (@late)" : ''));
    }
    diag(sprintf("$run: %d requests, %s, slowest %.3f s", scalar(@req),
                 $summary, $slowest // 0));
    return \%codes;
}

# Secured cluster: a gateway (one child) per wrong setting answers 503
# upstream-error at once, not at its budget, and logs the reason; each
# is stopped before the node-loss runs.
sub refused_check {
    for my $name (sort keys %REFUSED) {
        my $gdir = "$dir/httpd-$name";
        mkdir $gdir or die "$gdir: $!";
        my ($gport, $ghttpd) = private_httpd(dir => $gdir, children => 1,
                                             body => <<"CONF");
AuraNATSServers $servers
$sec->{refused}{$name}
AuraNATSReconnectWait 100ms
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    <Location "/svc/">
        AuraPublic On
        AuraService functions nats:$subject
        AuraTimeout ${BUDGET}s
    </Location>
</VirtualHost>
CONF
        system("$ghttpd -k start") == 0 or die "httpd $name did not start";
        my $slurp = sub {
            open(my $fh, '<', "$gdir/error.log") or return '';
            local $/;
            return <$fh> // '';
        };
        my $ua = LWP::UserAgent->new(timeout => 10);
        my $url = "http://127.0.0.1:$gport/svc/refused/1";
        my $res;
        wait_until(10, sub { ($res = $ua->get($url))->code != 500
                             && $res->code >= 200 });
        my $t0 = time;
        $res = $ua->get($url);
        my $took = time - $t0;
        problem_ok($res, 503, 'upstream-error', $name);
        ok($took < 1, sprintf('%s: answered in %.3f s, not at the budget',
                              $name, $took));
        ok(wait_until(10, sub { $ua->get($url); $slurp->() =~ $REFUSED{$name} }),
           "$name: the log says which") or diag($slurp->());
        note(($slurp->() =~ /(AURA01320[^\n]*)/)[0] // '');
        system("$ghttpd -k stop >/dev/null 2>&1");
        wait_until(10, sub { !-e "$gdir/httpd.pid" });
    }
}

# One run with a node killed in the middle.
sub node_loss_run {
    my ($run, $spread) = @_;
    my $nodes = child_nodes();
    my $victim = busiest_node();
    die 'no child is connected to NATS' unless defined $victim;
    my @affected = grep { $nodes->{$_} == $victim } keys %$nodes;
    my @hosts = $spread ? (0 .. 2) : (($victim + 1) % 3);
    responders_start($run, $_, $spread ? 2 : 4) for @hosts;
    # The queue group's interest has reached every other node.
    interest_seen($cluster, $subject, 10, $spread ? () : @hosts)
        or die "$run: the responders' interest did not reach every node";
    my @pids = load_start($run, 1);
    wait_until(30, sub { exec_lines($run) >= $REQUESTS / 2 })
        or die "$run: the load did not get half-way";
    my $t_kill = time;
    node_kill($cluster, $victim, 'KILL') or die "node $victim survived";
    my @req = load_collect($run, @pids);
    check_run($run, $t_kill, \@affected, $spread, @req);
    responders_stop();
    node_start($cluster, $victim);
    routes_up($cluster, 15) or die 'the cluster did not re-form';
}

# /health names the node of the answering child.
my ($srv) = LWP::UserAgent->new(timeout => 5)->get("$base/health")->content
    =~ /"nats_server":\s*"([^"]*)"/;
ok(defined $srv && $srv =~ m{^(?:nats|tls)://127\.0\.0\.1:(\d+) \S+$}
   && node_of_port($cluster, $1) >= 0,
   '/health names the node the child uses (' . ($srv // 'none') . ')');

refused_check() if $SECURE;
node_loss_run('one', 0);
node_loss_run('spread', 1);
exit 0 if $SECURE;

# --- graceful restart in the middle ---------------------------------
open(my $fh, '<', "$dir/httpd.pid") or die "httpd.pid: $!";
chomp(my $ppid = <$fh>);
close $fh;
responders_start('graceful', $_, 2) for 0 .. 2;
interest_seen($cluster, $subject, 10)
    or die 'graceful: the responders\' interest did not reach every node';
my $gen = sub {
    my $res = LWP::UserAgent->new(timeout => 5)->get("$base/health");
    return ($res->content =~ /"generation":\s*(\d+)/)[0] // -1;
};
my $before = $gen->();
my @pids = load_start('graceful', 0);
wait_until(30, sub { exec_lines('graceful') >= $REQUESTS / 2 })
    or die 'graceful: the load did not get half-way';
my $t_usr1 = time;
kill 'USR1', $ppid;
my @req = load_collect('graceful', @pids);
ok(wait_until(10, sub { $gen->() > $before }),
   'graceful: the new generation answers');
my $codes = check_run('graceful', $t_usr1, [], 0, @req);
