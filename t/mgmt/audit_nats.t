# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# AuraAuditSubject (docs/audit.md, "A copy off the host"): every audit
# record is also published on NATS, byte for byte the line in the file,
# once it is there; a safe method publishes nothing; with NATS down the
# record is in the file and the error log names its seq (AURA02060), and
# once NATS is back records are published again.  Invariant checked at
# the end: every record of the file arrived on the subject or is named
# by an AURA02060 line, never neither.
#
# On the code before: httpd refuses AuraAuditSubject ("Invalid
# command"), so nothing starts and every test fails.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use JSON::PP qw(decode_json);
use LWP::UserAgent;
use Aura::NatsSub;
use Aura::Test qw(aura_module console_token new_reqid wait_until
                  private_httpd nats_stop nats_start);

plan tests => 16;

my $dir = tempdir(CLEANUP => !$ENV{AURA_TEST_KEEP});
my $log = "$dir/audit.log";
my $subject = "test.audit.$$";
my ($port, $httpd) = private_httpd(dir => $dir, children => 2, threads => 4,
                                   body => <<"CONF");
LoadModule aura_mgmt_module @{[ aura_module('mgmt') ]}
AuraNATSServers $ENV{AURA_TEST_NATS_URL}
AuraDBParams "$ENV{AURA_TEST_PG_CONNINFO}"
AuraAuditLog $log gw-nats-1
AuraAuditSubject $subject
<VirtualHost 127.0.0.1:__PORT__>
    AuraPlane management
    AuraJWTKeyFile $ENV{AURA_TEST_JWT_DIR}/console.jwks
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
    my ($method) = @_;
    my $r = HTTP::Request->new($method => "$base/v1/projects/proj-a/things");
    $r->header(Authorization => "Bearer $member");
    $r->header('X-Request-Id' => new_reqid('audit-nats'));
    $r->content('{}') if $method ne 'GET';
    return $ua->request($r);
}
sub lines {
    open(my $fh, '<', $log) or return ();
    my @l = map { chomp; $_ } <$fh>;
    close $fh;
    return @l;
}
sub lines_at_least {
    my ($n) = @_;
    my @l;
    wait_until(20, sub { @l = lines(); @l >= $n });
    return @l;
}
sub seq_of { decode_json($_[0])->{seq} }
sub error_log {
    open(my $fh, '<', "$dir/error.log") or return '';
    local $/;
    my $t = <$fh>;
    close $fh;
    return $t;
}

ok(wait_until(20, sub {
       $ua->get("$base/health?ready")->code == 200
       && req('GET')->code == 200 }),
   'the management plane answers a member, NATS up');

my $sub = Aura::NatsSub->new($ENV{AURA_TEST_NATS_URL}, $subject);
is(req('POST')->code, 200, 'POST 1: 200');
is(req('PUT')->code, 200, 'PUT: 200');
is(req('GET')->code, 200, 'GET (records nothing)');
is(req('DELETE')->code, 200, 'DELETE: 200');
my @file = lines_at_least(3);
my @got = $sub->collect(3, 20);
is(scalar @file, 3, 'three records in the file');
is(scalar @got, 3, 'three messages on the subject');
my %by_seq = map { seq_of($_) => $_ } @got;
is_deeply([ map { $by_seq{ seq_of($_) } } @file ], \@file,
          'each message is byte for byte the line in the file');
is(decode_json($got[0])->{instance}, 'gw-nats-1',
   'the record names its instance');
is(scalar $sub->collect(4, 1), 3, 'the GET published nothing');
$sub->close;

# NATS down: the record is in the file, the error log names it.
nats_stop();
my $res = req('POST');
ok($res->code >= 500, 'NATS down: the mutation fails (' . $res->code . ')');
@file = lines_at_least(4);
my $down_seq = seq_of($file[-1]);
is($down_seq, 4, 'and is recorded in the file all the same');
ok(wait_until(10, sub { error_log() =~ /AURA02060: audit record $down_seq not published on \Q$subject\E/ }),
   "AURA02060 names record $down_seq");
nats_start();
$sub = Aura::NatsSub->new($ENV{AURA_TEST_NATS_URL}, $subject);

# Back: each child reconnects on its own; publish until one arrives.
my @after;
ok(wait_until(30, sub {
       req('POST');
       @after = $sub->collect(1, 0.5);
       @after > 0 }),
   'NATS back: records are published again');
@file = lines();
ok(seq_of($after[0]) > $down_seq, 'the first one after is a later record ('
   . seq_of($after[0]) . ')');

# Every record after the outage: on the subject, or named as lost.
my @late = $sub->collect(scalar(@file) - $down_seq, 5);
my %seen = map { seq_of($_) => 1 } @got, @late;
my $errors = error_log();
my @neither = grep {
    my $s = seq_of($_);
    !$seen{$s} && $errors !~ /AURA02060: audit record $s not published/
} @file;
is(scalar @neither, 0, 'no record is neither published nor logged as lost ('
   . scalar(@file) . ' records)') or diag "@neither";
