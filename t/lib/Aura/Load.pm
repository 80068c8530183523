# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Aura::Load: bounded request loops for the rate-limit tests, and the
# shared-segment counters they assert on.
package Aura::Load;

use strict;
use warnings;

use Exporter 'import';
use JSON::PP;
use LWP::UserAgent;
use POSIX ();
use Time::HiRes qw(time);

our @EXPORT_OK = qw(hammer counters health_json);

# $clients processes, each on one keep-alive connection, send GET $url
# back to back for $secs seconds.  With warmup => $other_url each first
# sends one request there, so that connecting (slow for the first
# request of a process) is not counted in the time.  Returns
#   { codes => { status => count }, elapsed => seconds, sent => n }
# elapsed runs from the first request sent (by any client: forking takes
# a while) to the last answer received.
sub hammer {
    my (%o) = @_;
    my $url = $o{url} or die 'hammer: url';
    my $secs = $o{seconds} || 1;
    my $clients = $o{clients} || 1;
    my $headers = $o{headers} || {};
    my (@kids, %codes);
    my ($first, $last);
    for my $i (1 .. $clients) {
        pipe(my $r, my $w) or die "pipe: $!";
        my $pid = fork();
        die "fork: $!" unless defined $pid;
        if (!$pid) {
            close $r;
            my $ua = LWP::UserAgent->new(keep_alive => 1, timeout => 10);
            my %c;
            $ua->get($o{warmup}, %$headers) if $o{warmup};
            my $start = time;
            my $deadline = $start + $secs;
            while (time < $deadline) {
                my $res = $ua->get($url, %$headers);
                $c{$res->code}++;
            }
            print $w join(' ', $start, time,
                          map { "$_=$c{$_}" } keys %c), "\n";
            close $w;
            # _exit: the child must not run the test's END blocks.
            POSIX::_exit(0);
        }
        close $w;
        push @kids, [$pid, $r];
    }
    for my $k (@kids) {
        my $fh = $k->[1];
        my $line = <$fh> // '';
        chomp $line;
        my ($start, $end, @counts) = split / /, $line;
        next unless defined $end;
        $first = $start if !defined $first || $start < $first;
        $last = $end if !defined $last || $end > $last;
        for (@counts) {
            my ($code, $n) = split /=/;
            $codes{$code} += $n if defined $n;
        }
        waitpid($k->[0], 0);
    }
    my $sent = 0;
    $sent += $_ for values %codes;
    return { codes => \%codes, sent => $sent,
             elapsed => defined $first ? $last - $first : 0 };
}

# /health with AuraHealthDetail On at $base (http://host:port), decoded.
sub health_json {
    my ($base) = @_;
    my $res = LWP::UserAgent->new(timeout => 10)->get("$base/health");
    die "health: " . $res->status_line unless $res->is_success;
    return JSON::PP->new->decode($res->content);
}

# The shared segment's counters, from health_json().
sub counters { health_json($_[0])->{shm} }

1;
