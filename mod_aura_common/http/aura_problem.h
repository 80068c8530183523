/* Licensed under the Apache License, Version 2.0 (see LICENSE).
 *
 * aura_problem.h: problem+json answers (aura_problem.c).
 */
#ifndef AURA_PROBLEM_H
#define AURA_PROBLEM_H

#include "aura.h"

/* aura_problem.c */
void aura_problem_register(void);
void aura_insert_problem_filter(request_rec *r);

#endif /* AURA_PROBLEM_H */
