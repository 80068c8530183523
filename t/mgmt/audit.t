# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The audit log (AuraAuditLog, docs/audit.md): every mutating request of
# a verified console user on the management plane is written once, as a
# hash-chained JSON line, whichever child served it; safe methods and
# requests without a valid console token write nothing; a refused
# mutation (403) is written as refused.  build/aura-audit-verify accepts
# the log and catches an edited, a deleted and a swapped record in a
# copy; the chain survives a full restart (recovered from the file's
# last line) and a rotation (the new file's first record carries the
# old file's last hash).
#
# A private httpd with two children of four threads: eight clients, each
# request held 200 ms by the service, so that the two children serve at
# once (the access log's %P shows which served what).
#
# On the code before: httpd refuses AuraAuditLog ("Invalid command"), so
# nothing starts and every test fails.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Digest::SHA qw(sha256_hex);
use File::Copy qw(copy);
use File::Temp qw(tempdir);
use JSON::PP qw(decode_json);
use LWP::UserAgent;
use POSIX ();
use Aura::Test qw(t_dir aura_module console_token exec_count new_reqid
                  wait_until private_httpd);

plan tests => 42;

my $dir = tempdir(CLEANUP => !$ENV{AURA_TEST_KEEP});
my $log = "$dir/audit.log";
my $verify = t_dir() . '/../build/aura-audit-verify';
my ($port, $httpd) = private_httpd(dir => $dir, children => 2, threads => 4,
                                   body => <<"CONF");
LoadModule aura_mgmt_module @{[ aura_module('mgmt') ]}
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraDBParams "$ENV{AURA_TEST_PG_CONNINFO}"
AuraAuditLog $log gw-test-1
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane management
    AuraJWTKeyFile $ENV{AURA_TEST_JWT_DIR}/console.jwks
    # Eight requests at once on eight workers: no cap may refuse one.
    AuraPlaneMaxInFlight off
    AuraServiceMaxInFlight off
    CustomLog $dir/access.log "%P %{X-Request-Id}i %m %>s"
    <Location "/v1/projects/">
        AuraService control nats:aura.control
        AuraScope project-path
        AuraRequireRole member
    </Location>
    <Location "/health">
        SetHandler aura-health
        AuraPublic On
    </Location>
</VirtualHost>
CONF

system("$httpd -k start") == 0 or die 'httpd did not start';
END {
    local $?;
    system("$httpd -k stop") if -s "$dir/httpd.pid";
}

my $base = "http://127.0.0.1:$port";
my $member = console_token('user-member');
my $ua = LWP::UserAgent->new(timeout => 30);
sub req {
    my ($method, $path, $token, %h) = @_;
    my $r = HTTP::Request->new($method => "$base$path");
    $r->header(Authorization => "Bearer $token") if $token;
    $r->header($_ => $h{$_}) for keys %h;
    $r->content('{}') if $method ne 'GET' && $method ne 'HEAD';
    return $ua->request($r);
}
sub records {
    my ($file) = @_;
    my @r;
    open(my $fh, '<', $file) or return @r;
    @r = map { chomp; +{ line => $_, %{ decode_json($_) } } } <$fh>;
    close $fh;
    return @r;
}
# A record is written once the response is sent (log_transaction): the
# client can be faster.  Wait for the file to hold at least $n records.
sub records_at_least {
    my ($file, $n) = @_;
    my @r;
    wait_until(20, sub { @r = records($file); @r >= $n });
    return @r;
}
sub verify {
    my @args = @_;
    my $out = `$verify @args 2>&1`;
    return ($? >> 8, $out);
}

ok(wait_until(20, sub { req('GET', '/v1/projects/proj-a/x', $member)->code
                            == 200 }),
   'the management plane answers a member');

# Safe methods write nothing; neither does a mutation without a valid
# console token (no verified "who").
my $get_id = new_reqid('audit-get');
is(req('GET', '/v1/projects/proj-a/x', $member,
       'X-Request-Id' => $get_id)->code, 200, 'GET: 200');
is(req('HEAD', '/v1/projects/proj-a/x', $member)->code, 200, 'HEAD: 200');
my $anon_id = new_reqid('audit-anon');
is(req('POST', '/v1/projects/proj-a/x', undef,
       'X-Request-Id' => $anon_id)->code, 401, 'POST without a token: 401');

