/* The function cache under threads (lib/function.c): lookups that hit take no
 * lock, and race with inserts and with the table's growth; and a library
 * kernel's pending layout (lib/library.c), read once by whichever of many
 * launching threads comes first. Run by the threads suite, under TSan in CI.
 * Module fixtures and what the module tests are about: module_fixtures.h. */
#include <cuscope/library.h>

#include "module_fixtures.h"

#define THREADS 8
#define KERNELS 600
#define ROUNDS 3

typedef struct worker {
    cus_module *mod;
    pthread_barrier_t *start;
    unsigned offset;
    cus_function *got[KERNELS]; /* the first round's, one reference each */
    unsigned long mismatches;   /* a later round's lookup answered another object */
    cus_status st;
} worker;

/* Each thread walks every name from its own offset, so that some look up
 * names others are inserting (the table grows under them) and some hit names
 * already cached; later rounds must return the first round's objects. */
static void *look_up_all(void *p)
{
    worker *w = p;
    w->st = CUS_SUCCESS;
    pthread_barrier_wait(w->start);
    char name[16];
    for (unsigned round = 0; round < ROUNDS; round++) {
        for (unsigned j = 0; j < KERNELS; j++) {
            unsigned i = (j + w->offset) % KERNELS;
            snprintf(name, sizeof name, "k%u", i);
            cus_function *f = NULL;
            cus_status st = cus_module_get_function(w->mod, name, &f);
            if (st) {
                w->st = st;
                return NULL;
            }
            if (round == 0) {
                w->got[i] = f;
                continue;
            }
            if (f != w->got[i] || strcmp(cus_function_name(f), name) != 0)
                w->mismatches++;
            f = cus_function_unref(f);
        }
    }
    return NULL;
}

static void test_lookups_race_inserts_and_growth(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    char *ptx = make_many_kernels_ptx(KERNELS);
    cus_module *m = load(c, ptx);
    free(ptx);
    pthread_barrier_t start;
    assert_int_equal(pthread_barrier_init(&start, NULL, THREADS), 0);
    static worker w[THREADS];
    pthread_t th[THREADS];
    for (unsigned t = 0; t < THREADS; t++) {
        memset(&w[t], 0, sizeof w[t]);
        w[t].mod = m;
        w[t].start = &start;
        w[t].offset = t * (KERNELS / THREADS);
        assert_int_equal(pthread_create(&th[t], NULL, look_up_all, &w[t]), 0);
    }
    for (unsigned t = 0; t < THREADS; t++)
        assert_int_equal(pthread_join(th[t], NULL), 0);
    pthread_barrier_destroy(&start);
    for (unsigned t = 0; t < THREADS; t++) {
        assert_ok(w[t].st);
        assert_int_equal(w[t].mismatches, 0);
        for (unsigned i = 0; i < KERNELS; i++)
            assert_ptr_equal(w[t].got[i], w[0].got[i]); /* one object per name */
    }
    /* each name asked of the driver once, whichever thread came first */
    assert_int_equal(cus_fake_calls_of("cuModuleGetFunction"), KERNELS);
    m = cus_module_unref(m);
    for (unsigned t = 0; t < THREADS; t++)
        for (unsigned i = 0; i < KERNELS; i++)
            w[t].got[i] = cus_function_unref(w[t].got[i]);
    assert_int_equal(cus_fake_live_handles(CUS_FAKE_HANDLE_MODULE), 0);
    c = cus_context_unref(c);
}

typedef struct launcher {
    cus_context *ctx;
    cus_kernel *k;
    pthread_barrier_t *start;
    cus_status st;
    bool unchecked;           /* the wrongly sized launch was not refused */
    unsigned int params_seen; /* the layout's count, read right after the launch */
} launcher;

/* Its own stream of ctx, then 50 checked launches of k, the first of which
 * races the other threads' to read the layout; one launch with the wrong
 * argument sizes must be refused by the layout whoever read it. */
static void *launch_pending(void *p)
{
    launcher *l = p;
    cus_stream *s = NULL;
    l->st = cus_stream_create(l->ctx, CU_STREAM_NON_BLOCKING, 0, &s);
    pthread_barrier_wait(l->start);
    for (int i = 0; i < 50 && !l->st; i++) {
        l->st = cus_launch(l->k, 1, 1, 0, s, (CUdeviceptr)0, 5u);
        if (!l->st)
            l->params_seen = cus_kernel_param_count(l->k);
    }
    if (!l->st)
        l->unchecked = cus_launch(l->k, 1, 1, 0, s, (CUdeviceptr)0, (size_t)5) !=
                       CUS_ERROR_INVALID_ARGUMENT;
    if (!l->st)
        l->st = cus_stream_synchronize(s);
    cus_stream_unref(s);
    return NULL;
}

static void test_pending_layout_read_once_under_threads(void **state)
{
    (void)state;
    cus_context *c = new_primary();
    cus_library *lib = NULL;
    assert_ok(cus_library_load_data(ptx_src, 0, NULL, NULL, &lib));
    cus_kernel *k = NULL;
    assert_ok(cus_library_get_kernel(lib, "add", &k)); /* none current: pending */
    assert_false(cus_kernel_layout_known(k));
    unsigned long asked = cus_fake_calls_of("cuKernelGetParamInfo");
    pthread_barrier_t start;
    assert_int_equal(pthread_barrier_init(&start, NULL, THREADS), 0);
    static launcher l[THREADS];
    pthread_t th[THREADS];
    for (unsigned t = 0; t < THREADS; t++) {
        l[t] = (launcher){.ctx = c, .k = k, .start = &start};
        assert_int_equal(pthread_create(&th[t], NULL, launch_pending, &l[t]), 0);
    }
    for (unsigned t = 0; t < THREADS; t++)
        assert_int_equal(pthread_join(th[t], NULL), 0);
    pthread_barrier_destroy(&start);
    for (unsigned t = 0; t < THREADS; t++) {
        assert_ok(l[t].st);
        assert_false(l[t].unchecked);
        assert_int_equal(l[t].params_seen, 2);
    }
    /* read once: two parameters, two calls */
    assert_int_equal(cus_fake_calls_of("cuKernelGetParamInfo"), asked + 2);
    assert_true(cus_kernel_layout_known(k));
    k = cus_kernel_unref(k);
    lib = cus_library_unref(lib);
    c = cus_context_unref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_lookups_race_inserts_and_growth),
        ENV_TEST(test_pending_layout_read_once_under_threads),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
