# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Aura::Stream: what the streaming tests share: the byte pattern of
# streamed bodies, a raw HTTP/1.1 client that reads a body at its own
# pace, and the summed memory of the test server's child processes.
package Aura::Stream;

use strict;
use warnings;

use Exporter 'import';
use IO::Select;
use IO::Socket::INET;
use Aura::Test qw(t_dir);

our @EXPORT_OK = qw(pattern_ok pattern_bytes open_stream read_chunked
                    httpd_children rss_sum);

# Byte i of every streamed body is (i * 31 + 7) & 0xff: one period of 256
# bytes, repeated far enough to cover any piece the reader hands over.
my $period = join('', map { chr(($_ * 31 + 7) & 0xff) } 0 .. 255);
my $pattern = $period x (65536 / 256 + 2);

# Checks $data as the body bytes at $offset; false on the first mismatch.
sub pattern_ok {
    my ($data, $offset) = @_;
    for (my $at = 0; $at < length $data; $at += 65536) {
        my $piece = substr($data, $at, 65536);
        return 0 unless $piece eq substr($pattern, ($offset + $at) % 256,
                                         length $piece);
    }
    return 1;
}

# --- memory of the httpd children ------------------------------------------

sub httpd_children {
    open(my $fh, '<', t_dir() . '/logs/httpd.pid') or return ();
    my $parent = <$fh>;
    close $fh;
    chomp $parent;
    my @kids;
    for my $dir (glob '/proc/[0-9]*') {
        open(my $st, '<', "$dir/status") or next;
        local $/;
        my $text = <$st>;
        push @kids, $1 if $text =~ /^PPid:\s*\Q$parent\E$/m
                          && $dir =~ m{/(\d+)$};
    }
    return @kids;
}

# Summed VmRSS of @pids in bytes.
sub rss_sum {
    my $sum = 0;
    for my $pid (@_) {
        open(my $st, '<', "/proc/$pid/status") or next;
        local $/;
        my $text = <$st>;
        $sum += $1 * 1024 if $text =~ /^VmRSS:\s*(\d+)\s*kB/m;
    }
    return $sum;
}

# --- a raw HTTP/1.1 client that reads a body at its own pace -------------

# Sends "$method $path" with %hdr to $hostport; returns ($sock, status,
# {lower-cased header => value}, the bytes read past the head).
sub open_stream {
    my ($hostport, $method, $path, %hdr) = @_;
    my $sock = IO::Socket::INET->new(PeerAddr => $hostport, Timeout => 10)
        or die "connect: $!";
    binmode $sock;
    my $req = "$method $path HTTP/1.1\r\nHost: localhost\r\n";
    $req .= "$_: $hdr{$_}\r\n" for sort keys %hdr;
    print $sock "$req\r\n";
    my $buf = '';
    while ($buf !~ /\r\n\r\n/) {
        IO::Select->new($sock)->can_read(30) or die "no response head";
        my $n = sysread($sock, $buf, 65536, length $buf);
        die "connection closed before the head" unless $n;
    }
    my ($head, $rest) = split /\r\n\r\n/, $buf, 2;
    my ($status) = $head =~ m{^HTTP/1\.1 (\d{3}) };
    my %h;
    $h{lc $1} = $2 while $head =~ /^([^:\r\n]+):\s*([^\r\n]*)/mg;
    return ($sock, $status, \%h, $rest);
}

# De-chunks the body, handing each piece (at most 64 KiB) to $cb->(data,
# offset).  Returns (bytes, complete): complete when the last chunk came,
# 0 when the connection closed before it.
sub read_chunked {
    my ($sock, $buf, $cb) = @_;
    my ($state, $left, $bytes) = ('size', 0, 0);
    for (;;) {
        if ($state eq 'size' && $buf =~ s/\A([0-9a-fA-F]+)[^\r\n]*\r\n//) {
            $left = hex $1;
            $state = $left ? 'data' : 'trailer';
            next;
        }
        if ($state eq 'data' && length $buf) {
            my $n = $left < length $buf ? $left : length $buf;
            $n = 65536 if $n > 65536;
            $cb->(substr($buf, 0, $n, ''), $bytes);
            $bytes += $n;
            $left -= $n;
            $state = 'crlf' unless $left;
            next;
        }
        if ($state eq 'crlf' && length($buf) >= 2) {
            die "bad chunk framing" unless substr($buf, 0, 2, '') eq "\r\n";
            $state = 'size';
            next;
        }
        if ($state eq 'trailer' && $buf =~ /\A\r\n/) {
            return ($bytes, 1);
        }
        IO::Select->new($sock)->can_read(30) or die "body stalled";
        my $n = sysread($sock, $buf, 65536, length $buf);
        return ($bytes, 0) unless $n;
    }
}

# $len bytes of the pattern starting at body offset $offset.
sub pattern_bytes {
    my ($offset, $len) = @_;
    my $out = '';
    while (length $out < $len) {
        my $n = $len - length $out;
        $n = 65536 if $n > 65536;
        $out .= substr($pattern, ($offset + length $out) % 256, $n);
    }
    return $out;
}

1;
