# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Aura::Cluster: a NATS cluster of the test's own (nats-server 2.9:
# `cluster { name, listen, routes }`, one config file per node) on free
# loopback ports, for the fault runs that kill a node.  Every node's pid
# is kept; cluster_stop() (also run from END, whatever happened) stops
# exactly those pids, nothing else.
#
#   my $c = cluster_start(dir => $dir, nodes => 3);
#   $c->{nodes}[$i]{url}            nats://127.0.0.1:<port> of node $i
#   cluster_urls($c)                every node's URL, comma-separated
#   node_kill($c, $i, 'KILL')       signal one node, wait until it is gone
#   node_start($c, $i)              start it again (same ports, same file)
#   routes_up($c, $secs)            every running node sees the others
#
# Secured clusters: `scheme` (default nats) names the URLs' scheme and
# `extra` is a block added to every node's file (tls { ... }, accounts,
# authorization), `cluster_extra` one added inside its cluster block
# (the routes' own tls { ... }); `client_args` (the responders' options:
# -C ca, -c cert -k key, -u creds of t/services/aura_count_responder)
# and `gateway_conf` (the gateway's directives for them) are kept for
# the test, which passes them on: this module only builds the topology
# and the start/stop discipline.
package Aura::Cluster;

use strict;
use warnings;

use Exporter 'import';
use JSON::PP;
use LWP::UserAgent;
use POSIX ();
use Time::HiRes qw(time sleep);
use Aura::Test qw(free_ports wait_until pid_alive);

our @EXPORT_OK = qw(cluster_start cluster_stop cluster_urls node_kill
                    node_start routes_up node_of_port interest_seen);

my @clusters;

sub cluster_start {
    my (%o) = @_;
    my $dir = $o{dir} or die 'cluster_start: dir';
    my $n = $o{nodes} || 3;
    my @ports = free_ports(3 * $n);
    my $c = { dir => $dir, nodes => [], scheme => $o{scheme} || 'nats',
              extra => $o{extra} || '', cluster_extra => $o{cluster_extra}
              || '', client_args => $o{client_args} || [],
              gateway_conf => $o{gateway_conf} || '' };
    for my $i (0 .. $n - 1) {
        my ($client, $route, $mon) = splice(@ports, 0, 3);
        push @{ $c->{nodes} }, {
            index => $i, port => $client, route => $route, mon => $mon,
            url => "$c->{scheme}://127.0.0.1:$client",
            conf => "$dir/nats-$i.conf", pidfile => "$dir/nats-$i.pid",
            log => "$dir/nats-$i.log",
        };
    }
    push @clusters, $c;
    write_conf($c, $_) for @{ $c->{nodes} };
    node_start($c, $_) for 0 .. $n - 1;
    routes_up($c, 15) or die 'the NATS cluster did not form its routes'
                             . ' (see ' . $dir . '/nats-*.log)';
    return $c;
}

sub write_conf {
    my ($c, $node) = @_;
    my $routes = join("\n", map { "    nats-route://127.0.0.1:$_->{route}" }
                      grep { $_ != $node } @{ $c->{nodes} });
    open(my $fh, '>', $node->{conf}) or die "$node->{conf}: $!";
    print $fh <<"CONF";
server_name: aura-test-$node->{index}
listen: 127.0.0.1:$node->{port}
http: 127.0.0.1:$node->{mon}
pid_file: "$node->{pidfile}"
log_file: "$node->{log}"
$c->{extra}
cluster {
  name: aura-test
  listen: 127.0.0.1:$node->{route}
  $c->{cluster_extra}
  routes: [
$routes
  ]
}
CONF
    close $fh;
}

sub cluster_urls {
    my ($c) = @_;
    return join(',', map { $_->{url} } @{ $c->{nodes} });
}

# Starts node $i in the foreground of a forked child (its pid is ours to
# signal) and waits until it accepts clients.
sub node_start {
    my ($c, $i) = @_;
    my $node = $c->{nodes}[$i];
    unlink $node->{pidfile};
    my $pid = fork();
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        open(STDOUT, '>>', "$node->{log}.out");
        open(STDERR, '>&', \*STDOUT);
        exec('nats-server', '-c', $node->{conf}) or POSIX::_exit(127);
    }
    $node->{pid} = $pid;
    require IO::Socket::INET;
    wait_until(10, sub {
        IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                              PeerPort => $node->{port})
    }) or die "nats-server $i did not start (see $node->{log})";
    return $pid;
}

# Signals node $i ('KILL' or 'TERM') and waits until its process is gone
# (reaped: it is our child).
sub node_kill {
    my ($c, $i, $sig) = @_;
    my $node = $c->{nodes}[$i];
    my $pid = delete $node->{pid} or return 0;
    kill $sig || 'TERM', $pid;
    my $gone = wait_until(10, sub {
        waitpid($pid, POSIX::WNOHANG()) == $pid || !pid_alive($pid)
    });
    return $gone;
}

# The monitoring endpoint of node $i, decoded, or undef.
sub monitor {
    my ($node, $path) = @_;
    my $res = LWP::UserAgent->new(timeout => 2)
        ->get("http://127.0.0.1:$node->{mon}$path");
    return undef unless $res->is_success;
    return eval { JSON::PP->new->decode($res->content) };
}

# True once every running node has a route to every other running node.
sub routes_up {
    my ($c, $secs) = @_;
    my @up = grep { $_->{pid} } @{ $c->{nodes} };
    return wait_until($secs, sub {
        for my $node (@up) {
            my $r = monitor($node, '/routez') or return 0;
            return 0 unless ($r->{num_routes} // 0) >= @up - 1;
        }
        return 1;
    });
}

# True once every running node but those in @skip has learned, over a
# route, of a subscription to $subject (/routez?subs=1): a request to
# any of them then finds the responders of the other nodes.
sub interest_seen {
    my ($c, $subject, $secs, @skip) = @_;
    my %skip = map { $_ => 1 } @skip;
    my @nodes = grep { $_->{pid} && !$skip{$_->{index}} } @{ $c->{nodes} };
    return wait_until($secs, sub {
        for my $node (@nodes) {
            my $r = monitor($node, '/routez?subs=1') or return 0;
            return 0 unless grep {
                grep { /^\Q$subject\E(?:\s|$)/ } @{ $_->{subscriptions_list} || [] }
            } @{ $r->{routes} || [] };
        }
        return 1;
    });
}

# The index of the node whose client port is $port (from a URL), or -1.
sub node_of_port {
    my ($c, $port) = @_;
    for my $node (@{ $c->{nodes} }) {
        return $node->{index} if $node->{port} == $port;
    }
    return -1;
}

sub cluster_stop {
    my ($c) = @_;
    for my $node (@{ $c->{nodes} }) {
        my $pid = delete $node->{pid} or next;
        kill 'TERM', $pid;
        wait_until(10, sub { waitpid($pid, POSIX::WNOHANG()) == $pid })
            or kill 'KILL', $pid;
        waitpid($pid, POSIX::WNOHANG());
    }
}

END { local $?; cluster_stop($_) for @clusters }

1;
