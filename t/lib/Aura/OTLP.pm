# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# Aura::OTLP: OTLP/HTTP receivers for the tracing tests, each a forked
# process on a free loopback port, stopped by PID:
# - otlp_receiver($dir[, $gate]): answers every POST 200 {} and keeps it
#   as $dir/<n>.req (method, path, content type, body as JSON); with
#   $gate, a file name, it keeps each POST at once but answers only once
#   that file exists;
# - slow_receiver(): accepts connections and never reads or answers.
# otlp_received($dir) reads what the first kept; otlp_check($doc)
# validates one ExportTraceServiceRequest against the OTLP/JSON format
# (hex ids, nanosecond decimal strings, kinds, typed attributes,
# status) and returns its problems, none when it is well-formed.
package Aura::OTLP;

use strict;
use warnings;

use Exporter 'import';
use HTTP::Daemon;
use HTTP::Response;
use IO::Socket::INET;
use JSON::PP;
use POSIX ();

our @EXPORT_OK = qw(otlp_receiver slow_receiver otlp_received otlp_check
                    otlp_spans);

sub _fork_server {
    my ($serve) = @_;
    my $pid = fork();
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        $serve->();
        POSIX::_exit(0);
    }
    return $pid;
}

sub otlp_receiver {
    my ($dir, $gate) = @_;
    my $d = HTTP::Daemon->new(LocalAddr => '127.0.0.1', LocalPort => 0,
                              ReuseAddr => 1, Listen => 16)
        or die "receiver: $!";
    my $port = $d->sockport;
    my $pid = _fork_server(sub {
        my $n = 0;
        while (my $c = $d->accept) {
            while (my $req = $c->get_request) {
                $n++;
                my $rec = { method => $req->method, path => $req->uri->path,
                            type => scalar $req->header('Content-Type'),
                            auth => scalar $req->header('X-Test-Auth'),
                            body => $req->content };
                open(my $fh, '>', "$dir/$n.tmp") or die;
                print $fh JSON::PP->new->canonical->encode($rec);
                close $fh;
                rename("$dir/$n.tmp", "$dir/$n.req");
                # Gated: no answer until the test opens the gate, so the
                # exporter's post stays in progress and its queue fills.
                select(undef, undef, undef, 0.05)
                    while defined $gate && !-e $gate;
                my $res = HTTP::Response->new(200);
                $res->header('Content-Type' => 'application/json');
                $res->content('{}');
                $c->send_response($res);
            }
            $c->close;
        }
    });
    close $d;
    return ($port, $pid);
}

sub slow_receiver {
    my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
                                  Listen => 16, ReuseAddr => 1)
        or die "slow receiver: $!";
    my $port = $l->sockport;
    my $pid = _fork_server(sub {
        my @held;
        while (my $c = $l->accept) {
            push @held, $c;     # never read, never answered
        }
    });
    close $l;
    return ($port, $pid);
}

# Every request kept so far, in order: [{method, path, type, body}].
sub otlp_received {
    my ($dir) = @_;
    my @out;
    for (my $n = 1; -e "$dir/$n.req"; $n++) {
        open(my $fh, '<', "$dir/$n.req") or die;
        local $/;
        push @out, decode_json(<$fh>);
        close $fh;
    }
    return @out;
}

my %kinds = map { $_ => 1 } 1 .. 5;

