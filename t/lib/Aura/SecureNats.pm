# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Aura::SecureNats: a secured NATS bus for the tests, made at test time.
#
#   pki($dir)              a CA, a server certificate for 127.0.0.1 and
#                          localhost, a client certificate, and a second
#                          CA that signed nothing of these; returns a hash
#                          of file names (ca, server_cert, server_key,
#                          route_cert, route_key, client_cert, client_key,
#                          other_ca)
#   nkey($kind)            a new nkey: ($seed, $public), kind O, A or U
#   operator()/account()/user()
#                          JWTs signed with the issuer's seed (Ed25519,
#                          t/services/aura_nkeygen), the claims of NATS
#                          decentralized auth (version 2)
#   creds($file, $jwt, $seed)   writes a creds file
#   nats_server(%o)        starts nats-server on a free loopback port
#                          with the given config body; returns
#                          { pid, port, log }; stop_server($s) stops it
#   secure_cluster($dir, $pub)
#                          the settings of a secured Aura::Cluster: TLS
#                          verifying clients (and on the routes), operator
#                          mode with a memory resolver; the gateway user
#                          may publish to $pub, the responder subscribe
#                          to it and answer (allow_responses; the gateway
#                          replies on _INBOX_gw, docs/nats.md); returns
#                          cluster_start()'s scheme, extra, cluster_extra,
#                          client_args and gateway_conf, and in `refused`
#                          the gateway directives of a wrong CA, a wrong
#                          seed and a revoked user
#
# Nothing needs nsc or node: Debian's nats-server, openssl and the
# gateway's own nkey code are enough.
package Aura::SecureNats;

use strict;
use warnings;

use Exporter 'import';
use JSON::PP ();
use MIME::Base64 qw(encode_base64url);
use IPC::Open2 qw(open2);
use Aura::Test qw(t_dir free_port wait_until);

our @EXPORT_OK = qw(pki nkey operator_jwt account_jwt user_jwt creds
                    nats_server stop_server secure_cluster);

sub sh {
    my ($cmd) = @_;
    system("$cmd >/dev/null 2>&1") == 0 or die "failed: $cmd";
}

sub ca {
    my ($dir, $name) = @_;
    sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
       . "-nodes -days 2 -subj /CN=$name -keyout $dir/$name.key "
       . "-out $dir/$name.pem");
}

sub leaf {
    my ($dir, $ca, $name, $ext) = @_;
    open(my $fh, '>', "$dir/$name.ext") or die "$dir/$name.ext: $!";
    print $fh "$ext\n";
    close $fh;
    sh("openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
       . "-subj /CN=$name -keyout $dir/$name.key -out $dir/$name.csr");
    sh("openssl x509 -req -days 2 -in $dir/$name.csr -CA $dir/$ca.pem "
       . "-CAkey $dir/$ca.key -CAcreateserial -extfile $dir/$name.ext "
       . "-out $dir/$name.pem");
}

sub pki {
    my ($dir) = @_;
    ca($dir, 'ca');
    ca($dir, 'other_ca');
    leaf($dir, 'ca', 'server', "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                               . "extendedKeyUsage=serverAuth");
    leaf($dir, 'ca', 'client', "extendedKeyUsage=clientAuth");
    # A route both accepts and opens TLS connections (verified both ways).
    leaf($dir, 'ca', 'route', "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                              . "extendedKeyUsage=serverAuth,clientAuth");
    return { ca => "$dir/ca.pem", other_ca => "$dir/other_ca.pem",
             server_cert => "$dir/server.pem", server_key => "$dir/server.key",
             route_cert => "$dir/route.pem", route_key => "$dir/route.key",
             client_cert => "$dir/client.pem", client_key => "$dir/client.key" };
}

sub nkeygen { t_dir() . '/services/aura_nkeygen' }

sub nkey {
    my ($kind) = @_;
    my $out = `@{[ nkeygen() ]} gen $kind`;
    my ($seed, $pub) = split ' ', $out;
    die "aura_nkeygen gen $kind failed" unless $pub;
    return ($seed, $pub);
}

my $jti = 0;

sub jwt {
    my ($iss_seed, $iss_pub, $sub, $name, $nats, %extra) = @_;
    my $claims = { jti => sprintf('AURATEST%d%d', $$, ++$jti), iat => int(time),
                   iss => $iss_pub, sub => $sub, name => $name,
                   nats => { %$nats, version => 2 }, %extra };
    my $signed = encode_base64url('{"typ":"JWT","alg":"ed25519-nkey"}') . '.'
                 . encode_base64url(JSON::PP->new->canonical->encode($claims));
    my $pid = open2(my $out, my $in, nkeygen(), 'sign', $iss_seed);
    print $in $signed;
    close $in;
    my $sig = <$out>;
    waitpid($pid, 0);
    chomp $sig if defined $sig;
    die 'aura_nkeygen sign failed' if $? || !$sig;
    return "$signed.$sig";
}

sub operator_jwt {
    my ($seed, $pub) = @_;
    return jwt($seed, $pub, $pub, 'aura-test-operator', { type => 'operator' });
}

# %o: revocations => { user public key => unix time }
sub account_jwt {
    my ($op_seed, $op_pub, $pub, %o) = @_;
    my $limits = { subs => -1, data => -1, payload => -1, imports => -1,
                   exports => -1, wildcards => JSON::PP::true, conn => -1,
                   leaf => -1 };
    return jwt($op_seed, $op_pub, $pub, 'aura-test-account',
               { type => 'account', limits => $limits,
                 $o{revocations} ? (revocations => $o{revocations}) : () });
}

# %o: pub => [subjects], sub => [subjects] (allowed), exp => unix time,
# resp => [max messages (-1: any), seconds] (nsc's --allow-pub-response
# and --response-ttl: publish on the reply subjects of messages received)
sub user_jwt {
    my ($acc_seed, $acc_pub, $pub, %o) = @_;
    return jwt($acc_seed, $acc_pub, $pub, 'aura-test-user',
               { type => 'user', subs => -1, data => -1, payload => -1,
                 pub => $o{pub} ? { allow => $o{pub} } : {},
                 sub => $o{sub} ? { allow => $o{sub} } : {},
                 $o{resp} ? (resp => { max => $o{resp}[0],
                                       ttl => $o{resp}[1] * 1_000_000_000 })
                          : () },
               $o{exp} ? (exp => $o{exp}) : ());
}

sub creds {
    my ($file, $jwt, $seed) = @_;
    open(my $fh, '>', $file) or die "$file: $!";
    print $fh "-----BEGIN NATS USER JWT-----\n$jwt\n"
              . "------END NATS USER JWT------\n\n"
              . "************************* IMPORTANT *************************\n"
              . "NKEY Seed printed below can be used to sign and prove identity.\n\n"
              . "-----BEGIN USER NKEY SEED-----\n$seed\n"
              . "------END USER NKEY SEED------\n";
    close $fh;
    chmod 0600, $file;
}

# %o: dir, name, body (the config without listen).
sub nats_server {
    my (%o) = @_;
    my $port = free_port();
    my $base = "$o{dir}/$o{name}";
    open(my $fh, '>', "$base.conf") or die "$base.conf: $!";
    print $fh "listen: \"127.0.0.1:$port\"\n$o{body}\n";
    close $fh;
    my $pid = fork();
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        open(STDOUT, '>', '/dev/null');
        open(STDERR, '>', "$base.stderr");
        exec('nats-server', '-c', "$base.conf", '-l', "$base.log")
            or exit 127;
    }
    require IO::Socket::INET;
    wait_until(10, sub {
        IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port)
    }) or die "nats-server $o{name} did not listen on $port: "
              . `tail -n 5 $base.log $base.stderr 2>&1`;
    return { pid => $pid, port => $port, log => "$base.log" };
}

