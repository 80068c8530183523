# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Bad configuration is refused at config time (`apache2 -t`), with a
# message that names the directive, the bad value and what is accepted,
# and the file and line it came from.
use strict;
use warnings FATAL => 'all';

use FindBin;
use lib "$FindBin::Bin/../lib";

use Test::More import => ['!plan'];
use Apache::Test qw(-withtestmore);
use File::Temp qw(tempdir);
use Aura::Test qw(aura_module t_dir);

my $top = t_dir() . '/..';
my $httpd = Apache::Test::vars('httpd');
my $modules = Apache::Test::vars('src_dir') || '/usr/lib/apache2/modules';

my @cases = (
    [ 'AuraPlane outside a VirtualHost', "AuraPlane data\n",
      qr/AuraPlane must be inside a <VirtualHost>/ ],
    [ 'AuraPlane with an unknown plane',
      "<VirtualHost 127.0.0.1:1>\nAuraPlane public\n</VirtualHost>\n",
      qr/AuraPlane: 'public' is not one of: data \| management \| none/ ],
    [ 'AuraService with an unknown service',
      "<Location /x>\nAuraService billing nats:aura.billing\n</Location>\n",
      qr/AuraService: 'billing' is not one of: auth \| db/ ],
    [ 'AuraService with a bad upstream',
      "<Location /x>\nAuraService db ftp://x\n</Location>\n",
      qr/AuraService: upstream 'ftp:\/\/x' must be nats:<subject> or an http/ ],
    [ 'AuraService with a wildcard subject',
      "<Location /x>\nAuraService db nats:aura.*\n</Location>\n",
      qr/'aura\.\*' is not a NATS subject/ ],
    [ 'AuraTimeout of zero', "<Location /x>\nAuraTimeout 0\n</Location>\n",
      qr/AuraTimeout: '0' is not a duration between 1 ms and 3600 s/ ],
    [ 'AuraTimeout above the bound',
      "<Location /x>\nAuraTimeout 2h\n</Location>\n",
      qr/AuraTimeout: '2h' is not a duration/ ],
    [ 'AuraNATSServers in a VirtualHost',
      "<VirtualHost 127.0.0.1:1>\nAuraNATSServers nats://h:1\n</VirtualHost>\n",
      qr/AuraNATSServers cannot occur within <VirtualHost> section/ ],
    [ 'AuraNATSServers with a non-NATS URL',
      "AuraNATSServers http://h:1\n",
      qr/AuraNATSServers: 'http:\/\/h:1' is not a NATS URL/ ],
    [ 'AuraNATSMaxReconnect with a word',
      "AuraNATSMaxReconnect forever\n",
      qr/AuraNATSMaxReconnect: 'forever' is not 'unlimited' or a number/ ],
    [ 'AuraService in .htaccess-style context (server level)',
      "AuraService db nats:aura.db\n",
      qr/AuraService not allowed here/ ],
    [ 'AuraMaxConnectionsPerAddress with a word',
      "AuraMaxConnectionsPerAddress many\n",
      qr/AuraMaxConnectionsPerAddress: 'many' is not auto, off or a number between 1 and 1000000/ ],
    [ 'AuraMaxConnectionsPerAddress of zero',
      "<VirtualHost 127.0.0.1:1>\nAuraMaxConnectionsPerAddress 0\n</VirtualHost>\n",
      qr/AuraMaxConnectionsPerAddress: '0' is not auto, off or a number/ ],
    [ 'AuraMaxReadingConnections with a word',
      "AuraMaxReadingConnections most\n",
      qr/AuraMaxReadingConnections: 'most' is not auto, off or a number between 1 and 1000000/ ],
    [ 'AuraReadingIPv6Prefix too narrow',
      "AuraReadingIPv6Prefix 8\n",
      qr/AuraReadingIPv6Prefix: '8' is not a number between 16 and 128/ ],
    [ 'AuraTraceEndpoint not a URL', "AuraTraceEndpoint 127.0.0.1:4318\n",
      qr/AuraTraceEndpoint: '127\.0\.0\.1:4318' is not an http:\/\/ or https:\/\/ URL/ ],
    [ 'AuraAuditLog in a VirtualHost',
      "<VirtualHost 127.0.0.1:1>\nAuraAuditLog /tmp/x.log\n</VirtualHost>\n",
      qr/AuraAuditLog cannot occur within <VirtualHost> section/ ],
    [ 'AuraAuditLog with an instance id of 256 characters',
      "AuraAuditLog /tmp/x.log " . ('i' x 256) . "\n",
      qr/AuraAuditLog: the instance id must be 1 to 255 characters/ ],
    [ 'AuraAuditSubject without AuraAuditLog', "AuraAuditSubject aura.audit\n",
      qr/AuraAuditSubject aura\.audit needs AuraAuditLog/ ],
    [ 'AuraAuditSubject with a wildcard',
      "AuraAuditLog /tmp/x.log\nAuraAuditSubject aura.*\n",
      qr/AuraAuditSubject: 'aura\.\*' is not a literal NATS subject/ ],
    [ 'AuraTraceEndpoint in a VirtualHost',
      "<VirtualHost 127.0.0.1:1>\nAuraTraceEndpoint http://127.0.0.1:4318\n</VirtualHost>\n",
      qr/AuraTraceEndpoint cannot occur within <VirtualHost> section/ ],
    [ 'AuraTraceSampleRatio above 1', "AuraTraceSampleRatio 1.5\n",
      qr/AuraTraceSampleRatio: '1\.5' is not a number between 0 and 1/ ],
    [ 'AuraTraceResource without a value', "AuraTraceResource service.name\n",
      qr/AuraTraceResource: 'service\.name' is not key=value/ ],
    [ 'AuraTraceCACertificateFile unreadable',
      "AuraTraceCACertificateFile /nonexistent/ca.pem\n",
      qr/AuraTraceCACertificateFile: cannot read '\/nonexistent\/ca\.pem'/ ],
    [ 'AuraTraceTrustParent with a host name',
      "AuraTraceTrustParent 10.0.0.0/8 proxy.example\n",
      qr/AuraTraceTrustParent: 'proxy\.example' is not an IP address or network/ ],
    [ 'AuraTraceTrustParent: none with an address',
      "<VirtualHost 127.0.0.1:1>\nAuraTraceTrustParent none 10.0.0.1\n</VirtualHost>\n",
      qr/AuraTraceTrustParent: 'none' and 'any' stand alone in a scope.*'10\.0\.0\.1' follows/ ],
    [ 'AuraTraceTrustParent: an address, then any on another line',
      "AuraTraceTrustParent 10.0.0.1\nAuraTraceTrustParent any\n",
      qr/AuraTraceTrustParent: 'none' and 'any' stand alone in a scope.*'any' follows/ ],
    [ 'AuraTraceTrustParent in a Location',
      "<Location /x>\nAuraTraceTrustParent 10.0.0.1\n</Location>\n",
      qr/AuraTraceTrustParent not allowed in <Location> context/ ],
    [ 'AuraTraceBatchSize above AuraTraceQueueSize',
      "AuraTraceEndpoint http://127.0.0.1:4318\nAuraTraceQueueSize 10\nAuraTraceBatchSize 20\n",
      qr/AURA01906: AuraTraceBatchSize 20 at .* is larger than AuraTraceQueueSize \(10\)/ ],
    [ 'AuraH2PrefaceTimeout above a minute',
      "AuraH2PrefaceTimeout 90s\n",
      qr/AuraH2PrefaceTimeout: '90s' is not a duration between 100 ms and 60 s/ ],
    [ 'AuraConnectionLimitExempt with a host name',
      "AuraConnectionLimitExempt 10.0.0.0/8 lb.example\n",
      qr/AuraConnectionLimitExempt: 'lb\.example' is not an IP address or network/ ],
    [ 'AuraRateLimit naming no zone',
      "<Location /x>\nAuraRateLimit strict\n</Location>\n",
      qr/AuraRateLimit: no zone 'strict' \(define it with AuraRateLimitZone/ ],
    [ 'AuraRateLimitZone with a bad rate',
      "AuraRateLimitZone api rate=10r/h\n",
      qr/AuraRateLimitZone api: the rate ends in r\/s or r\/m/ ],
    [ 'AuraRateLimitZone with too small a table',
      "AuraRateLimitZone api rate=10r/s entries=8\n",
      qr/AuraRateLimitZone api: entries is a number of addresses from 64 to 16777216/ ],
    [ 'AuraRateLimitZone with an unknown option',
      "AuraRateLimitZone api rate=10r/s size=10m\n",
      qr/AuraRateLimitZone api: 'size=10m' is not burst=<n> or entries=<n> \(each at most once\)/ ],
    [ 'AuraRateLimitZone with a burst twice',
      "AuraRateLimitZone api rate=10r/s burst=5 burst=6\n",
      qr/AuraRateLimitZone api: 'burst=6' is not burst=<n> or entries=<n>/ ],
    [ 'AuraRateLimitZone tables beyond what a segment may have',
      join('', map { "AuraRateLimitZone z$_ rate=1r/s entries=16777216\n" }
                   1 .. 17),
      qr/AURA00601: the shared segment cannot be laid out: the rate-limit tables need more than the 4096 MiB a segment may have \(at z\d+\)/ ],
    [ 'AuraRateLimitZone defined twice',
      "AuraRateLimitZone api rate=10r/s\nAuraRateLimitZone api rate=5r/s\n",
      qr/AuraRateLimitZone: zone 'api' is already defined at .*:1/ ],
    [ 'AuraRateLimitZone in a VirtualHost',
      "<VirtualHost 127.0.0.1:1>\nAuraRateLimitZone api rate=1r/s\n"
      . "</VirtualHost>\n",
      qr/AuraRateLimitZone cannot occur within <VirtualHost> section/ ],
    [ 'AuraActorQuota without a window',
      "<Location /x>\nAuraActorQuota 100\n</Location>\n",
      qr/AuraActorQuota: a window is required/ ],
    [ 'AuraActorQuota with a fractional window',
      "<Location /x>\nAuraActorQuota 100 1500ms\n</Location>\n",
      qr/AuraActorQuota: the window '1500ms' must be whole seconds/ ],
    [ 'AuraRedisServer without a port',
      "AuraRedisServer localhost\n",
      qr/AuraRedisServer: 'localhost' is not host:port\[\/db\]/ ],
    [ 'AuraBreaker with an unknown service',
      "AuraBreaker billing threshold=3\n",
      qr/AuraBreaker: 'billing' is not \*, postgrest, store or a service/ ],
    [ 'AuraBreaker store with nothing to set',
      "AuraBreaker store\n",
      qr/AuraBreaker store: nothing to set/ ],
    [ 'AuraKeyCacheStaleMax above the bound',
      "AuraKeyCacheStaleMax 2h\n",
      qr/AuraKeyCacheStaleMax: '2h' is not a duration between 0 ms and 3600 s/ ],
    [ 'AuraKeyCacheStaleMax in a VirtualHost',
      "<VirtualHost 127.0.0.1:1>\nAuraKeyCacheStaleMax 1m\n</VirtualHost>\n",
      qr/AuraKeyCacheStaleMax cannot occur within <VirtualHost> section/ ],
    [ 'AuraBreaker with an unknown setting',
      "AuraBreaker * limit=3\n",
      qr/AuraBreaker: 'limit=3' is not threshold=<n>, cooldown=<duration>/ ],
    [ 'AuraServiceMaxInFlight of zero',
      "<Location /x>\nAuraServiceMaxInFlight 0\n</Location>\n",
      qr/AuraServiceMaxInFlight: '0' is not a number of requests between 1 and 1000000, a percentage of the workers between 1% and 100%, auto or off/ ],
    [ 'AuraServiceMaxInFlight above 100 %',
      "<Location /x>\nAuraServiceMaxInFlight 101%\n</Location>\n",
      qr/AuraServiceMaxInFlight: '101%' is not a number of requests/ ],
    [ 'AuraPlaneMaxInFlight with a word',
      "<VirtualHost 127.0.0.1:1>\nAuraPlaneMaxInFlight half\n</VirtualHost>\n",
      qr/AuraPlaneMaxInFlight: 'half' is not a number of requests/ ],
    [ 'AuraPlaneMaxInFlight inside a Location',
      "<Location /x>\nAuraPlaneMaxInFlight 10\n</Location>\n",
      qr/AuraPlaneMaxInFlight not allowed in <Location> context/ ],
    [ 'AuraRetries above the bound',
      "<Location /x>\nAuraRetries 50\n</Location>\n",
      qr/AuraRetries: '50' is not a number between 0 and 10/ ],
    # Origins no browser can ever send (issue #15): refused at start.
    [ 'AuraCORSAllowOrigin: a wildcard host (#15)',
      "<VirtualHost 127.0.0.1:1>\nAuraPlane management\n"
      . "AuraCORSAllowOrigin https://*.example\n</VirtualHost>\n",
      qr/AuraCORSAllowOrigin: 'https:\/\/\*\.example' is not an origin: wildcards are not supported: list each origin \(accepted: http:\/\/ or https:\/\/, a host, and an optional port 1-65535 that is not the default; nothing after it\)/ ],
    [ 'AuraCORSAllowOrigin: a port out of range (#15)',
      "<VirtualHost 127.0.0.1:1>\nAuraPlane management\n"
      . "AuraCORSAllowOrigin https://a.example:99999\n</VirtualHost>\n",
      qr/AuraCORSAllowOrigin: 'https:\/\/a\.example:99999' is not an origin: the port must be 1 to 65535, without leading zeros/ ],
    [ 'AuraCORSAllowOrigin: port 0',
      "<VirtualHost 127.0.0.1:1>\nAuraPlane management\n"
      . "AuraCORSAllowOrigin https://a.example:0\n</VirtualHost>\n",
      qr/AuraCORSAllowOrigin: 'https:\/\/a\.example:0' is not an origin: the port must be 1 to 65535/ ],
    [ 'AuraCORSAllowOrigin: the default port',
      "<VirtualHost 127.0.0.1:1>\nAuraPlane management\n"
      . "AuraCORSAllowOrigin https://a.example:443\n</VirtualHost>\n",
      qr/AuraCORSAllowOrigin: 'https:\/\/a\.example:443' is not an origin: a browser never sends the scheme's default port \(80 for http, 443 for https\): leave it out/ ],
    [ 'AuraCORSAllowOrigin: a trailing slash',
      "<VirtualHost 127.0.0.1:1>\nAuraPlane management\n"
      . "AuraCORSAllowOrigin https://a.example/\n</VirtualHost>\n",
      qr/AuraCORSAllowOrigin: 'https:\/\/a\.example\/' is not an origin: an origin has no trailing slash/ ],
    [ 'AuraCORSAllowOrigin: a path',
      "<VirtualHost 127.0.0.1:1>\nAuraPlane management\n"
      . "AuraCORSAllowOrigin https://a.example/app\n</VirtualHost>\n",
      qr/AuraCORSAllowOrigin: 'https:\/\/a\.example\/app' is not an origin: an origin has no path/ ],
    [ 'AuraCORSAllowOrigin: a query',
      "<VirtualHost 127.0.0.1:1>\nAuraPlane management\n"
      . "AuraCORSAllowOrigin https://a.example?x=1\n</VirtualHost>\n",
      qr/AuraCORSAllowOrigin: 'https:\/\/a\.example\?x=1' is not an origin: an origin has no query/ ],
    [ 'AuraCORSAllowOrigin: a fragment',
      "<VirtualHost 127.0.0.1:1>\nAuraPlane management\n"
      . "AuraCORSAllowOrigin https://a.example#x\n</VirtualHost>\n",
      qr/AuraCORSAllowOrigin: 'https:\/\/a\.example\#x' is not an origin: an origin has no fragment/ ],
    [ 'AuraCORSAllowOrigin: userinfo',
      "<VirtualHost 127.0.0.1:1>\nAuraPlane management\n"
      . "AuraCORSAllowOrigin https://user\@a.example\n</VirtualHost>\n",
      qr/AuraCORSAllowOrigin: 'https:\/\/user\@a\.example' is not an origin: an origin has no userinfo \(user@\)/ ],
    [ 'AuraCORSAllowOrigin: no scheme',
      "<VirtualHost 127.0.0.1:1>\nAuraPlane management\n"
      . "AuraCORSAllowOrigin a.example\n</VirtualHost>\n",
      qr/AuraCORSAllowOrigin: 'a\.example' is not an origin: the scheme \(https:\/\/\) is missing/ ],
    [ 'AuraCORSAllowOrigin: another scheme',
      "<VirtualHost 127.0.0.1:1>\nAuraPlane management\n"
      . "AuraCORSAllowOrigin ftp://a.example\n</VirtualHost>\n",
      qr/AuraCORSAllowOrigin: 'ftp:\/\/a\.example' is not an origin: the scheme must be http or https/ ],
    [ 'AuraCORSAllowOrigin: whitespace',
      "<VirtualHost 127.0.0.1:1>\nAuraPlane management\n"
      . "AuraCORSAllowOrigin \"https://a.example \"\n</VirtualHost>\n",
      qr/AuraCORSAllowOrigin: 'https:\/\/a\.example ' is not an origin: it holds whitespace/ ],
    [ 'AuraCORSAllowOrigin: null',
      "<VirtualHost 127.0.0.1:1>\nAuraPlane management\n"
      . "AuraCORSAllowOrigin null\n</VirtualHost>\n",
      qr/AuraCORSAllowOrigin: 'null' is not an origin: "null" is the origin of sandboxed/ ],
    [ 'AuraPathParams with a word (#29)',
      "<VirtualHost 127.0.0.1:1>\nAuraPlane data\nAuraPathParams strip\n"
      . "</VirtualHost>\n",
      qr/AuraPathParams: 'strip' is not refuse or allow/ ],
    [ 'AuraPathParams in a Location (#29)',
      "<Location /x>\nAuraPathParams allow\n</Location>\n",
      qr/AuraPathParams not allowed in <Location> context/ ],
);

plan tests => 2 * @cases + 3 + 4 + 4 + 4 + 3 + 5;

my $dir = tempdir(CLEANUP => 1);

sub check_conf {
    my ($body, $with_planes) = @_;
    my $file = "$dir/httpd.conf";
    open(my $fh, '>', $file) or die "$file: $!";
    print $fh "ServerRoot $dir\nServerName localhost\n"
            . "PidFile $dir/httpd.pid\nErrorLog $dir/error.log\n"
            . "Listen 127.0.0.1:1\n"
            . "LoadModule mpm_event_module $modules/mod_mpm_event.so\n"
            . "LoadModule authz_core_module $modules/mod_authz_core.so\n"
            . "LoadModule aura_common_module " . aura_module('common') . "\n";
    print $fh "LoadModule aura_data_module " . aura_module('data') . "\n"
            . "LoadModule aura_mgmt_module " . aura_module('mgmt') . "\n"
        if $with_planes;
    print $fh $body;
    close $fh;
    my $out = `$httpd -t -f $file 2>&1`;
    return ($? >> 8, $out, $file);
}

for my $c (@cases) {
    my ($name, $body, $re) = @$c;
    my ($rc, $out, $file) = check_conf($body, 1);
    isnt($rc, 0, "$name: refused");
    like($out, $re, "$name: says why") or diag($out);
}

my ($rc, $out) = check_conf(
    "<VirtualHost 127.0.0.1:1>\nAuraPlane data\n</VirtualHost>\n", 0);
isnt($rc, 0, 'AuraPlane data without mod_aura_data: refused');
like($out, qr/AURA00001: AuraPlane data in the VirtualHost defined at \S+:\d+ needs mod_aura_data/,
     'names the VirtualHost\'s file and line and the missing module');

($rc, $out) = check_conf(
    "<VirtualHost 127.0.0.1:1>\nAuraPlane data\n</VirtualHost>\n", 1);
is($rc, 0, 'the same config with mod_aura_data loaded is fine') or diag($out);

# "*" in the management VirtualHost: refused by apachectl -t already
# (check_config), naming the directive's file and line.
($rc, $out) = check_conf("<VirtualHost 127.0.0.1:1>\nAuraPlane management\n"
                         . "AuraCORSAllowOrigin https://ok.example *\n"
                         . "</VirtualHost>\n", 1);
isnt($rc, 0, 'AuraCORSAllowOrigin * on the management plane: refused');
like($out, qr{AURA00054: AuraCORSAllowOrigin \* at \S+/httpd\.conf:\d+: the management plane},
     'names the file and line of the "*"');
($rc, $out) = check_conf("<VirtualHost 127.0.0.1:1>\nAuraPlane management\n"
                         . "AuraCORSAllowOrigin https://ok.example\n"
                         . "</VirtualHost>\n", 1);
is($rc, 0, 'a listed origin is fine') or diag($out);
($rc, $out) = check_conf("<VirtualHost 127.0.0.1:1>\nAuraPlane management\n"
                         . "AuraCORSAllowOrigin HTTPS://Console.Example "
                         . "http://[::1]:8080 https://s.example:8443\n"
                         . "</VirtualHost>\n", 1);
is($rc, 0, 'upper case, an IPv6 host, a port: fine') or diag($out);

# An HTTP upstream (or the db router) without the proxy modules: refused
# at start, naming the line; with them, fine.
($rc, $out) = check_conf("<Location /s/>\nAuraService storage "
                         . "http://127.0.0.1:1/s\n</Location>\n", 1);
isnt($rc, 0, 'an http upstream without mod_proxy: refused');
like($out, qr{AURA00098: AuraService with an http\(s\) upstream \(or AuraDBRouter On\) at \S+/httpd\.conf:\d+ needs mod_proxy, mod_proxy_http and mod_aura_proxy \(mod_proxy\.c is not loaded\)},
     'names the line and the missing module');
($rc, $out) = check_conf("<Location /db/>\nAuraService db nats:aura.db\n"
                         . "AuraDBRouter On\n</Location>\n", 1);
like($out, qr{AURA00098: .* \(or AuraDBRouter On\) at \S+:\d+},
     'the db router needs them too');
($rc, $out) = check_conf("LoadModule proxy_module $modules/mod_proxy.so\n"
                         . "LoadModule proxy_http_module "
                         . "$modules/mod_proxy_http.so\n"
                         . "LoadModule aura_proxy_module "
                         . aura_module('proxy') . "\n"
                         . "<Location /s/>\nAuraService storage "
                         . "http://127.0.0.1:1/s\n</Location>\n", 1);
is($rc, 0, 'with mod_proxy, mod_proxy_http and mod_aura_proxy: fine')
    or diag($out);

# %{name}^au in a LogFormat or a CustomLog: a field mod_aura does not
# know stops the start, naming the directive's file and line; known
# fields are fine (conf/aura-logformats.conf holds them all).
($rc, $out) = check_conf("LogFormat \"%h %{plane}^au %{actr}^au\" bad\n", 1);
isnt($rc, 0, 'a LogFormat with an unknown %{...}^au field: refused');
like($out, qr{AURA00127: LogFormat at \S+/httpd\.conf:\d+: %\{actr\}\^au is not a mod_aura log field},
     'names the field, the directive and its line');
($rc, $out) = check_conf("<VirtualHost 127.0.0.1:1>\nAuraPlane data\n"
                         . "CustomLog /dev/null \"%{trace-id}^au %{Trace}^au\"\n"
                         . "</VirtualHost>\n", 1);
like($out, qr{AURA00127: CustomLog at \S+:\d+: %\{Trace\}\^au},
     'in a CustomLog inside a VirtualHost too');
($rc, $out) = check_conf("Include $top/conf/aura-logformats.conf\n", 1);
is($rc, 0, 'the shipped formats are fine') or diag($out);

# A format of before 0.4.0 (the fields were notes then) still starts,
# and each note that is no longer set is named with what to write.
($rc, $out) = check_conf("LogFormat \"%{aura-actor}n %{aura-request-id}n "
                         . "%{aura-problem-type}n\" old\n", 1);
is($rc, 0, 'a format with the old notes still starts') or diag($out);
like($out, qr{AURA00128: LogFormat at \S+/httpd\.conf:\d+: the note %\{aura-actor\}n is not set since mod_aura 0\.4\.0 and logs "-": write %\{actor\}\^au instead},
     'the old note is named, with its replacement');
unlike($out, qr{aura-request-id\}n is not set|aura-problem-type\}n is not set},
       'notes that are still set are not');

