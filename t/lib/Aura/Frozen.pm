# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Aura::Frozen: a responder of the test's own (the example service on
# the test-only subject aura.test.frozen, pid known to the test) that a
# test freezes with SIGSTOP and thaws with SIGCONT; callers forked in the
# background, timed; the in-flight counters of /health (AuraHealthDetail
# On).  The responder is stopped (thawed first) at the end of the test,
# whatever happened.
package Aura::Frozen;

use strict;
use warnings;

use Exporter 'import';
use JSON::PP;
use LWP::UserAgent;
use POSIX ();
use Time::HiRes qw(time sleep);
use Apache::Test ();

our @EXPORT_OK = qw(responder_start freeze thaw callers collect in_flight
                    timed_get);

my $pid;

sub responder_start {
    my $run = $ENV{AURA_TEST_RUN} or die 'AURA_TEST_RUN is not set';
    my $bin = Apache::Test::vars('t_dir') . '/services/aura_example_service';
    my $pidfile = "$run/frozen-$$.pid";
    unlink $pidfile;
    $pid = fork();
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        open(STDOUT, '>>', "$run/frozen.log");
        open(STDERR, '>&', \*STDOUT);
        exec($bin, '-s', $ENV{AURA_TEST_NATS_URL}, '-p', $pidfile,
             '-c', 'aura.test.frozen.count', 'aura.test.frozen')
            or POSIX::_exit(127);
    }
    for (1 .. 100) {
        last if -s $pidfile;
        sleep 0.05;
    }
    die 'the frozen responder did not start' unless -s $pidfile;
    return $pid;
}

sub freeze { kill 'STOP', $pid if $pid }
sub thaw { kill 'CONT', $pid if $pid }

END {
    if ($pid) {
        kill 'CONT', $pid;
        kill 'TERM', $pid;
        waitpid($pid, 0);
    }
}

# One GET, timed: (response, seconds).
sub timed_get {
    my ($url, %h) = @_;
    my $ua = LWP::UserAgent->new(timeout => 30);
    my $t0 = time;
    my $res = $ua->get($url, %h);
    return ($res, time - $t0);
}

# $n callers in the background, caller $i sending GET $url->($i) with
# headers $headers->($i).  Returns a handle for collect().
sub callers {
    my ($n, $url, $headers) = @_;
    my @kids;
    for my $i (1 .. $n) {
        pipe(my $r, my $w) or die "pipe: $!";
        my $kid = fork();
        die "fork: $!" unless defined $kid;
        if (!$kid) {
            close $r;
            my ($res, $secs) = timed_get($url->($i), %{ $headers->($i) });
            my $p = eval { JSON::PP->new->decode($res->content) } || {};
            print $w join("\t", $i, $res->code, $secs,
                          $res->header('Retry-After') // '',
                          $p->{type} // '', $p->{detail} // '',
                          $res->header('Content-Type') // ''), "\n";
            close $w;
            POSIX::_exit(0);
        }
        close $w;
        push @kids, [$kid, $r];
    }
    return \@kids;
}

# The callers' results: [{i, code, secs, retry, type, detail, ctype}].
sub collect {
    my ($kids) = @_;
    my @out;
    for my $k (@$kids) {
        my $fh = $k->[1];
        my $line = <$fh> // '';
        chomp $line;
        my @f = split /\t/, $line, -1;
        push @out, { i => $f[0], code => $f[1] // 0, secs => $f[2] // 99,
                     retry => $f[3], type => $f[4], detail => $f[5],
                     ctype => $f[6] };
        waitpid($k->[0], 0);
    }
    return @out;
}

# The "in_flight" object of /health at $base.
sub in_flight {
    my ($base) = @_;
    my $res = LWP::UserAgent->new(timeout => 10)->get("$base/health");
    die 'health: ' . $res->status_line unless $res->is_success;
    return JSON::PP->new->decode($res->content)->{in_flight};
}

1;
