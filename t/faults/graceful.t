# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Reloads are invisible (issue #16 point 7): ten graceful restarts
# (SIGUSR1 to the parent, what `apachectl graceful` sends) under light
# load from forked clients, each a new connection per request, on a NATS
# route and on the HTTP route:
# - every restart takes effect (a child of the new generation answers);
# - zero failed requests, and no pause of 2 s or more in the answers to
#   the fast clients while slow requests (3 s) keep each old
#   generation's children alive a while.  The old children stop
#   accepting at once, and httpd's parent starts the new generation at
#   its next once-a-second maintenance tick: a pause of up to about 1 s
#   per graceful is httpd's own.  With ServerLimit equal to the children
#   needed, the new generation also waits for the old one's slots: the
#   pause lasts as long as the slow requests (and AH03490 is logged);
# - an SSE stream through the HTTP route opened before the first
#   graceful still delivers events after the last one and ends normally
#   (its old child keeps its slot until the stream ends).
# build/chaos graceful runs the full version: 100 gracefuls with an SSE
# stream and a WebSocket open, throughput in 100 ms buckets, RSS.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use IO::Select;
use LWP::UserAgent;
use POSIX ();
use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Time::HiRes qw(time sleep);
use Aura::Test qw(ANON_KEY json_body wait_until t_dir error_log_size
                  error_log_since);
use Aura::Stream qw(open_stream read_chunked);

plan tests => 8;

Apache::TestRequest::module('aura_data');
my $hp = Apache::TestRequest::hostport();
my $GRACEFULS = 10;

sub health { json_body(GET('/health')) || {} }

open(my $fh, '<', t_dir() . '/logs/httpd.pid') or die "httpd.pid: $!";
chomp(my $ppid = <$fh>);
close $fh;
my $log_from = error_log_size();

# --- the SSE stream: 120 events 250 ms apart (30 s), read by a child
# that writes "event <i> <time>" per event, then "end complete" or
# "end cut".
pipe(my $sse_r, my $sse_w) or die "pipe: $!";
my $sse_pid = fork() // die "fork: $!";
if (!$sse_pid) {
    close $sse_r;
    $sse_w->autoflush(1);
    my ($sock, $status, $h, $rest) = eval {
        open_stream($hp, 'GET', '/v1/realtime/sse/120/250',
                    apikey => ANON_KEY);
    };
    print $sse_w "status ", $status // 0, "\n";
    if (($status // 0) == 200) {
        my $data = '';
        my ($bytes, $complete) = eval {
            read_chunked($sock, $rest, sub {
                $data .= $_[0];
                while ($data =~ s/\Adata: tick (\d+)\n\n//) {
                    printf $sse_w "event %d %.3f\n", $1, time;
                }
            });
        };
        print $sse_w $complete ? "end complete\n" : "end cut\n";
    }
    close $sse_w;
    POSIX::_exit(0);
}
close $sse_w;

# The first event: the stream is open before the first graceful.
my $sse_log = '';
# Waits up to $secs for the reader's lines; false once it has closed.
sub sse_read {
    my ($secs) = @_;
    return 1 unless IO::Select->new($sse_r)->can_read($secs);
    my $n = sysread($sse_r, $sse_log, 4096, length $sse_log);
    return $n ? 1 : 0;
}
my $t_open = time + 10;
while ($sse_log !~ /^event 0 /m && time < $t_open) {
    last unless sse_read(0.5);
}
like($sse_log, qr/^status 200\n(?s:.*)^event 0 /m,
     'an SSE stream is open before the first graceful');

# --- the load: 4 fast clients, a new connection per request,
# alternating the NATS route and the HTTP route every 20 ms, and 2 slow
# ones (3 s NATS requests, so that an old child still has a request
# in flight after each graceful), until told to stop; each writes
# "<end time> <status> <path>" per answer.
my $stop = t_dir() . "/logs/graceful-stop.$$";
unlink $stop;
my @clients;
for my $i (1 .. 6) {
    my $slow = $i > 4;
    pipe(my $r, my $w) or die "pipe: $!";
    my $pid = fork() // die "fork: $!";
    if (!$pid) {
        close $r;
        my $ua = LWP::UserAgent->new(keep_alive => 0, timeout => 30);
        my $deadline = time + 120;
        my $n = 0;
        my $out = '';
        until (-e $stop || time > $deadline) {
            my $path = $n++ % 2 && !$slow ? '/v1/storage/object/g.txt'
                                          : '/v1/functions/echo';
            my $res = $ua->get("http://$hp$path", apikey => ANON_KEY,
                               $slow ? ('X-Example-Delay-Ms' => 3000) : ());
            $out .= sprintf("%.3f %d %s %s\n", time, $res->code, $path,
                            $slow ? 'slow' : 'fast');
            sleep 0.02;
        }
        print $w $out;
        close $w;
        POSIX::_exit(0);
    }
    close $w;
    push @clients, [$pid, $r];
}
sleep 1;

# --- ten gracefuls, each waited for: a child of the new generation
# answers /health.
my $took_effect = 0;
my $g_start = time;
for my $i (1 .. $GRACEFULS) {
    my $before = health()->{generation} // -1;
    kill('USR1', $ppid) or last;
    my $after;
    wait_until(30, sub {
        $after = health()->{generation} // -1;
        $after > $before;
    }) or last;
    $took_effect++;
    sse_read(0);
    # Shorter than a slow request: each graceful finds one in flight.
    sleep 0.5;
}
my $g_end = time;
is($took_effect, $GRACEFULS, "$GRACEFULS gracefuls, each answered by the"
   . ' new generation');
sleep 1;

open($fh, '>', $stop) or die "$stop: $!";
close $fh;
my (@answers, %codes, @bad, $total);
for my $c (@clients) {
    my $fh = $c->[1];
    while (my $line = <$fh>) {
        my ($t, $code, $path, $kind) = split ' ', $line;
        $total++;
        push @answers, $t if $kind eq 'fast';
        $codes{$code}++;
        push @bad, "$code $path" if $code != 200 && @bad < 5;
    }
    waitpid($c->[0], 0);
}
unlink $stop;
cmp_ok(scalar(@answers), '>=', 100, 'the clients were answered ('
       . ($total // 0) . ' requests during the gracefuls)');
is(($total // 0) - ($codes{200} // 0), 0,
   'zero failed requests' . (@bad ? " (e.g. @bad)" : ''));
# The fast clients' answers: a pause is the new generation waiting for
# a slot.
@answers = sort { $a <=> $b } @answers;
my $gap = 0;
for my $i (1 .. $#answers) {
    my $d = $answers[$i] - $answers[$i - 1];
    $gap = $d if $d > $gap;
}
cmp_ok($gap, '<', 2, sprintf('no pause in the answers of 2 s or more'
       . ' (longest %.2f s, %d gracefuls in %.1f s)', $gap, $GRACEFULS,
       $g_end - $g_start));

# --- the stream: events after the last graceful, then its normal end.
my $wait_end = time + 40;
while ($sse_log !~ /^end /m && time < $wait_end) {
    last unless sse_read(1);
}
waitpid($sse_pid, 0);
my @late = grep { $_ > $g_end } $sse_log =~ /^event \d+ (\S+)$/mg;
cmp_ok(scalar(@late), '>', 0, 'the SSE stream delivered '
       . scalar(@late) . ' events after the last graceful');
like($sse_log, qr/^end complete$/m, 'and ended normally (last chunk)');

my ($full) = error_log_since($log_from) =~ /^(.*AH03490.*)$/m;
ok(!$full, 'the scoreboard always had room for the new generation (no'
   . ' AH03490)') or diag($full);
