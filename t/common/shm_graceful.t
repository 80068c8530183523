# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The shared segment: one for all child processes (a counter written by
# both children is seen whole by each), and the same one after
# `apachectl -k graceful` (same identity, counters kept), never rebuilt
# while its size is unchanged.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest qw(GET);
use Aura::Test qw(json_body wait_until t_dir error_log_size error_log_since);

plan tests => 10;

Apache::TestRequest::module('aura_data');

sub health { json_body(GET('/health')) || {} }

# Both children count into the same counter: every response reports the
# segment's total, whichever child answers, and it only grows.
# (The kernel picks which child accepts a connection: keep asking, up to
# a bound, until both children have answered.)
my (%pids, @seen);
for my $i (1 .. 400) {
    my $h = health();
    $pids{ $h->{pid} }++ if $h->{pid};
    push @seen, $h->{shm}{requests} || 0;
    last if keys(%pids) >= 2 && $i >= 40;
}
my @sorted = sort { $a <=> $b } @seen;
cmp_ok(scalar(keys %pids), '>=', 2, 'requests were served by two children');
is("@seen", "@sorted", 'the shared counter grows across children');
cmp_ok($seen[-1] - $seen[0], '>=', @seen - 1,
       'no request lost between children (every one counted)');

my $before = health();
my $log_from = error_log_size();

open(my $fh, '<', t_dir() . '/logs/httpd.pid') or die "httpd.pid: $!";
chomp(my $ppid = <$fh>);
close $fh;
ok(kill('USR1', $ppid), 'graceful restart signalled');

my $after;
ok(wait_until(30, sub {
       $after = health();
       ($after->{generation} // -1) > $before->{generation};
   }), 'a child of the new generation answers');

is($after->{shm}{id}, $before->{shm}{id}, 'same segment after graceful');
is($after->{shm}{created}, $before->{shm}{created}, 'same creation time');
is($after->{shm}{configs}, $before->{shm}{configs} + 1,
   'the new generation found the retained segment');
cmp_ok($after->{shm}{requests}, '>', $before->{shm}{requests},
       'the counter kept its value across the restart');
unlike(error_log_since($log_from), qr/AURA0000[24]/,
       'not rebuilt, not re-created');
