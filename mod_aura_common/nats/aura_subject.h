/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_subject.h: NATS subjects the gateway publishes on because a
 * service named them: the acknowledgements and cancels of streamed
 * replies (docs/envelope.md, "Streamed replies").  Pure functions (APR
 * only, no httpd.h): t/unit/test_subject.c links them as they are.
 */
#ifndef AURA_SUBJECT_H
#define AURA_SUBJECT_H

#include "apr.h"

/* Where acknowledgements may go unless a Location says otherwise
 * (AuraStreamAckPrefix): the inbox namespace NATS clients draw reply
 * subjects from (natsInbox_Create, new_inbox()), never a service's or
 * the gateway's own request subjects. */
#define AURA_STREAM_ACK_PREFIX_DEFAULT "_INBOX."

/* An acknowledgement subject longer than this is refused. */
#define AURA_STREAM_ACK_MAX 255

/**
 * Whether s is a literal NATS subject: non-empty tokens separated by
 * '.', of printable ASCII without whitespace, and no wildcard token
 * character ('*', '>').
 */
int aura_subject_literal(const char *s);

/**
 * Whether prefix can be an AuraStreamAckPrefix: a literal subject
 * followed by '.' ("_INBOX.", "acks.storage."), so it ends at a token
 * boundary.
 */
int aura_subject_ack_prefix_ok(const char *prefix);

/**
 * Whether the gateway may publish a stream acknowledgement or cancel on
 * the reply subject a service gave: a literal subject of at most
 * AURA_STREAM_ACK_MAX bytes, under prefix, with at least one token
 * after it, and not under the gateway's own reply inbox (own, e.g.
 * "_INBOX.<nuid>" of this child: acks there would be taken for replies
 * to other requests).
 * @param subject the stream message's reply subject
 * @param prefix the Location's AuraStreamAckPrefix (ends in '.')
 * @param own the gateway's reply inbox prefix (no trailing '.'), or NULL
 * @return NULL when it may, else why not (a static string)
 */
const char *aura_subject_ack_refused(const char *subject, const char *prefix,
                                     const char *own);

#endif /* AURA_SUBJECT_H */
