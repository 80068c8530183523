# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Issue #29, point 5: log redaction works on name families.  A list of
# real-world names of credentials and one-time codes (sign-in flows,
# SDKs, signed URLs) is redacted from the logged URL, a list of ordinary
# names is not, on both planes; the service receives every one as sent
# (only the key parameters leave the query: t/security/key_params.t).
# The rule itself, row by row: t/unit/test_redact.c.  Requests are
# written by hand (HTTP/1.0, so that no name is rewritten on the way).
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use Apache::TestRequest ();
use IO::Socket::INET;
use JSON::PP;
use Aura::Test qw(ANON_KEY console_token new_reqid wait_until
                  error_log_size error_log_since t_dir);

my $ANON = ANON_KEY;

# Real-world names of credentials and one-time codes: redacted from the
# logged URL.  Ordinary names: kept.  (The apikey spellings:
# t/security/key_params.t.)
my @secret_names = qw(
    otp_code passcode verification_code reset_code mfa_code magic_link
    otp totp one_time_code oneTimeCode sms_code email_code login_code
    confirmation_code activation_code recovery_code backup_codes auth_code
    authorization_code device_code user_code code code_verifier nonce pin
    user_pin security_code cvv cvc2 magic_token reset_token invite_token
    password new_password passwd pwd pass secret client_secret
    webhook_secret token access_token refresh_token id_token session_id
    PHPSESSID jsessionid sid signature sig X-Amz-Signature X-Amz-Credential
    X-Amz-Security-Token X-Goog-Signature hmac csrf_token _csrf
    authenticity_token SAMLResponse client_assertion oauth_verifier ticket
    2fa_code mfaToken otpCode verificationCode resetCode unlockCode
    passphrase private_key jwt twoFactorCode tfa 2fa emailOtp
);
my @plain_names = qw(
    page limit offset select order q search sort filter id user_id name
    lang locale country_code zip_code postal_code area_code currency_code
    language_code status_code error_code barcode opcode unicode codec
    passage passenger compass bypass_cache signal signup sidebar spin
    pinned optional footprint rootpath encoding description state
    redirect_uri callback format utm_source version width cursor
);

plan tests => 2 * (2 + @secret_names + @plain_names) + 1;

sub port { Apache::Test::config()->{vhosts}{$_[0]}{port} }

# One request, written as is: (status, {lower-cased headers}, body).
sub req {
    my ($vhost, $target, @headers) = @_;
    my $port = port($vhost);
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
                                  Timeout => 10) or return (0, {}, '');
    print $s "GET $target HTTP/1.0\r\nHost: 127.0.0.1:$port\r\n"
        . join('', map { "$_\r\n" } @headers) . "\r\n";
    my $resp = do { local $/; <$s> } // '';
    close $s;
    my ($head, $body) = split /\r\n\r\n/, $resp, 2;
    my ($code) = ($head // '') =~ m{^HTTP/1\.\d (\d{3})};
    return ($code // 0, {}, $body // '');
}

# What the example service received (X-Example-Headers: json).
sub received {
    my ($body) = @_;
    return eval { decode_json($body) } || {};
}

my $log0 = error_log_size();

# Redaction by name family, on both planes: one request each with every
# name; the service receives the query as sent, the logged URL (%r,
# %U%q, %q of t/conf/extra.conf.in's aura_query.log) hides exactly the
# secret ones.
my $dir = t_dir() . '/logs';
sub slurp { my $f = shift; local (@ARGV, $/) = $f; return -e $f ? <> : '' }
my @all_secrets;
for my $plane (qw(aura_data aura_mgmt)) {
    my (@params, %value);
    my $i = 0;
    for my $name (@secret_names, @plain_names) {
        $value{$name} = sprintf('V%03dq7ZpK2mWx%s', ++$i,
                                $plane eq 'aura_data' ? 'd' : 'm');
        push @params, "$name=$value{$name}";
    }
    push @all_secrets, @value{@secret_names};
    my $query = join('&', @params);
    my $id = new_reqid('redact');
    my @auth = $plane eq 'aura_data'
        ? ("apikey: $ANON")
        : ('Authorization: Bearer ' . console_token('user-member'),
           'X-Project-Id: proj-a');
    my ($code, undef, $body) = req($plane, "/v1/functions/r?$query", @auth,
                                   "X-Request-Id: $id",
                                   'X-Example-Headers: json');
    is($code, 200, "$plane: a query of " . @params . ' names: served');
    is_deeply(received($body)->{'Aura-Query'}, [$query],
              "$plane: the service receives it as sent");
    my $line = '';
    wait_until(5, sub {
        ($line) = grep { index($_, "$id|") == 0 }
                       split /\n/, slurp("$dir/aura_query.log");
        defined $line;
    });
    $line //= '';
    for my $name (@secret_names) {
        my $want = quotemeta("$name=REDACTED");
        ok((() = $line =~ /(?:^|[?&|])$want(?=[&|\s])/g) == 3
           && index($line, $value{$name}) < 0,
           "$plane: $name is redacted (%r, %U%q, %q)");
    }
    for my $name (@plain_names) {
        my $want = quotemeta("$name=$value{$name}");
        ok((() = $line =~ /(?:^|[?&|])$want(?=[&|\s])/g) == 3,
           "$plane: $name is logged as sent");
    }
}
my $logs = slurp("$dir/aura_query.log") . error_log_since($log0);
$logs .= slurp("$dir/$_") for qw(aura_access.log aura_access.json access_log);
my @shown = grep { index($logs, $_) >= 0 } @all_secrets;
is(scalar @shown, 0, 'no secret value in any log')
    or diag("shown: @shown[0 .. ($#shown < 9 ? $#shown : 9)]");
