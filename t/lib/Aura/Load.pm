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

our @EXPORT_OK = qw(hammer fan_out counters health_json);

# $clients processes at once, each running $each->($ua, $i) with its own
# keep-alive user agent ($headers as default headers) and returning one
# line of text; returns the lines, in client order.
sub fan_out {
    my ($clients, $each, $headers) = @_;
    my @kids;
    for my $i (1 .. $clients) {
        pipe(my $r, my $w) or die "pipe: $!";
        my $pid = fork();
        die "fork: $!" unless defined $pid;
        if (!$pid) {
            close $r;
            my $ua = LWP::UserAgent->new(keep_alive => 1, timeout => 30);
            $ua->default_header($_ => $headers->{$_}) for keys %{$headers || {}};
            print $w $each->($ua, $i), "\n";
            close $w;
            # _exit: the child must not run the test's END blocks.
            POSIX::_exit(0);
        }
        close $w;
        push @kids, [$pid, $r];
    }
    my @lines;
    for my $k (@kids) {
        my $fh = $k->[1];
        my $line = <$fh> // '';
        chomp $line;
        push @lines, $line;
        waitpid($k->[0], 0);
    }
    return @lines;
}

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
    my $headers = $o{headers} || {};
    my (%codes, $first, $last);
    my @lines = fan_out($o{clients} || 1, sub {
        my ($ua) = @_;
        my %c;
        $ua->get($o{warmup}, %$headers) if $o{warmup};
        my $start = time;
        my $deadline = $start + $secs;
        my ($first_recv, $last_send);
        while (time < $deadline) {
            $last_send = time;
            my $res = $ua->get($url, %$headers);
            $first_recv //= time;
            $c{$res->code}++;
        }
        return join(' ', $start, time, $first_recv // $start,
                    $last_send // $start, map { "$_=$c{$_}" } keys %c);
    });
    my ($inner_from, $inner_to);
    for my $line (@lines) {
        my ($start, $end, $first_recv, $last_send, @counts) = split / /, $line;
        next unless defined $last_send;
        $first = $start if !defined $first || $start < $first;
        $last = $end if !defined $last || $end > $last;
        $inner_from = $first_recv
            if !defined $inner_from || $first_recv < $inner_from;
        $inner_to = $last_send if !defined $inner_to || $last_send > $inner_to;
        for (@counts) {
            my ($code, $n) = split /=/;
            $codes{$code} += $n if defined $n;
        }
    }
    my $sent = 0;
    $sent += $_ for values %codes;
    # elapsed: from the first request sent to the last answer received,
    # the longest the server can have seen demand for; inner: from the
    # first answer received to the last request sent, the shortest (the
    # requests' own latency, which a loaded machine stretches, is outside
    # it).  A limiter's admissions lie between what each allows.
    my $inner = defined $inner_to ? $inner_to - $inner_from : 0;
    return { codes => \%codes, sent => $sent,
             elapsed => defined $first ? $last - $first : 0,
             inner => $inner > 0 ? $inner : 0 };
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
