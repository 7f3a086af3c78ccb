/* For tests that run workers on threads of their own: a phase counter they
 * wait on, and a report of what a worker found wrong (cmocka's assertions
 * belong to the main thread), checked after the join. */
#ifndef CUSCOPE_TEST_WORKERS_H
#define CUSCOPE_TEST_WORKERS_H

#include <pthread.h>

#include "env.h"

/* A monotonic phase counter that threads can wait on. */
typedef struct phase {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int value;
} phase;

void phase_init(phase *p);
void phase_destroy(phase *p);
void phase_set(phase *p, int v);
/* Waits until the phase is at least v. */
void phase_wait(phase *p, int v);

/* What a worker found wrong: how often, and the first. */
typedef struct report {
    unsigned long failures;
    char first[256];
} report;

void report_fail(report *r, int line, const char *what, cus_status st);
/* In the main thread: fails the test when worker `index` reported anything. */
void assert_report_clean(const report *r, int index);

#define T_CHECK(r, cond)                                                       \
    do {                                                                       \
        if (!(cond))                                                           \
            report_fail((r), __LINE__, #cond, CUS_SUCCESS);                    \
    } while (0)

#endif
