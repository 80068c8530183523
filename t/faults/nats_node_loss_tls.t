# Licensed under the Apache License, Version 2.0 (see LICENSE).
#
# The node-loss runs of t/faults/nats_node_loss.t ("one" and "spread")
# on a secured 3-node cluster (issue #18): TLS verifying clients and on
# the routes, operator mode with a memory resolver; the gateway connects
# with AuraNATSCredentials, a client certificate, AuraNATSCAFile and
# AuraNATSInboxPrefix, the responders with their own creds.  Before the
# runs, a wrong CA, a wrong seed and a revoked user each give 503
# upstream-error at once and AURA01320 saying which.  Same assertions as
# the plain runs: the code is that file's, run with $SECURE set.
use strict;
use warnings FATAL => 'all';

use FindBin;

our $SECURE = 1;
do "$FindBin::Bin/nats_node_loss.t";
die $@ if $@;