# Concurrent mutations from eight processes.
my $clients = 8;
my $per = 5;
my @pids;
for my $c (1 .. $clients) {
    my $pid = fork() // die "fork: $!";
    if (!$pid) {
        my $cua = LWP::UserAgent->new(timeout => 30);
        open(my $out, '>', "$dir/client.$c") or POSIX::_exit(1);
        for my $i (1 .. $per) {
            my $id = new_reqid("audit-$c");
            my $res = $cua->post("$base/v1/projects/proj-a/things",
                                 Authorization => "Bearer $member",
                                 'X-Request-Id' => $id,
                                 'x-example-delay-ms' => 200,
                                 Content => '{}');
            print $out "$id ", $res->code, "\n";
        }
        close $out;
        POSIX::_exit(0);
    }
    push @pids, $pid;
}
waitpid($_, 0) for @pids;
my %sent;
for my $c (1 .. $clients) {
    open(my $fh, '<', "$dir/client.$c") or die "client.$c: $!";
    while (<$fh>) {
        my ($id, $code) = split;
        $sent{$id} = $code;
    }
    close $fh;
}
is(scalar(keys %sent), $clients * $per, 'every client request was made');
is(scalar(grep { $_ != 200 } values %sent), 0, 'every one answered 200');

# PUT, PATCH, DELETE are mutations too; a 403 is recorded as refused.
my %other;
for my $m (qw(PUT PATCH DELETE)) {
    $other{$m} = new_reqid("audit-$m");
    is(req($m, '/v1/projects/proj-a/things/1', $member,
           'X-Request-Id' => $other{$m})->code, 200, "$m: 200");
}
my $refused_id = new_reqid('audit-403');
is(req('POST', '/v1/projects/proj-a/things', console_token('user-nobody'),
       'X-Request-Id' => $refused_id)->code, 403,
   'POST by a user of no organization: 403');

my $want = $clients * $per + 3 + 1;
my @recs = records_at_least($log, $want);
is(scalar(@recs), $want,
   "$want records: one per mutation, none for GET, HEAD and the 401");
my %by_id;
push @{ $by_id{$_->{request_id}} }, $_ for @recs;
is(scalar(grep { @{ $by_id{$_} || [] } != 1 } keys %sent), 0,
   'exactly one record per concurrent request id');
is(scalar(grep { exec_count($_) != 1 } keys %sent), 0,
   'and each was executed exactly once by the service');
is_deeply([ map { $_->{seq} } @recs ], [ 1 .. $want ],
          'seq 1.. in file order, no gap');
