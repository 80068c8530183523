# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# A private httpd with the modules, started and stopped: it serves while
# NATS is unreachable (children never block on it), and after a stop
# nothing of it is left: no process, no shared-memory object, no lock or
# socket file.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use IO::Socket::INET;
use Aura::Test qw(t_dir wait_until private_httpd free_port);

plan tests => 6;

my $dir = tempdir(CLEANUP => 1);
my $dead = free_port();   # nothing listens there
my ($port, $httpd) = private_httpd(dir => $dir, children => 2, body => <<"CONF");
AuraNATSServers nats://127.0.0.1:$dead
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane data
    <Location /health>
        SetHandler aura-health
        AuraPublic On
    </Location>
</VirtualHost>
CONF

# PostgreSQL's dynamic shared memory (PostgreSQL.<n>) comes and goes
# with the suite's key store, or any other cluster on the machine, while
# this test runs: not httpd's.
sub shm_objects {
    opendir(my $d, '/dev/shm') or return ();
    grep { !/^\./ && !/^PostgreSQL\.\d+$/ } readdir $d;
}
my %shm_before = map { $_ => 1 } shm_objects();

system("$httpd -k start");
ok(wait_until(10, sub { -s "$dir/httpd.pid" }), 'started with NATS unreachable');
sub get_health {
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port") or return '';
    print $s "GET /health?ready HTTP/1.0\r\n\r\n";
    local $/;
    return <$s> // '';
}
my $res = '';
wait_until(10, sub { ($res = get_health()) =~ m{^HTTP/1\.\d 503} });
like($res, qr{^HTTP/1\.\d 503}, 'serves at once: not ready while NATS is down');

open(my $fh, '<', "$dir/httpd.pid") or die $!;
chomp(my $pid = <$fh>);
close $fh;
system("$httpd -k stop");
ok(wait_until(15, sub { !kill(0, $pid) || zombie($pid) }), 'stopped');

sub zombie {
    my ($p) = @_;
    open(my $s, '<', "/proc/$p/stat") or return 1;
    my $stat = <$s>;
    return $stat =~ /^\d+ \(.*\) Z/;
}

my @left = grep { !$shm_before{$_} } shm_objects();
is("@left", '', 'no shared-memory object left in /dev/shm');
opendir(my $d, $dir) or die $!;
my @files = sort grep { !/^\.\.?$/ } readdir $d;
closedir $d;
is("@files", 'error.log httpd.conf', 'only the config and its log remain');
open($fh, '<', "$dir/error.log") or die $!;
my $log = do { local $/; <$fh> };
close $fh;
unlike($log, qr/AH00\d+: .*(segfault|exit signal)/i, 'no child crashed');
