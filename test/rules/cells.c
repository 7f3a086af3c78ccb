/* One cell: a fresh fixture in a new context A, the row's preparation, the
 * column's state, the row's call, and a teardown that frees everything and
 * leaves the thread with no context (rules.h says what each column means). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef CUS_TEST_FAKE
#include <cuscope/fake.h>
#endif

#include "rules.h"

/* The module of every fixture: add(u64, u32) is the rows' function, noargs
 * the graph's kernel, trap_kernel poisons the context (on the fake, its host
 * implementation returns CUDA_ERROR_LAUNCH_FAILED, what a trap gives on a
 * GPU). PTX, so that both drivers load it without nvcc. */
static const char fixture_ptx[] = ".version 8.0\n"
                                  ".target sm_80\n"
                                  ".address_size 64\n"
                                  "\n"
                                  ".global .align 4 .u32 counter = 7;\n"
                                  "\n"
                                  ".visible .entry add(\n"
                                  "\t.param .u64 add_param_0,\n"
                                  "\t.param .u32 add_param_1\n"
                                  ")\n"
                                  "{\n"
                                  "\tret;\n"
                                  "}\n"
                                  "\n"
                                  ".visible .entry noargs()\n"
                                  "{\n"
                                  "\tret;\n"
                                  "}\n"
                                  "\n"
                                  ".visible .entry trap_kernel()\n"
                                  "{\n"
                                  "\ttrap;\n"
                                  "}\n";

/* The same PTX in a fatbin, laid out as `nvcc -fatbin --no-compress
 * -arch=compute_80 -code=compute_80` writes one: a 16-byte header, one
 * 80-byte PTX entry header, the text and its NUL padded to 8 bytes. */
#define FATBIN_PAYLOAD ((sizeof fixture_ptx + 7) & ~(size_t)7)
#define FATBIN_SIZE (16 + 80 + FATBIN_PAYLOAD)
static uint64_t fatbin_words[(FATBIN_SIZE + 7) / 8];

static char ptx_path[] = "/tmp/cuscope-rules-XXXXXX.ptx";
static bool ptx_written;