# AuraPathParams allow (issue #29 point 4): a data-plane choice; the
# management plane always refuses ';', so an allow that reaches one, set
# there or inherited from the main server, stops the start.
($rc, $out) = check_conf("<VirtualHost 127.0.0.1:1>\nAuraPlane data\n"
                         . "AuraPathParams allow\n</VirtualHost>\n", 1);
is($rc, 0, 'AuraPathParams allow on the data plane: fine') or diag($out);
($rc, $out) = check_conf("<VirtualHost 127.0.0.1:1>\nAuraPlane management\n"
                         . "AuraPathParams allow\n</VirtualHost>\n", 1);
isnt($rc, 0, 'AuraPathParams allow on the management plane: refused');
like($out, qr{AURA01751: AuraPathParams allow at \S+/httpd\.conf:\d+ reaches the management plane \(VirtualHost defined at \S+:\d+\)},
     'names the directive\'s line and the VirtualHost');
($rc, $out) = check_conf("AuraPathParams allow\n"
                         . "<VirtualHost 127.0.0.1:1>\nAuraPlane management\n"
                         . "</VirtualHost>\n", 1);
like($out, qr{AURA01751: AuraPathParams allow at \S+:\d+ reaches the management plane},
     'inherited from the main server: refused too');
($rc, $out) = check_conf("AuraPathParams allow\n"
                         . "<VirtualHost 127.0.0.1:1>\nAuraPlane management\n"
                         . "AuraPathParams refuse\n</VirtualHost>\n", 1);
is($rc, 0, 'overridden by refuse in the management VirtualHost: fine')
    or diag($out);
