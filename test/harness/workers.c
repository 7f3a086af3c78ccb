#include "workers.h"

#include <stdio.h>

void phase_init(phase *p)
{
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
    p->value = 0;
}

void phase_destroy(phase *p)
{
    pthread_cond_destroy(&p->changed);
    pthread_mutex_destroy(&p->lock);
}

void phase_set(phase *p, int v)
{
    pthread_mutex_lock(&p->lock);
    p->value = v;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
}

void phase_wait(phase *p, int v)
{
    pthread_mutex_lock(&p->lock);
    while (p->value < v)
        pthread_cond_wait(&p->changed, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

void report_fail(report *r, int line, const char *what, cus_status st)
{
    if (r->failures++ == 0)
        snprintf(r->first, sizeof r->first, "line %d: %s (%s: %s)", line, what,
                 cus_status_name(st), st ? cus_last_error_message() : "");
}

void assert_report_clean(const report *r, int index)
{
    if (r->failures)
        fail_msg("thread %d: %lu failure(s), first at %s", index, r->failures, r->first);
}