sub secure_cluster {
    my ($d, $pub) = @_;
    my $pki = pki($d);
    my ($os, $op) = nkey('O');
    my ($as, $ap) = nkey('A');      # the gateway's and the responders'
    my ($bs, $bp) = nkey('A');      # an account that revoked a user
    my ($gs, $gp) = nkey('U');
    my ($ss, $sp) = nkey('U');
    my ($ws)      = nkey('U');      # a seed that is not the gateway's
    my ($rs, $rp) = nkey('U');
    my $inv = 'aura.keys.invalidate';
    my $gw_jwt = user_jwt($as, $ap, $gp, pub => [$pub, $inv],
                          sub => ['_INBOX_gw.>', $inv]);
    creds("$d/gateway.creds", $gw_jwt, $gs);
    creds("$d/wrongseed.creds", $gw_jwt, $ws);
    creds("$d/responder.creds",
          user_jwt($as, $ap, $sp, sub => [$pub], resp => [-1, 3600]), $ss);
    creds("$d/revoked.creds", user_jwt($bs, $bp, $rp), $rs);
    open(my $fh, '>', "$d/op.jwt") or die "$d/op.jwt: $!";
    print $fh operator_jwt($os, $op);
    close $fh;
    my $acc_a = account_jwt($os, $op, $ap);
    my $acc_b = account_jwt($os, $op, $bp,
                            revocations => { $rp => int(time) + 60 });
    my $tls = sub {
        my ($cert, $key) = @_;
        return "tls { cert_file: \"$cert\", key_file: \"$key\", "
               . "ca_file: \"$pki->{ca}\", verify: true, timeout: 5 }";
    };
    my $client = "AuraNATSCertificate $pki->{client_cert}\n"
                 . "AuraNATSCertificateKey $pki->{client_key}\n"
                 . "AuraNATSServerName localhost\n"
                 . "AuraNATSInboxPrefix _INBOX_gw\n";
    return {
        scheme => 'tls',
        extra => "operator: \"$d/op.jwt\"\nresolver: MEMORY\n"
                 . "resolver_preload: { $ap: \"$acc_a\", $bp: \"$acc_b\" }\n"
                 . $tls->($pki->{server_cert}, $pki->{server_key}),
        cluster_extra => $tls->($pki->{route_cert}, $pki->{route_key}),
        client_args => [ '-C', $pki->{ca}, '-c', $pki->{client_cert},
                         '-k', $pki->{client_key}, '-u', "$d/responder.creds" ],
        gateway_conf => "AuraNATSCAFile $pki->{ca}\n$client"
                        . "AuraNATSCredentials $d/gateway.creds\n",
        refused => {
            wrongca => "AuraNATSCAFile $pki->{other_ca}\n$client"
                       . "AuraNATSCredentials $d/gateway.creds\n",
            wrongseed => "AuraNATSCAFile $pki->{ca}\n$client"
                         . "AuraNATSCredentials $d/wrongseed.creds\n",
            revoked => "AuraNATSCAFile $pki->{ca}\n$client"
                       . "AuraNATSCredentials $d/revoked.creds\n",
        },
    };
}

sub stop_server {
    my ($s) = @_;
    return unless $s && $s->{pid};
    kill 'TERM', $s->{pid};
    waitpid($s->{pid}, 0);
    $s->{pid} = 0;
}

1;
