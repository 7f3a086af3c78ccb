/* Assertions and helpers that many tests share: a string check, the fake's
 * call log, its raw entry points (cus_fake_get_proc_address) and the raw pops
 * that put its context stack back where cuscope's mirror is, and how a
 * fork() child leaves. Written once here; a test includes this header
 * instead of copying them. */
#ifndef CUSCOPE_TEST_CHECK_H
#define CUSCOPE_TEST_CHECK_H

/* A pointer value no call writes (the variable's own address): an out
 * parameter still equal to it was left untouched. */
#define SENTINEL_PTR(p) ((void *)&(p))

#include <string.h>

#include "env.h"

/* haystack (not NULL) contains needle. */
#define assert_contains(haystack, needle)                                      \
    do {                                                                       \
        const char *h_ = (haystack);                                           \
        const char *n_ = (needle);                                             \
        assert_non_null(h_);                                                   \
        if (!strstr(h_, n_))                                                   \
            fail_msg("\"%s\" does not contain \"%s\"", h_, n_);                \
    } while (0)

/* How a fork() child leaves: in a coverage build (-Db_coverage=true:
 * CUS_TEST_COVERAGE), gcov writes each library's counters from its
 * destructor, so the child leaves through exit() and the paths only a fork()
 * child takes count (the exit handlers it runs make no driver call in a
 * child, which this also tests). Otherwise _exit(), which runs nothing of
 * the parent's. */
_Noreturn void child_exit(int status);

#ifdef CUS_TEST_FAKE
#include <cudaTypedefs.h>

/* The driver calls made since `from` (cus_fake_call_count()) are exactly
 * want[] (NULL-terminated); what: want, as written, for the message. */
void check_calls(unsigned long from, const char *const *want, const char *what);
#define assert_calls_since(from, ...)                                          \
    check_calls((from), (const char *const[]){__VA_ARGS__, NULL}, #__VA_ARGS__)
#define assert_no_calls_since(from) check_calls((from), (const char *const[]){NULL}, "")

/* The fake's raw entry point for symbol at version: raw_fn asserts that it is
 * there; raw_lookup returns NULL when it is not (and asserts nothing, for
 * threads other than cmocka's). */
void *raw_fn(const char *symbol, int version);
void *raw_lookup(const char *symbol, int version);

/* Stores raw_fn(symbol, version) in the function pointer var (memcpy: no
 * pedantic warning for the object-to-function pointer conversion). */
#define RAW(var, symbol, version)                                              \
    do {                                                                       \
        void *p_ = raw_fn(symbol, version);                                    \
        memcpy(&(var), &p_, sizeof(var));                                      \
    } while (0)
/* The same with raw_lookup: var is NULL when the entry point is not there. */
#define RAW_OR_NULL(var, symbol, version)                                      \
    do {                                                                       \
        void *p_ = raw_lookup(symbol, version);                                \
        memcpy(&(var), &p_, sizeof(var));                                      \
    } while (0)
/* raw_fn(symbol, version) as a value of the function pointer type. */
#define RAW_FN(type, symbol, version)                                          \
    __extension__({                                                            \
        type f_;                                                               \
        void *p_ = raw_fn(symbol, version);                                    \
        memcpy(&f_, &p_, sizeof f_);                                           \
        f_;                                                                    \
    })

/* A raw driver call returns want (the message names the fake's last misuse). */
#define assert_cu(expr, want)                                                  \
    do {                                                                       \
        CUresult r_ = (expr);                                                  \
        CUresult w_ = (want);                                                  \
        if (r_ != w_)                                                          \
            fail_msg("%s -> %d, expected %d (last misuse: %s)", #expr, (int)r_, (int)w_, \
                     cus_fake_last_misuse());                                  \
    } while (0)
#define assert_cu_ok(expr) assert_cu((expr), CUDA_SUCCESS)

/* One raw cuCtxPopCurrent, which must succeed: for putting back a stack
 * that a failed pop left. */
void raw_pop_current(void);
/* Raw pops of what failed pops left on the fake's stack, above cuscope's
 * mirror, until the two are as deep again. */
int reconcile_fake_stack(void); /* returns how many it popped */
#endif

#endif
