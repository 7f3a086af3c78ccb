/* A gate that holds one thread inside a call until the test lets it go: the
 * way a test forces an ordering between threads (a call wrapped by a resolver
 * over the fake's calls gate_pass; the test arms the gate, waits until a
 * thread is inside, does what must happen meanwhile, and releases it). One
 * gate per test file (static state); never by sleeping. */
#ifndef CUSCOPE_TEST_GATE_H
#define CUSCOPE_TEST_GATE_H

#include <pthread.h>
#include <stdbool.h>

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static bool gate_armed, gate_inside, gate_open;

/* In the gated call: once armed, the first thread here waits for the release. */
static inline void gate_pass(void)
{
    pthread_mutex_lock(&gate_lock);
    if (gate_armed) {
        gate_armed = false;
        gate_inside = true;
        pthread_cond_broadcast(&gate_cv);
        while (!gate_open)
            pthread_cond_wait(&gate_cv, &gate_lock);
        gate_inside = false;
    }
    pthread_mutex_unlock(&gate_lock);
}

static inline void gate_arm(void)
{
    pthread_mutex_lock(&gate_lock);
    gate_armed = true;
    gate_inside = gate_open = false;
    pthread_mutex_unlock(&gate_lock);
}

/* Until a thread is held inside. */
static inline void gate_wait_inside(void)
{
    pthread_mutex_lock(&gate_lock);
    while (!gate_inside)
        pthread_cond_wait(&gate_cv, &gate_lock);
    pthread_mutex_unlock(&gate_lock);
}

static inline void gate_release(void)
{
    pthread_mutex_lock(&gate_lock);
    gate_open = true;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_lock);
}

#endif