static void put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, uint32_t v)
{
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(unsigned char *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

static void make_fatbin(void)
{
    unsigned char *b = (unsigned char *)fatbin_words;
    memset(b, 0, sizeof fatbin_words);
    put32(b, 0xBA55ED50u); /* magic */
    put16(b + 4, 1);       /* version */
    put16(b + 6, 16);      /* header size */
    put64(b + 8, 80 + FATBIN_PAYLOAD);
    unsigned char *e = b + 16;
    put16(e, 1);           /* PTX */
    put16(e + 2, 0x0101);
    put32(e + 4, 80);      /* entry header size */
    put64(e + 8, FATBIN_PAYLOAD);
    put32(e + 20, 0x40);
    put16(e + 24, 0);      /* PTX ISA 8.0 */
    put16(e + 26, 8);
    put32(e + 28, 80);     /* compute_80 */
    put64(e + 40, 0x11);   /* flags: 64-bit, host Linux */
    put64(e + 64, 0x48);
    memcpy(e + 80, fixture_ptx, sizeof fixture_ptx);
}

bool rules_cells_init(void)
{
    make_fatbin();
    int fd = mkstemps(ptx_path, 4);
    if (fd < 0) {
        perror("rules: mkstemps");
        return false;
    }
    size_t n = sizeof fixture_ptx - 1;
    bool ok = write(fd, fixture_ptx, n) == (ssize_t)n;
    ok = close(fd) == 0 && ok;
    ptx_written = true;
    if (!ok)
        perror("rules: writing the PTX file");
    return ok;
}

void rules_cells_fini(void)
{
    if (ptx_written)
        unlink(ptx_path);
    ptx_written = false;
}

/* --- the columns that apply, and the risky cells ------------------------------------------------ */

#define ALL_COLUMNS ((1u << COL_COUNT) - 1)
#define ANY_CONTEXT_COLUMNS                                                    \
    (COL_BIT(COL_OK) | COL_BIT(COL_NONE) | COL_BIT(COL_OTHER) | COL_BIT(COL_POISONED))

unsigned rules_columns_of(const rules_row *row)
{
    switch (row->handle) {
    case H_UNCOUNTED:
        return 0;
    case H_NONE:
    case H_DEVICE:
        return ANY_CONTEXT_COLUMNS;
    case H_CURRENT:
        return ANY_CONTEXT_COLUMNS | COL_BIT(COL_DESTROYED);
    case H_CONTEXT: /* destroyed is stale: the object is the context */
        return ALL_COLUMNS & ~COL_BIT(COL_DESTROYED);
    default:
        return ALL_COLUMNS;
    }
}

/* The driver documents that it validates contexts (CUDA_ERROR_INVALID_CONTEXT
 * for "a context that has had cuCtxDestroy() invoked on it"; a destroyed
 * current context is CUDA_ERROR_CONTEXT_IS_DESTROYED), streams and events
 * (CUDA_ERROR_INVALID_HANDLE: "resource handles are opaque types like CUstream
 * and CUevent"), and memory, which it looks up by address (a freed pointer is
 * CUDA_ERROR_INVALID_VALUE, an unregistered block
 * CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED). Modules, functions, graphs,
 * executable graphs and nodes it does not: a destroyed one is a use after
 * free inside the driver (a second cuGraphDestroy is a double free), which
 * may crash, or answer at random. So are the modules, functions and
 * executable graphs of a destroyed context, which die with it; graphs and
 * their nodes belong to no context and outlive it, but for the function a
 * kernel node refers to (R_READS_KERNEL). */
bool rules_cell_risky(const rules_row *row, rules_column col)
{
    switch (row->handle) {
    case H_MODULE:
    case H_FUNCTION:
    case H_EXEC:
        return col == COL_STALE || col == COL_DESTROYED;
    case H_GRAPH:
    case H_NODE:
        return col == COL_STALE || (col == COL_DESTROYED && (row->flags & R_READS_KERNEL));
    default:
        return false;
    }
}

/* --- the fixture ---------------------------------------------------------------------------------- */

typedef struct fixture {
    rules_args a;
    CUfunction noargs, trap;
    CUcontext other;    /* B: same device */
    CUcontext otherdev; /* C: device 1 */
    unsigned gone;      /* bits of rules_handle: destroyed (H_CONTEXT: A, and all it had) */
    bool registered;    /* a.registered is registered */
    bool primary_retained;
    void *blocks[3];
} fixture;

#define BIT(h) (1u << (h))
#define TRY(expr)                                                              \
    do {                                                                       \
        CUresult r_ = (expr);                                                  \
        if (r_ != CUDA_SUCCESS)                                                \
            return r_;                                                         \
    } while (0)

static CUresult fixture_build(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->a.ptx = fixture_ptx;
    f->a.fatbin = fatbin_words;
    f->a.ptx_path = ptx_path;
    for (int i = 0; i < 3; i++) {
        if (posix_memalign(&f->blocks[i], 4096, 4096) != 0) {
            f->blocks[i] = NULL;
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        memset(f->blocks[i], 0, 4096);
    }
    f->a.pageable = f->blocks[0];
    f->a.unregistered = f->blocks[1];
    f->a.registered = f->blocks[2];

    TRY(drv.cuDeviceGet_2000(&f->a.dev, 0));
    TRY(drv.cuCtxCreate_3020(&f->a.ctx, 0, f->a.dev));
    TRY(drv.cuStreamCreate_2000(&f->a.stream, CU_STREAM_NON_BLOCKING));
    TRY(drv.cuEventCreate_2000(&f->a.event, 0));
    TRY(drv.cuEventCreate_2000(&f->a.event2, 0));
    TRY(drv.cuMemAlloc_3020(&f->a.buf, 4096));
    TRY(drv.cuMemAlloc_3020(&f->a.buf2, 4096));
    TRY(drv.cuMemAllocAsync_11020(&f->a.async_buf, 4096, f->a.stream));
    TRY(drv.cuMemAllocManaged_6000(&f->a.managed, 4096, CU_MEM_ATTACH_GLOBAL));
    TRY(drv.cuMemAllocHost_3020(&f->a.host, 4096));
    TRY(drv.cuMemHostRegister_6050(f->a.registered, 4096, 0));
    f->registered = true;
    TRY(drv.cuModuleLoadData_2000(&f->a.module, fixture_ptx));
    TRY(drv.cuModuleGetFunction_2000(&f->a.function, f->a.module, "add"));
    TRY(drv.cuModuleGetFunction_2000(&f->noargs, f->a.module, "noargs"));
    TRY(drv.cuModuleGetFunction_2000(&f->trap, f->a.module, "trap_kernel"));

    TRY(drv.cuStreamBeginCapture_10010(f->a.stream, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUresult launched =
        drv.cuLaunchKernel_4000(f->noargs, 1, 1, 1, 1, 1, 1, 0, f->a.stream, NULL, NULL);
    CUgraph g = NULL;
    CUresult ended = drv.cuStreamEndCapture_10000(f->a.stream, &g);
    if (ended == CUDA_SUCCESS)
        f->a.graph = g;
    TRY(launched);
    TRY(ended);
    size_t n = 1;
    TRY(drv.cuGraphGetNodes_10000(f->a.graph, &f->a.node, &n));
    TRY(drv.cuGraphInstantiateWithFlags_11040(&f->a.exec, f->a.graph, 0));

    TRY(drv.cuEventRecord_2000(f->a.event, f->a.stream));
    TRY(drv.cuEventRecord_2000(f->a.event2, f->a.stream));
    return drv.cuStreamSynchronize_2000(f->a.stream);
}

/* The row's preparation, in A before the state is made. */
static CUresult prepare(fixture *f, const rules_row *row)
{
    if (row->flags & R_CAPTURING)
        TRY(drv.cuStreamBeginCapture_10010(f->a.stream, CU_STREAM_CAPTURE_MODE_RELAXED));
    if (row->flags & R_RETAINED) {
        CUcontext primary;
        TRY(drv.cuDevicePrimaryCtxRetain_7000(&primary, f->a.dev));
        f->primary_retained = true;
    }
    return CUDA_SUCCESS;
}

/* A's sticky error: trap_kernel on the legacy stream (the fixture's stream may
 * be capturing), and the synchronization that reports it. */
static bool poison(fixture *f, CUresult *r)
{
    *r = drv.cuLaunchKernel_4000(f->trap, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    if (*r != CUDA_SUCCESS)
        return false;
    *r = drv.cuStreamSynchronize_2000(NULL);
    return *r != CUDA_SUCCESS;
}

/* --- the states ---------------------------------------------------------------------------------- */

typedef struct destroy_job {
    CUcontext ctx;
    CUresult r;
} destroy_job;

static void *destroy_on_another_thread(void *arg)
{
    destroy_job *job = arg;
    job->r = drv.cuCtxDestroy_4000(job->ctx);
    return NULL;
}

/* Destroys A from another thread, leaving it current on this one. */
static CUresult destroy_current_elsewhere(fixture *f)
{
    destroy_job job = {f->a.ctx, CUDA_ERROR_UNKNOWN};
    pthread_t t;
    if (pthread_create(&t, NULL, destroy_on_another_thread, &job) != 0)
        return CUDA_ERROR_OPERATING_SYSTEM;
    pthread_join(t, NULL);
    if (job.r == CUDA_SUCCESS)
        f->gone |= BIT(H_CONTEXT);
    return job.r;
}

/* Pops A, makes B current, destroys A: A's objects are stale. */
static CUresult destroy_a_under_b(fixture *f)
{
    CUcontext popped;
    TRY(drv.cuCtxPopCurrent_4000(&popped));
    TRY(drv.cuCtxCreate_3020(&f->other, 0, f->a.dev));
    TRY(drv.cuCtxDestroy_4000(f->a.ctx));
    f->gone |= BIT(H_CONTEXT);
    return CUDA_SUCCESS;
}

/* Destroys the object behind handle kind h (A current). */
static CUresult destroy_object(fixture *f, rules_handle h)
{
    rules_args *a = &f->a;
    CUresult r;
    switch (h) {
    case H_STREAM:
        r = drv.cuStreamDestroy_4000(a->stream);
        break;
    case H_EVENT:
        r = drv.cuEventDestroy_4000(a->event);
        break;
    case H_BUF:
        r = drv.cuMemFree_3020(a->buf);
        break;
    case H_ASYNC_BUF:
        r = drv.cuMemFreeAsync_11020(a->async_buf, a->stream);
        if (r == CUDA_SUCCESS)
            r = drv.cuStreamSynchronize_2000(a->stream);
        break;
    case H_MANAGED:
        r = drv.cuMemFree_3020(a->managed);
        break;
    case H_HOST:
        r = drv.cuMemFreeHost_2000(a->host);
        break;
    case H_REGISTERED:
        r = drv.cuMemHostUnregister_4000(a->registered);
        break;
    case H_MODULE:
    case H_FUNCTION: /* a function dies with its module */
        r = drv.cuModuleUnload_2000(a->module);
        if (r == CUDA_SUCCESS)
            f->gone |= BIT(H_MODULE);
        break;
    case H_GRAPH:
    case H_NODE: /* a node dies with its graph */
        r = drv.cuGraphDestroy_10000(a->graph);
        if (r == CUDA_SUCCESS)
            f->gone |= BIT(H_GRAPH);
        break;
    case H_EXEC:
        r = drv.cuGraphExecDestroy_10000(a->exec);
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE; /* no such column for the others */
    }
    if (r == CUDA_SUCCESS)
        f->gone |= BIT(h);
    return r;
}

static void null_handle(rules_args *a, rules_handle h)
{
    switch (h) {
    case H_CONTEXT:
        a->ctx = NULL;
        break;
    case H_STREAM:
        a->stream = NULL;
        break;
    case H_EVENT:
        a->event = NULL;
        break;
    case H_BUF:
        a->buf = 0;
        break;
    case H_ASYNC_BUF:
        a->async_buf = 0;
        break;
    case H_MANAGED:
        a->managed = 0;
        break;
    case H_HOST:
        a->host = NULL;
        break;
    case H_REGISTERED:
        a->registered = NULL;
        break;
    case H_MODULE:
        a->module = NULL;
        break;
    case H_FUNCTION:
        a->function = NULL;
        break;
    case H_GRAPH:
        a->graph = NULL;
        break;
    case H_EXEC:
        a->exec = NULL;
        break;
    case H_NODE:
        a->node = NULL;
        break;
    default:
        break;
    }
}

/* Makes the column's state from "A current", and the call's handles in *a
 * (the fixture's, the primary one replaced); *owner: the context current for
 * the call (what the call makes belongs to it), NULL for none. */
static CUresult make_state(fixture *f, const rules_row *row, rules_column col, rules_args *a,
                           CUcontext *owner)
{
    CUcontext popped;
    *a = f->a;
    *owner = f->a.ctx;
    switch (col) {
    case COL_OK:
    case COL_POISONED:
        return CUDA_SUCCESS;
    case COL_NONE:
        *owner = NULL;
        return drv.cuCtxPopCurrent_4000(&popped);
    case COL_OTHER:
        TRY(drv.cuCtxPopCurrent_4000(&popped));
        TRY(drv.cuCtxCreate_3020(&f->other, 0, f->a.dev));
        *owner = f->other;
        return CUDA_SUCCESS;
    case COL_OTHERDEV: {
        CUdevice dev1;
        TRY(drv.cuCtxPopCurrent_4000(&popped));
        TRY(drv.cuDeviceGet_2000(&dev1, 1));
        TRY(drv.cuCtxCreate_3020(&f->otherdev, 0, dev1));
        *owner = f->otherdev;
        return CUDA_SUCCESS;
    }
    case COL_DESTROYED:
        if (row->handle == H_CURRENT)
            return destroy_current_elsewhere(f);
        *owner = NULL;
        TRY(destroy_a_under_b(f));
        *owner = f->other;
        return CUDA_SUCCESS;
    case COL_NULL:
        null_handle(a, row->handle);
        return CUDA_SUCCESS;
    case COL_STALE:
        if (row->handle != H_CONTEXT)
            return destroy_object(f, row->handle);
        *owner = NULL;
        TRY(destroy_a_under_b(f));
        *owner = f->other;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* --- the teardown ---------------------------------------------------------------------------------- */

/* Pops until nothing is current. */
static bool reset_stack(void)
{
    for (int i = 0; i < 64; i++) {
        CUcontext c = NULL;
        if (drv.cuCtxGetCurrent_4000(&c) == CUDA_SUCCESS && !c)
            return true;
        if (drv.cuCtxPopCurrent_4000(&c) != CUDA_SUCCESS)
            drv.cuCtxSetCurrent_4000(NULL);
    }
    return false;
}

static bool alive(const fixture *f, CUcontext c)
{
    return c && (c != f->a.ctx || !(f->gone & BIT(H_CONTEXT)));
}

/* Ends a capture in progress on s, if any, and destroys what it made. */
static void end_capture(CUstream s)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (drv.cuStreamIsCapturing_10000(s, &st) != CUDA_SUCCESS ||
        st == CU_STREAM_CAPTURE_STATUS_NONE)
        return;
    CUgraph g = NULL;
    if (drv.cuStreamEndCapture_10000(s, &g) == CUDA_SUCCESS && g)
        drv.cuGraphDestroy_10000(g);
}

/* What the call made, freed in the context it was made in (when that lives:
 * a context's death frees what it had, but a graph, which outlives it). */
static void free_made(const fixture *f, const rules_out *o, CUcontext owner)
{
    if (!alive(f, owner)) {
        if (o->graph)
            drv.cuGraphDestroy_10000(o->graph);
        return;
    }
    if (drv.cuCtxPushCurrent_4000(owner) != CUDA_SUCCESS)
        return;
    if (o->exec)
        drv.cuGraphExecDestroy_10000(o->exec);
    if (o->graph)
        drv.cuGraphDestroy_10000(o->graph);
    if (o->module)
        drv.cuModuleUnload_2000(o->module);
    if (o->event)
        drv.cuEventDestroy_4000(o->event);
    if (o->stream)
        drv.cuStreamDestroy_4000(o->stream);
    if (o->dptr)
        drv.cuMemFree_3020(o->dptr);
    if (o->async_dptr) {
        drv.cuMemFreeAsync_11020(o->async_dptr, NULL);
        drv.cuStreamSynchronize_2000(NULL);
    }
    if (o->host)
        drv.cuMemFreeHost_2000(o->host);
    if (o->registered)
        drv.cuMemHostUnregister_4000(f->a.unregistered);
    CUcontext popped;
    drv.cuCtxPopCurrent_4000(&popped);
}

static void teardown(fixture *f, const rules_out *o, CUcontext owner)
{
    reset_stack();
    free_made(f, o, owner);
    if (o->ctx)
        drv.cuCtxDestroy_4000(o->ctx);
    if (o->primary)
        drv.cuDevicePrimaryCtxRelease_11000(f->a.dev);
    if (o->mode_exchanged) {
        CUstreamCaptureMode mode = o->old_mode;
        drv.cuThreadExchangeStreamCaptureMode_10010(&mode);
    }
    if (f->primary_retained)
        drv.cuDevicePrimaryCtxRelease_11000(f->a.dev);
    /* A's context-independent objects (graphs) and its registration go
     * first; its death frees the rest. Once it is dead, what it had is left
     * alone but its graph, which outlives it (on both drivers: the H200
     * destroys a graph whose context is gone, expected.txt's
     * cuGraphDestroy@10000 destroyed cell), and is destroyed after. */
    bool a_alive = alive(f, f->a.ctx);
    if (!a_alive && f->a.graph && !(f->gone & BIT(H_GRAPH)))
        drv.cuGraphDestroy_10000(f->a.graph);
    if (a_alive && drv.cuCtxPushCurrent_4000(f->a.ctx) == CUDA_SUCCESS) {
        if (f->a.stream && !(f->gone & BIT(H_STREAM)))
            end_capture(f->a.stream);
        if (f->a.exec && !(f->gone & BIT(H_EXEC)))
            drv.cuGraphExecDestroy_10000(f->a.exec);
        if (f->a.graph && !(f->gone & BIT(H_GRAPH)))
            drv.cuGraphDestroy_10000(f->a.graph);
        if (f->registered && !(f->gone & BIT(H_REGISTERED)))
            drv.cuMemHostUnregister_4000(f->a.registered);
        drv.cuCtxDestroy_4000(f->a.ctx); /* and pops it */
    }
    if (f->other)
        drv.cuCtxDestroy_4000(f->other);
    if (f->otherdev)
        drv.cuCtxDestroy_4000(f->otherdev);
    reset_stack();
    for (int i = 0; i < 3; i++)
        free(f->blocks[i]);
}

/* After a teardown: nothing current, and on the fake nothing alive. */
static bool clean(const char *row_name, rules_column col)
{
    CUcontext c = NULL;
    if (drv.cuCtxGetCurrent_4000(&c) != CUDA_SUCCESS || c) {
        fprintf(stderr, "rules: %s %s: the teardown left a context current\n", row_name,
                rules_column_names[col]);
        return false;
    }
#ifdef CUS_TEST_FAKE
    size_t live = cus_fake_live_handles(CUS_FAKE_HANDLE_ANY);
    int depth = cus_fake_thread_stack_depth();
    if (live || depth) {
        fprintf(stderr, "rules: %s %s: the teardown left %zu live handles and a stack %d deep\n",
                row_name, rules_column_names[col], live, depth);
        return false;
    }
#endif
    return true;
}

/* --- a cell ---------------------------------------------------------------------------------------- */

/* Whether the call was given the fixture's live object (so that a successful
 * destroy-type call consumed it). */
static bool given_live_object(rules_column col)
{
    return col != COL_NULL && col != COL_STALE && col != COL_DESTROYED;
}

void (*rules_cell_result_hook)(const char *result);

/* The cell's result is known: tell the hook, before any teardown. */
static void settle_text(char *out, size_t size, const char *text)
{
    rules_copy(out, size, text);
    if (rules_cell_result_hook)
        rules_cell_result_hook(out);
}

static void settle(char *out, size_t size, const char *prefix, CUresult r)
{
    char text[RULES_CELL_SIZE], name[64];
    snprintf(text, sizeof text, "%s%s", prefix, rules_result_name(r, name, sizeof name));
    settle_text(out, size, text);
}

bool rules_run_cell(const rules_row *row, rules_column col, char *out, size_t size)
{
    char name[96];
    rules_row_name(row, name, sizeof name);
    if (!(rules_columns_of(row) & COL_BIT(col))) {
        settle_text(out, size, "-");
        return true;
    }
    if (!rules_row_present(row)) {
        settle_text(out, size, "absent");
        return true;
    }
    if (col == COL_OTHERDEV && rules_device_count() < 2) {
        settle_text(out, size, "n/a");
        return true;
    }

    fixture f;
    rules_out o;
    rules_args args;
    memset(&o, 0, sizeof o);
    CUcontext owner = NULL;
    CUresult r = fixture_build(&f);
    if (r == CUDA_SUCCESS)
        r = prepare(&f, row);
    if (r == CUDA_SUCCESS && col == COL_POISONED) {
        if (!poison(&f, &r)) {
            if (r == CUDA_SUCCESS)
                settle_text(out, size, "setup:not-poisoned");
            else
                settle(out, size, "setup:", r);
            teardown(&f, &o, NULL);
            return clean(name, col);
        }
        r = CUDA_SUCCESS;
    }
    if (r == CUDA_SUCCESS)
        r = make_state(&f, row, col, &args, &owner);
    if (r != CUDA_SUCCESS) {
        settle(out, size, "setup:", r);
        teardown(&f, &o, owner);
        return clean(name, col);
    }

    r = row->call(&args, &o);

    if ((row->flags & R_CONSUMES) && r == CUDA_SUCCESS && given_live_object(col)) {
        f.gone |= BIT(row->handle);
        if (row->handle == H_DEVICE) /* cuDevicePrimaryCtxRelease: the retain */
            f.primary_retained = false;
    }
    settle(out, size, "", r);
    teardown(&f, &o, owner);
    return clean(name, col);
}

/* The entry points that the fixture, the states and the teardown call. */
#define FIXTURE_NEEDS(X)                                                                   \
    X(cuGetErrorName_6000) X(cuInit_2000) X(cuDeviceGet_2000) X(cuDeviceGetCount_2000)    \
    X(cuCtxCreate_3020) X(cuCtxDestroy_4000) X(cuCtxPushCurrent_4000)                      \
    X(cuCtxPopCurrent_4000) X(cuCtxSetCurrent_4000) X(cuCtxGetCurrent_4000)                \
    X(cuDevicePrimaryCtxRetain_7000) X(cuDevicePrimaryCtxRelease_11000)                    \
    X(cuStreamCreate_2000) X(cuStreamDestroy_4000) X(cuStreamSynchronize_2000)             \
    X(cuEventCreate_2000) X(cuEventDestroy_4000) X(cuEventRecord_2000)                     \
    X(cuMemAlloc_3020) X(cuMemFree_3020) X(cuMemAllocAsync_11020) X(cuMemFreeAsync_11020)  \
    X(cuMemAllocManaged_6000) X(cuMemAllocHost_3020) X(cuMemFreeHost_2000)                 \
    X(cuMemHostRegister_6050) X(cuMemHostUnregister_4000) X(cuModuleLoadData_2000)         \
    X(cuModuleUnload_2000) X(cuModuleGetFunction_2000) X(cuLaunchKernel_4000)              \
    X(cuStreamBeginCapture_10010) X(cuStreamEndCapture_10000) X(cuStreamIsCapturing_10000) \
    X(cuGraphGetNodes_10000) X(cuGraphInstantiateWithFlags_11040)                          \
    X(cuGraphExecDestroy_10000) X(cuGraphDestroy_10000)                                    \
    X(cuThreadExchangeStreamCaptureMode_10010)

bool rules_fixture_ready(char *why, size_t size)
{
    static const struct {
        const char *name;
        size_t offset;
    } needs[] = {
#define FIXTURE_NEED_(member) {#member, offsetof(rules_driver, member)},
        FIXTURE_NEEDS(FIXTURE_NEED_)
#undef FIXTURE_NEED_
    };
    for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++) {
        void *p;
        memcpy(&p, (const char *)&drv + needs[i].offset, sizeof p);
        if (!p) {
            snprintf(why, size, "the driver does not resolve %s, which the fixture needs",
                     needs[i].name);
            return false;
        }
    }
    return true;
}