is($recs[0]{prev}, '0' x 64, 'the first record carries the genesis');
is(scalar(grep { $recs[$_]{prev} ne sha256_hex($recs[$_ - 1]{line}) }
                1 .. $#recs), 0,
   'each record carries the SHA-256 of the line before');
ok(!$by_id{$get_id} && !$by_id{$anon_id}, 'no record of the GET or the 401');
is_deeply([ map { scalar @{ $by_id{$other{$_}} || [] } } qw(PUT PATCH DELETE) ],
          [ 1, 1, 1 ], 'PUT, PATCH and DELETE recorded once each');

my ($one) = @{ $by_id{(sort keys %sent)[0]} };
is_deeply({ map { $_ => $one->{$_} }
            qw(instance actor role org project target client action method
               route service path status problem authorized outcome) },
          { instance => 'gw-test-1', actor => 'user-member',
            role => 'member', org => 'org-test', project => 'proj-a',
            target => 'proj-a', client => '127.0.0.1', action => 'request',
            method => 'POST', route => '/v1/projects/',
            service => 'control', path => '/v1/projects/proj-a/things',
            status => 200, problem => undef,
            authorized => JSON::PP::true, outcome => 'executed' },
          'an executed record: who, what, where, outcome');
like($one->{time}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\z/,
     'its time is RFC 3339 UTC with milliseconds');
my ($ref) = @{ $by_id{$refused_id} || [ {} ] };
is_deeply({ map { $_ => $ref->{$_} }
            qw(actor org project target status problem authorized outcome) },
          { actor => 'user-nobody', org => undef, project => undef,
            target => 'proj-a', status => 403, problem => 'forbidden',
            authorized => JSON::PP::false, outcome => 'refused' },
          'the refused record: who tried, on what, refused');

open(my $al, '<', "$dir/access.log") or die "access.log: $!";
my %pids_of;
while (<$al>) {
    my ($pid, $id) = split;
    $pids_of{$pid}++ if exists $sent{$id};
}
close $al;
cmp_ok(scalar(keys %pids_of), '>=', 2,
       'the concurrent requests were served by both children');

# The verifier: the log as written, then tampered copies.
my ($rc, $out) = verify($log);
is($rc, 0, 'the verifier accepts the log');
like($out, qr/^OK: $want records, seq 1 to $want, instance gw-test-1/m,
     'and counts its records');

my @lines = map { $_->{line} . "\n" } @recs;
sub tampered {
    my ($name, @l) = @_;
    open(my $fh, '>', "$dir/$name") or die $!;
    print $fh @l;
    close $fh;
    return "$dir/$name";
}
my @edited = @lines;
$edited[4] =~ s/"status":200/"status":201/ or die 'nothing to edit';
($rc, $out) = verify(tampered('edited.log', @edited));
is($rc, 1, 'an edited record fails');
like($out, qr/line 5 \(seq 5\) was edited/, 'and is named (line 5)');

my @deleted = @lines;
splice(@deleted, 6, 1);
($rc, $out) = verify(tampered('deleted.log', @deleted));
is($rc, 1, 'a deleted record fails');
like($out, qr/line 7 \(seq 8\): expected seq 7: record seq 7 removed/,
     'and the gap is named');

my @swapped = @lines;
@swapped[2, 3] = @swapped[3, 2];
($rc, $out) = verify(tampered('swapped.log', @swapped));
is($rc, 1, 'two swapped records fail');
like($out, qr/line 3 \(seq 4\): expected seq 3: records reordered/,
     'and the reordering is named');

# A full restart: the shared segment is gone, the chain continues from
# the file's last line.
system("$httpd -k stop") == 0 or die 'httpd did not stop';
ok(wait_until(20, sub { !-e "$dir/httpd.pid" }), 'stopped');
system("$httpd -k start") == 0 or die 'httpd did not start';
# From here on every mutation the gateway answered is counted: each
# must have one record (a try before NATS is up is a recorded 503).
my $made = 0;
sub mutate {
    my $res = req('POST', '/v1/projects/proj-a/x', $member);
    $made++ if $res->header('X-Request-Id');
    return $res->code;
}
sub all_records { return (records("$log.1"), records($log)) }
ok(wait_until(20, sub { mutate() == 200 }),
   'restarted: a mutation after the restart');
@recs = records_at_least($log, $want + 1);
is_deeply([ $recs[$want]{seq}, $recs[$want]{prev} ],
          [ $want + 1, sha256_hex($recs[$want - 1]{line}) ],
          'its record continues the chain of the file');

# A rotation (logrotate: rename, then a graceful restart): the new file
# starts with a record whose prev is the old file's last hash.
ok(wait_until(20, sub { scalar(my @r = records($log)) == $want + $made }),
   'every mutation so far recorded, before the rotation');
rename($log, "$log.1") or die "rename: $!";
system("$httpd -k graceful") == 0 or die 'graceful failed';
# A child of the old generation (told to stop) may still take a
# mutation, and write it to the old file: try until one lands in the
# new file.
ok(wait_until(20, sub { -e $log
                        && req('GET', '/v1/projects/proj-a/x', $member)->code
                           == 200
                        && mutate() == 200
                        && wait_until(5, sub {
                               scalar(my @r = records($log)) > 0 }) }),
   'after the rotation, records go to the new file');
ok(wait_until(20, sub { scalar(my @r = all_records()) == $want + $made }),
   'every mutation recorded once across the two files');
my @old = records("$log.1");
my @new = records($log);
is($new[0]{prev}, sha256_hex($old[-1]{line}),
   'its first record carries the rotated file\'s last hash');
($rc, $out) = verify("$log.1", $log);
is($rc, 0, 'the two files verify as one chain') or diag($out);

# A write cut short (a crash in the middle of a line): the next record
# ends that line, continues from the last complete record, and the
# error log says so; the verifier points at the broken line.
open(my $fh, '>>', $log) or die $!;
print $fh '{"seq":' . ($new[-1]{seq} + 1) . ',"prev":"ab';
close $fh;
ok(wait_until(20, sub { mutate() == 200 }), 'a mutation after the cut');
my (@raw, $last);
wait_until(20, sub {
    open(my $in, '<', $log) or die $!;
    @raw = <$in>;
    close $in;
    $last = eval { decode_json($raw[-1]) };
    return $last && $raw[-1] =~ /\n\z/;
});
is_deeply([ $last->{seq}, $last->{prev} ],
          [ $new[-1]{seq} + 1, sha256_hex($new[-1]{line}) ],
          'it continues from the last complete record, on its own line');
my $errors = '';
wait_until(20, sub {
    open(my $in, '<', "$dir/error.log") or die $!;
    $errors = do { local $/; <$in> };
    close $in;
    return $errors =~ /AURA02000/;
});
like($errors, qr/AURA02000: audit log \Q$log\E: its last line is not a complete record/,
     'the error log says the last line was broken (AURA02000)');
($rc, $out) = verify($log);
like($out, qr/^FAIL: \Q$log\E line @{[ scalar(@raw) - 1 ]}: not a record/m,
     'the verifier points at the broken line');
