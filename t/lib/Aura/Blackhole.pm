# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Aura::Blackhole: a TCP proxy on 127.0.0.1 that the test switches
# between forwarding to a real server and playing a blackholed one: it
# still accepts connections (the kernel completes the handshake) but
# never answers, and stops relaying on the connections it already
# forwards, both ways.  That is what an unreachable Postgres behind a
# silent firewall or a frozen host looks like to a client, and what a
# refused connection (Postgres stopped) does not show.
#
#   my $bh = Aura::Blackhole->start(target => "127.0.0.1:$port");
#   $bh->port;           # where clients connect
#   $bh->blackhole;      # accept and hold, relay nothing
#   $bh->forward;        # relay again; held connections are closed
#   $bh->accepted;       # connections accepted so far
#   $bh->stop;           # also done by DESTROY
#
# The proxy is a child process the test forked (its PID is the object's
# own); it is switched by SIGUSR1 / SIGUSR2 and counts accepted
# connections in a file.
package Aura::Blackhole;

use strict;
use warnings FATAL => 'all';

use IO::Socket::INET ();
use IO::Select ();
use File::Temp qw(tempdir);
use POSIX ();
use Time::HiRes qw(sleep time);

sub start {
    my ($class, %o) = @_;
    my $dir = tempdir(CLEANUP => 1);
    my $listen = IO::Socket::INET->new(Listen => 64, LocalAddr => '127.0.0.1',
                                       LocalPort => 0, ReuseAddr => 1)
        or die "Aura::Blackhole: listen: $!";
    my $self = bless { port => $listen->sockport, dir => $dir,
                       count => "$dir/accepted", mode => "$dir/mode" }, $class;
    write_file($self->{count}, 0);
    write_file($self->{mode}, 'forward');
    my $pid = fork;
    die "Aura::Blackhole: fork: $!" unless defined $pid;
    if (!$pid) {
        serve($listen, $o{target}, $self);
        POSIX::_exit(0);
    }
    close $listen;
    $self->{pid} = $pid;
    return $self;
}

sub port { $_[0]{port} }
sub pid { $_[0]{pid} }

sub accepted {
    my ($self) = @_;
    open(my $fh, '<', $self->{count}) or return 0;
    my $n = <$fh>;
    return defined $n ? $n + 0 : 0;
}

# Switch, and wait until the proxy says it has switched.
sub switch_to {
    my ($self, $sig, $mode) = @_;
    kill $sig, $self->{pid};
    my $deadline = time + 5;
    while (time < $deadline) {
        open(my $fh, '<', $self->{mode}) or next;
        my $m = <$fh> // '';
        return 1 if $m eq $mode;
        sleep 0.02;
    }
    die "Aura::Blackhole: no switch to $mode";
}
sub blackhole { $_[0]->switch_to('USR1', 'blackhole') }
sub forward   { $_[0]->switch_to('USR2', 'forward') }

sub stop {
    my ($self) = @_;
    my $pid = delete $self->{pid} or return;
    kill 'TERM', $pid;
    waitpid($pid, 0);
}

sub DESTROY { $_[0]->stop }

sub write_file {
    my ($path, $text) = @_;
    open(my $fh, '>', "$path.tmp") or die "$path: $!";
    print $fh $text;
    close $fh;
    rename("$path.tmp", $path) or die "$path: $!";
}

# The proxy's loop (in the child).  %peer maps each socket to its other
# end; %held are accepted connections with no upstream (blackholed).
sub serve {
    my ($listen, $target, $self) = @_;
    my $mode = 'forward';
    my ($accepted, %peer, %held, %sock) = (0);
    my $switch;
    local $SIG{USR1} = sub { $switch = 'blackhole' };
    local $SIG{USR2} = sub { $switch = 'forward' };
    local $SIG{TERM} = sub { POSIX::_exit(0) };
    my $drop = sub {
        my ($s) = @_;
        for my $x ($s, $peer{$s} ? $sock{$peer{$s}} : ()) {
            next unless $x;
            delete $peer{$x}; delete $held{$x}; delete $sock{$x};
            close $x;
        }
    };
    for (;;) {
        if ($switch) {
            $mode = $switch;
            undef $switch;
            if ($mode eq 'forward') {
                close $_ for map { $sock{$_} } keys %held;
                delete @sock{keys %held};
                %held = ();
            }
            write_file($self->{mode}, $mode);
        }
        my $sel = IO::Select->new($listen);
        # Blackholed: nothing is read, so nothing is relayed; the
        # kernel's buffers fill and the peers see silence.
        $sel->add(map { $sock{$_} } keys %peer) if $mode eq 'forward';
        my @ready = $sel->can_read(0.05);
        for my $s (@ready) {
            if ($s == $listen) {
                my $c = $listen->accept or next;
                write_file($self->{count}, ++$accepted);
                $sock{$c} = $c;
                if ($mode eq 'blackhole') {
                    $held{$c} = 1;
                    next;
                }
                my $u = IO::Socket::INET->new(PeerAddr => $target,
                                              Timeout => 2);
                if (!$u) { delete $sock{$c}; close $c; next; }
                $sock{$u} = $u;
                $peer{$c} = "$u";
                $peer{$u} = "$c";
                next;
            }
            next unless $sock{$s} && $peer{$s};
            my $n = sysread($s, my $buf, 65536);
            if (!$n) { $drop->($s); next; }
            my $to = $sock{$peer{$s}};
            my $off = 0;
            while ($off < $n) {
                my $w = syswrite($to, $buf, $n - $off, $off);
                if (!defined $w) { $drop->($s); last; }
                $off += $w;
            }
        }
    }
}

1;