sub _value_problems {
    my ($v, $where) = @_;
    return ("$where: value not an object") unless ref $v eq 'HASH';
    my @k = keys %$v;
    return ("$where: value has not exactly one of its fields (@k)")
        unless @k == 1;
    my ($k) = @k;
    if ($k eq 'stringValue') {
        return ref $v->{$k} ? ("$where: stringValue not a string") : ();
    }
    if ($k eq 'intValue') {
        # OTLP/JSON: 64-bit integers as decimal strings.
        return (!ref $v->{$k} && $v->{$k} =~ /^-?\d+$/
                && JSON::PP->new->allow_nonref->encode($v->{$k}) =~ /^"/)
            ? () : ("$where: intValue not a decimal string");
    }
    if ($k eq 'boolValue') {
        return JSON::PP::is_bool($v->{$k}) ? ()
                                           : ("$where: boolValue not bool");
    }
    return ("$where: unexpected value field $k");
}

sub _attrs_problems {
    my ($a, $where) = @_;
    return ("$where: attributes not an array") unless ref $a eq 'ARRAY';
    my @p;
    for my $e (@$a) {
        if (ref $e ne 'HASH' || !defined $e->{key} || ref $e->{key}) {
            push @p, "$where: attribute without a key";
            next;
        }
        push @p, _value_problems($e->{value}, "$where $e->{key}");
    }
    return @p;
}

sub _span_problems {
    my ($s, $where) = @_;
    my @p;
    push @p, "$where: traceId" unless ($s->{traceId} // '') =~ /^[0-9a-f]{32}$/
                                      && $s->{traceId} !~ /^0+$/;
    push @p, "$where: spanId" unless ($s->{spanId} // '') =~ /^[0-9a-f]{16}$/
                                     && $s->{spanId} !~ /^0+$/;
    push @p, "$where: parentSpanId"
        if exists $s->{parentSpanId}
           && ($s->{parentSpanId} // '') !~ /^[0-9a-f]{16}$/;
    push @p, "$where: name" unless defined $s->{name} && !ref $s->{name}
                                   && length $s->{name};
    push @p, "$where: kind" unless defined $s->{kind} && !ref $s->{kind}
                                   && $kinds{$s->{kind}};
    for my $t (qw(startTimeUnixNano endTimeUnixNano)) {
        push @p, "$where: $t not a decimal string"
            unless defined $s->{$t}
                   && JSON::PP->new->allow_nonref->encode($s->{$t}) =~ /^"\d+"$/;
    }
    push @p, "$where: ends before it starts"
        if !@p && $s->{endTimeUnixNano} < $s->{startTimeUnixNano};
    push @p, _attrs_problems($s->{attributes}, $where)
        if exists $s->{attributes};
    if (exists $s->{status}) {
        my $st = $s->{status};
        push @p, "$where: status" unless ref $st eq 'HASH'
                                         && ($st->{code} // 0) =~ /^[012]$/;
    }
    return @p;
}

sub otlp_check {
    my ($doc) = @_;
    return ('not an object') unless ref $doc eq 'HASH';
    my $rs = $doc->{resourceSpans};
    return ('no resourceSpans array') unless ref $rs eq 'ARRAY' && @$rs;
    my @p;
    for my $r (@$rs) {
        my $attrs = ($r->{resource} || {})->{attributes} || [];
        push @p, _attrs_problems($attrs, 'resource');
        push @p, 'resource without service.name'
            unless grep { $_->{key} eq 'service.name' } @$attrs;
        my $ss = $r->{scopeSpans};
        push @p, 'no scopeSpans array' unless ref $ss eq 'ARRAY' && @$ss;
        for my $s (@{ $ss || [] }) {
            push @p, 'scope without a name'
                unless ref $s->{scope} eq 'HASH' && $s->{scope}{name};
            push @p, 'no spans array' unless ref $s->{spans} eq 'ARRAY';
            my $i = 0;
            push @p, _span_problems($_, 'span ' . $i++)
                for @{ $s->{spans} || [] };
        }
    }
    return @p;
}

# The spans of the documents, flat, each with its attributes as a hash
# (attr => {key => scalar}).
sub otlp_spans {
    my @docs = @_;
    my @out;
    for my $d (@docs) {
        for my $r (@{ $d->{resourceSpans} || [] }) {
            for my $s (@{ $r->{scopeSpans} || [] }) {
                for my $sp (@{ $s->{spans} || [] }) {
                    my %a = map {
                        my ($k) = keys %{ $_->{value} };
                        ($_->{key} => $_->{value}{$k})
                    } @{ $sp->{attributes} || [] };
                    push @out, { %$sp, attr => \%a };
                }
            }
        }
    }
    return @out;
}

1;
