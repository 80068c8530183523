# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Issue #16 point 2 (breaker half): late failures do not count against a
# breaker that has changed state since their requests began.  Two
# requests are admitted while the auth breaker (threshold 2, cooldown
# 3 s) is closed and hang (the example service delays its reply by a
# minute; /v1/brk/probelate/ has a 6 s budget).  Meanwhile two 503s open
# the breaker, and after the cooldown a probe's success closes it again.
# Then the two hanging requests end in 504: failures of the period before
# the breaker opened.  Before the fix they counted, and with a threshold
# of 2 they opened the healthy breaker again.  Now the breaker stays
# closed with no failure counted, and it takes exactly two new failures
# to open it.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Socket::INET;
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Time::HiRes qw(time sleep);
use Aura::Test qw(new_reqid exec_count wait_until);
use Aura::Load qw(health_json);

plan tests => 14;

Apache::TestRequest::module('aura_limits');
my $hostport = Apache::TestRequest::hostport();
my $base = "http://$hostport";
my $cooldown = 3;

sub breaker { health_json($base)->{breakers}{auth} }

sub send_raw {
    my ($path, %h) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => $hostport, Timeout => 15)
        or die "connect $hostport: $!";
    print {$s} "GET $path HTTP/1.1\r\nHost: $hostport\r\nConnection: close\r\n"
               . join('', map { "$_: $h{$_}\r\n" } sort keys %h) . "\r\n";
    return $s;
}

# The status line of a raw response (blocks until it comes).
sub status_of {
    my ($s) = @_;
    my $line = <$s> // '';
    close $s;
    return $line =~ m{^HTTP/1\.\d (\d{3})} ? $1 : 0;
}

ok(wait_until($cooldown + 3, sub { GET('/v1/brk/probe/x')->code == 200 }),
   'the auth breaker starts closed');
is(breaker()->{failures}, 0, 'with no failure counted');

# Two requests admitted now, answered late.
my @ids = map { new_reqid('late') } 1 .. 2;
my $started = time;
my @late = map { send_raw('/v1/brk/probelate/x', 'X-Example-Delay-Ms' => 60000,
                          'X-Request-Id' => $_) } @ids;
ok(wait_until(5, sub { exec_count($ids[0]) == 1 && exec_count($ids[1]) == 1 }),
   'both reached the service (admitted while closed)');

# Open, then close the breaker while they hang.
is_deeply([map { GET('/v1/brk/probe/x', 'X-Example-Status' => 503)->code }
           1 .. 2], [503, 503], 'two 503s');
my $opened = time;
is(breaker()->{state}, 'open', 'opened the breaker');
sleep($opened + $cooldown + 0.2 - time) if time < $opened + $cooldown + 0.2;
is(GET('/v1/brk/probe/x')->code, 200, 'after the cooldown, a good probe');
is(breaker()->{state}, 'closed', 'closed it again');
ok(time - $started < 5.5, 'before the hanging requests spent their budget');

# The late failures come in.
is_deeply([map { status_of($_) } @late], [504, 504],
          'the hanging requests end in 504');
my $b = breaker();
is($b->{state}, 'closed', 'the breaker stays closed');
is($b->{failures}, 0, 'their failures were not counted (another period)');

# The new period counts its own failures, from zero.
is(GET('/v1/brk/probe/x', 'X-Example-Status' => 503)->code, 503,
   'one new failure');
is(breaker()->{state}, 'closed', 'leaves it closed (threshold 2)');

# Leave it as found: the second failure opens it, a probe closes it.
GET('/v1/brk/probe/x', 'X-Example-Status' => 503);
ok(breaker()->{state} eq 'open'
   && wait_until($cooldown + 3, sub { GET('/v1/brk/probe/x')->code == 200 }),
   'the second one opens it; a probe closes it again');
