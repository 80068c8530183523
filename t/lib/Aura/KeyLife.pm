# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Aura::KeyLife: what the key lifecycle tests (issue #32) share: one
# request to a gateway on a port with a key, read over a raw HTTP/1.0
# socket (a private httpd speaks plain HTTP/1.1 whatever the pass), and
# the answer as "status" or "status type" (the problem type's last
# segment), e.g. "200", "401 key-expired".
package Aura::KeyLife;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';
use IO::Socket::INET;

our @EXPORT_OK = qw(answer answers);

sub answer {
    my ($port, $path, $key, @headers) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
                                  Timeout => 10) or return 'connect';
    my $extra = join('', map { "$_\r\n" } @headers);
    print $s "GET $path HTTP/1.0\r\nHost: localhost\r\n"
             . (defined $key ? "apikey: $key\r\n" : '') . "$extra\r\n";
    local $/;
    my $res = <$s> // '';
    close $s;
    my ($code) = $res =~ m{^HTTP/1\.\d (\d+)} or return 'none';
    my ($type) = $res =~ m{"type"\s*:\s*"/problems/([a-z-]+)"};
    return $code >= 400 && $type ? "$code $type" : $code;
}

# The answers to $n requests, joined by ' ' when they differ, else one.
sub answers {
    my ($n, @args) = @_;
    my %seen;
    $seen{ answer(@args) }++ for 1 .. $n;
    return join(' ', sort keys %seen);
}

1;
