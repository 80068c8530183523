# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# A NATS subscriber on a raw socket, for tests that check what the
# gateway publishes: the client protocol's CONNECT, SUB, PING/PONG and
# MSG, nothing more (no headers, no reconnect: a test that stops
# nats-server makes a new one).
package Aura::NatsSub;

use strict;
use warnings FATAL => 'all';

use IO::Select;
use IO::Socket::INET;
use Time::HiRes qw(time);

# new($url, $subject): connected and subscribed (the server has seen the
# SUB once PONG is back), or dies.
sub new {
    my ($class, $url, $subject) = @_;
    my ($host, $port) = $url =~ m{^nats://([^:/]+):(\d+)}
        or die "NatsSub: not a nats:// URL: $url";
    my $sock = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port,
                                     Timeout => 5)
        or die "NatsSub: cannot connect to $url: $!";
    my $self = bless { sock => $sock, buf => '', msgs => [] }, $class;
    $self->line(5) =~ /^INFO / or die 'NatsSub: no INFO';
    print $sock "CONNECT {\"verbose\":false,\"pedantic\":false}\r\n"
              . "SUB $subject 1\r\nPING\r\n";
    while (1) {
        my $l = $self->line(5);
        die 'NatsSub: no PONG' unless defined $l;
        last if $l eq 'PONG';
        die "NatsSub: $l" if $l =~ /^-ERR/;
    }
    return $self;
}

sub fill {
    my ($self, $until) = @_;
    my $sel = IO::Select->new($self->{sock});
    my $left = $until - time();
    return 0 if $left <= 0 || !$sel->can_read($left);
    my $n = sysread($self->{sock}, my $chunk, 65536);
    return 0 unless $n;
    $self->{buf} .= $chunk;
    return 1;
}

# The next protocol line, or undef after $secs.
sub line {
    my ($self, $secs) = @_;
    my $until = time() + $secs;
    while ($self->{buf} !~ /\r\n/) {
        return undef unless $self->fill($until);
    }
    $self->{buf} =~ s/^(.*?)\r\n//s;
    return $1;
}

# Read what arrives for up to $secs, or until $n messages are held;
# answers the server's PINGs.  Returns the payloads held so far.
sub collect {
    my ($self, $n, $secs) = @_;
    my $until = time() + $secs;
    while (@{ $self->{msgs} } < $n) {
        if ($self->{buf} =~ /^MSG \S+ \S+ (?:\S+ )?(\d+)\r\n/) {
            my $len = $1;
            my $head = length($&);
            if (length($self->{buf}) >= $head + $len + 2) {
                push @{ $self->{msgs} }, substr($self->{buf}, $head, $len);
                substr($self->{buf}, 0, $head + $len + 2) = '';
                next;
            }
        }
        elsif ($self->{buf} =~ s/^PING\r\n//) {
            print { $self->{sock} } "PONG\r\n";
            next;
        }
        elsif ($self->{buf} =~ s/^(?:PONG|\+OK)\r\n//) {
            next;
        }
        last unless $self->fill($until);
    }
    return @{ $self->{msgs} };
}

sub close { close $_[0]{sock} }

1;
