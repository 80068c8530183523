# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Aura::Upstream: the test HTTP upstream (t/services/aura_http_upstream):
# what it received, how many connections it accepted, and more instances
# of it for a test of its own.
package Aura::Upstream;

use strict;
use warnings;

use Exporter 'import';
use JSON::PP;
use LWP::UserAgent;
use POSIX ();
use Aura::Test qw(t_dir free_port wait_until);

our @EXPORT_OK = qw(upstream_stats upstream_log upstream_start
                    upstream_stop);

my $ua = LWP::UserAgent->new(timeout => 10);

# http://127.0.0.1:port of the suite's own upstream, or of $port.
sub base { 'http://127.0.0.1:' . ($_[0] || $ENV{AURA_TEST_HTTP_PORT}) }

# {name, connections, requests, active, log_lines}
sub upstream_stats {
    my ($port) = @_;
    my $res = $ua->get(base($port) . '/_stats');
    die 'upstream stats: ' . $res->status_line unless $res->is_success;
    return decode_json($res->content);
}

# The requests it recorded from line $since on: [{method, path, headers
# (lower-cased names), body_len, conn}, ...]
sub upstream_log {
    my ($since, $port) = @_;
    my $res = $ua->get(base($port) . "/_log?since=" . ($since || 0));
    die 'upstream log: ' . $res->status_line unless $res->is_success;
    return decode_json($res->content);
}

# Another upstream named $name, for one test: returns {port, pid}.
sub upstream_start {
    my ($name, $dir) = @_;
    my $port = free_port();
    my $pid = fork();
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        open(STDOUT, '>', '/dev/null');
        open(STDERR, '>', '/dev/null');
        exec(t_dir() . '/services/aura_http_upstream', '-p', $port,
             '-P', "$dir/$name.pid", '-l', "$dir/$name.log", '-n', $name)
            or POSIX::_exit(127);
    }
    wait_until(10, sub { -s "$dir/$name.pid" })
        or die "upstream $name did not start";
    return { port => $port, pid => $pid, name => $name };
}

sub upstream_stop {
    my ($u) = @_;
    return unless $u && $u->{pid};
    kill 'TERM', $u->{pid};
    waitpid($u->{pid}, 0);
    $u->{pid} = 0;
}

1;
