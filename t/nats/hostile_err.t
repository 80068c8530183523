# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# A hostile NATS server (or whatever answers on its port) cannot write
# into httpd's error log what it likes (issue #18's review): a fake
# server here speaks just enough of the protocol (INFO with a nonce,
# then -ERR to every CONNECT) and its -ERR text carries terminal escape
# sequences, a bell, a tab and 400 bytes.  The gateway, on a secured bus
# (AuraNATSNKeySeed), answers its NATS route with 503 problem+json and
# logs AURA01320 "authorization violation" with the server's text as
# one printable line: every control character is '?', the text is cut
# at 255 bytes, no byte of the log is a control character but the line
# ends.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use IO::Socket::INET;
use LWP::UserAgent;
use POSIX ();
use Aura::Test qw(private_httpd wait_until problem_ok free_port);
use Aura::SecureNats qw(nkey);

plan tests => 9;

my $d = tempdir(CLEANUP => 1);
chmod 0755, $d;

# --- the fake server --------------------------------------------------------
my $evil = "Authorization Violation \e]0;pwned\a \e[31mFORGED\tAURA99999 "
           . ('x' x 400);
my $port = free_port();
my $listen = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
                                   LocalPort => $port, Listen => 16,
                                   ReuseAddr => 1) or die "listen: $!";
my $fake = fork();
die "fork: $!" unless defined $fake;
if (!$fake) {
    local $SIG{ALRM} = sub { POSIX::_exit(0) };
    alarm 120;
    while (my $c = $listen->accept) {
        $c->autoflush(1);
        print $c 'INFO {"server_id":"FAKE","version":"2.9.10","proto":1,'
                 . '"headers":true,"max_payload":1048576,'
                 . '"auth_required":true,"nonce":"bm9uY2U"}' . "\r\n";
        my $line = <$c>;            # CONNECT {...}
        print $c "-ERR '$evil'\r\n" if defined $line;
        close $c;
    }
    POSIX::_exit(0);
}
close $listen;

# --- the gateway ------------------------------------------------------------
my ($seed) = nkey('U');
open(my $fh, '>', "$d/gw.nk") or die "$d/gw.nk: $!";
print $fh "$seed\n";
close $fh;
my $dir = "$d/httpd";
mkdir $dir or die "$dir: $!";
my ($hport, $httpd) = private_httpd(dir => $dir, children => 1, body => <<"CONF");
AuraNATSServers nats://127.0.0.1:$port
AuraNATSNKeySeed $d/gw.nk
AuraNATSReconnectWait 100ms
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    <Location "/v1/x/">
        AuraService functions nats:aura.hostile.test
        AuraPublic On
        AuraTimeout 2s
    </Location>
</VirtualHost>
CONF
system("$httpd -k start") == 0 or die 'httpd did not start';
END {
    local $?;
    system("$httpd -k stop") if $httpd && -s "$dir/httpd.pid";
    if ($fake) { kill 'TERM', $fake; waitpid($fake, 0) }
}

sub slurp {
    open(my $fh, '<', $_[0]) or return '';
    local $/;
    return <$fh>;
}

my $ua = LWP::UserAgent->new(timeout => 10);
my $res;
ok(wait_until(10, sub {
       ($res = $ua->get("http://127.0.0.1:$hport/v1/x/y"))->code == 503 }),
   'the NATS route answers 503 while the server refuses the gateway')
    or diag($res->status_line);
problem_ok($res, 503, 'upstream-error', 'as problem+json');
my $log = "$dir/error.log";
my $line;
ok(wait_until(10, sub {
       ($line) = slurp($log) =~ /^(.*AURA01320.*)$/m; defined $line }),
   'AURA01320 logged') or diag(slurp($log));
$line //= '';
# nats.c puts its own "(conn.c:<line>): " in front and "..." after 256
# bytes.
like($line, qr/authorization violation .*Authorization Violation \?\]0;pwned\? \?\[31mFORGED\?AURA99999 x+/,
     "the server's text, each control character as '?'");
my ($text) = $line =~ /Authentication Violation \((.*)\); NATS routes answer 503$/;
my $len = length($text // '');
ok($len > 200 && $len <= 255, "cut at 255 bytes ($len)");
unlike(slurp($log), qr/[\x00-\x09\x0b-\x1f\x7f]/,
       'no control character anywhere in the error log');
