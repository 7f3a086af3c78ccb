/* The table of every_call.h for the memory, module, function, launch and
 * graph headers. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "every_call.h"

/* --- memory.h: allocations -------------------------------------------------------------------- */

static cus_status c_buffer_alloc(world *w)
{
    cus_autoptr(cus_buffer) b = NULL;
    return cus_buffer_alloc(w->ctx, 256, &b);
}

static cus_status c_buffer_alloc_array(world *w)
{
    cus_autoptr(cus_buffer) b = NULL;
    return cus_buffer_alloc_array(w->ctx, 64, 4, &b);
}

static cus_status c_buffer_alloc_n(world *w)
{
    cus_autoptr(cus_buffer) b = NULL;
    return cus_buffer_alloc_n(w->ctx, uint32_t, 64, &b);
}

static cus_status c_buffer_alloc_async(world *w)
{
    cus_autoptr(cus_buffer) b = NULL;
    return cus_buffer_alloc_async(w->stream, 256, &b);
}

static cus_status c_buffer_alloc_managed(world *w)
{
    cus_autoptr(cus_buffer) b = NULL;
    return cus_buffer_alloc_managed(w->ctx, 256, CU_MEM_ATTACH_GLOBAL, &b);
}

static cus_status c_buffer_alloc_managed_host(world *w)
{
    cus_autoptr(cus_buffer) b = NULL;
    return cus_buffer_alloc_managed(w->ctx, 256, CU_MEM_ATTACH_HOST, &b);
}

static cus_status c_host_buffer_alloc(world *w)
{
    cus_autoptr(cus_host_buffer) h = NULL;
    return cus_host_buffer_alloc(w->ctx, 256, CU_MEMHOSTALLOC_PORTABLE, &h);
}

static cus_status c_host_buffer_register(world *w)
{
    /* The caller's memory, alive until the registration is dropped. */
    static unsigned char mem[4096] __attribute__((aligned(4096)));
    cus_autoptr(cus_host_buffer) h = NULL;
    return cus_host_buffer_register(w->ctx, mem, sizeof mem, 0, &h);
}

/* --- memory.h: managed memory, info, peers ---------------------------------------------------- */

static cus_status c_buffer_prefetch(world *w)
{
    return cus_buffer_prefetch(w->managed, w->dev.handle, w->stream);
}

static cus_status c_buffer_prefetch_cpu(world *w)
{
    return cus_buffer_prefetch(w->managed, CU_DEVICE_CPU, w->stream);
}

/* Set, then unset: the world's managed buffer keeps no advice. */
static cus_status c_buffer_advise(world *w)
{
    CUS_TRY(cus_buffer_advise(w->managed, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, w->dev.handle));
    return cus_buffer_advise(w->managed, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, w->dev.handle);
}

static cus_status c_memory_info(world *w)
{
    size_t free_bytes = 0, total_bytes = 0;
    return cus_memory_info(w->ctx, &free_bytes, &total_bytes);
}

static cus_status c_context_can_access_peer(world *w)
{
    bool can = true;
    return cus_context_can_access_peer(w->ctx, w->other, &can);
}

/* ctx and other share the fake's one device, so the driver refuses peer
 * access (CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, as cuDeviceCanAccessPeer says
 * 0): that answer, which went through the whole call, is the expected one. */
static cus_status c_context_enable_peer_access(world *w)
{
    cus_status st = cus_context_enable_peer_access(w->ctx, w->other);
    if (st == (cus_status)CUDA_ERROR_PEER_ACCESS_UNSUPPORTED && cus_last_status() == st)
        return CUS_SUCCESS;
    return st;
}

/* The other way round: the poisoned-peer check (the peer is ctx). */
static cus_status c_context_enable_peer_access_reverse(world *w)
{
    cus_status st = cus_context_enable_peer_access(w->other, w->ctx);
    if (st == (cus_status)CUDA_ERROR_PEER_ACCESS_UNSUPPORTED && cus_last_status() == st)
        return CUS_SUCCESS;
    return st;
}

/* --- memory.h: copies ------------------------------------------------------------------------- */

static cus_status c_copy_to_device(world *w)
{
    return cus_copy_to_device(w->buf, 0, w->bytes, 256);
}

static cus_status c_copy_to_host(world *w)
{
    unsigned char out[256];
    return cus_copy_to_host(out, w->buf, 128, sizeof out);
}

static cus_status c_copy_device(world *w)
{
    return cus_copy_device(w->buf2, 0, w->buf, 256, 512);
}

/* From ctx's buffer into other's: a peer copy (cuMemcpyPeer). */
static cus_status c_copy_device_peer(world *w)
{
    return cus_copy_device(w->other_buf, 0, w->buf, 0, 512);
}

static cus_status c_copy_to_device_async(world *w)
{
    return cus_copy_to_device_async(w->buf, 64, cus_host_buffer_data(w->host), 256, w->stream);
}

/* From pageable memory: the driver copies synchronously. */
static cus_status c_copy_to_device_async_pageable(world *w)
{
    return cus_copy_to_device_async(w->buf2, 0, w->bytes, sizeof w->bytes, w->stream);
}

static cus_status c_copy_to_host_async(world *w)
{
    return cus_copy_to_host_async(cus_host_buffer_data(w->host), w->buf, 0, 256, w->stream);
}

static cus_status c_copy_device_async(world *w)
{
    return cus_copy_device_async(w->buf2, 512, w->buf, 0, 512, w->stream);
}

/* Into ctx's buffer from other's, on ctx's stream: cuMemcpyPeerAsync. */
static cus_status c_copy_device_async_peer(world *w)
{
    return cus_copy_device_async(w->buf, 0, w->other_buf, 0, 512, w->stream);
}

/* From ctx's buffer into other's, on other's legacy default stream: the
 * source's context is checked too. */
static cus_status c_copy_device_async_peer_other(world *w)
{
    cus_autoptr(cus_stream) legacy = NULL;
    CUS_TRY(cus_stream_legacy(w->other, &legacy));
    return cus_copy_device_async(w->other_buf, 256, w->buf, 0, 256, legacy);
}

static cus_status c_copy_to_host_async_legacy(world *w)
{
    cus_autoptr(cus_stream) legacy = NULL;
    CUS_TRY(cus_stream_legacy(w->ctx, &legacy));
    return cus_copy_to_host_async(cus_host_buffer_data(w->host), w->buf, 0, 4096, legacy);
}

/* --- memory.h: fills -------------------------------------------------------------------------- */

static cus_status c_buffer_fill_u8(world *w)
{
    return cus_buffer_fill_u8(w->buf, 3, 0xab, 100);
}

static cus_status c_buffer_fill_u16(world *w)
{
    return cus_buffer_fill_u16(w->buf, 2, 0xabcd, 100);
}

static cus_status c_buffer_fill_u32(world *w)
{
    return cus_buffer_fill_u32(w->buf, 4, 0xdeadbeefu, 100);
}

static cus_status c_buffer_fill_u8_async(world *w)
{
    return cus_buffer_fill_u8_async(w->buf, 1, 0x5a, 200, w->stream);
}

static cus_status c_buffer_fill_u16_async(world *w)
{
    return cus_buffer_fill_u16_async(w->buf, 8, 0x1234, 200, w->stream);
}

static cus_status c_buffer_fill_u32_async(world *w)
{
    return cus_buffer_fill_u32_async(w->buf2, 0, 0x01020304u, 1024, w->stream);
}

/* --- module.h --------------------------------------------------------------------------------- */

static cus_status c_module_load_data(world *w)
{
    cus_autoptr(cus_module) m = NULL;
    return cus_module_load_data(w->ctx, every_call_ptx, every_call_ptx_size, NULL, &m);
}

static cus_status c_module_load_data_jit(world *w)
{
    const cus_jit_options jit = {
        .optimization_level = 2,
        .set_level = true,
        .max_registers = 64,
        .line_info = true,
    };
    cus_autoptr(cus_module) m = NULL;
    return cus_module_load_data(w->ctx, every_call_ptx, 0, &jit, &m);
}

/* The PTX, without its NUL, in a file of its own, removed on every path. */
static cus_status c_module_load_file(world *w)
{
    char path[] = "/tmp/cuscope-every-call-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return CUS_ERROR_INVALID_ARGUMENT;
    size_t n = every_call_ptx_size - 1;
    bool written = write(fd, every_call_ptx, n) == (ssize_t)n;
    if (close(fd) != 0)
        written = false;
    if (!written) {
        unlink(path);
        return CUS_ERROR_INVALID_ARGUMENT;
    }
    cus_autoptr(cus_module) m = NULL;
    cus_status st = cus_module_load_file(w->ctx, path, NULL, &m);
    unlink(path);
    return st;
}

/* A first lookup (cuModuleGetFunction, the layout): in a module of its own,
 * as the world's has looked up both of its kernels. */
static cus_status c_module_get_function(world *w)
{
    cus_autoptr(cus_module) m = NULL;
    CUS_TRY(cus_module_load_data(w->ctx, every_call_ptx, every_call_ptx_size, NULL, &m));
    cus_autoptr(cus_function) f = NULL;
    CUS_TRY(cus_module_get_function(m, "add", &f));
    cus_autoptr(cus_function) g = NULL;
    return cus_module_get_function(m, "noargs", &g);
}

/* A repeated lookup: the world's cache answers. */
static cus_status c_module_get_function_cached(world *w)
{
    cus_autoptr(cus_function) f = NULL;
    return cus_module_get_function(w->mod, "add", &f);
}

static cus_status c_module_get_global(world *w)
{
    CUdeviceptr p = 0;
    size_t n = 0;
    CUS_TRY(cus_module_get_global(w->mod, "counter", &p, &n));
    return cus_module_get_global(w->mod, "table", NULL, &n);
}

/* counter's initial value written back: the world's module is unchanged. */
static cus_status c_module_copy_to_global(world *w)
{
    const uint32_t seven = 7;
    return cus_module_copy_to_global(w->mod, "counter", 0, &seven, sizeof seven);
}

static cus_status c_module_copy_to_global_const(world *w)
{
    const unsigned char zeros[16] = {0};
    return cus_module_copy_to_global(w->mod, "table", 48, zeros, sizeof zeros);
}

static cus_status c_module_copy_from_global(world *w)
{
    uint32_t v = 0;
    return cus_module_copy_from_global(&v, w->mod, "counter", 0, sizeof v);
}

static cus_status c_module_copy_from_global_const(world *w)
{
    unsigned char t[64];
    return cus_module_copy_from_global(t, w->mod, "table", 0, sizeof t);
}

static cus_status c_module_function_count(world *w)
{
    unsigned int n = 0;
    return cus_module_function_count(w->mod, &n);
}

static cus_status c_module_function_names(world *w)
{
    const char *names[4] = {NULL};
    unsigned int n = 0;
    return cus_module_function_names(w->mod, names, 4, &n);
}

/* --- function.h ------------------------------------------------------------------------------- */

static cus_status c_function_param_info(world *w)
{
    size_t off = 0, size = 0;
    return cus_function_param_info(w->add, 1, &off, &size);
}

static cus_status c_function_attribute(world *w)
{
    int v = 0;
    CUS_TRY(cus_function_attribute(w->add, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &v));
    return cus_function_attribute(w->add, CU_FUNC_ATTRIBUTE_NUM_REGS, &v);
}

/* Writes back the value it reads: the world's function is unchanged. */
static cus_status c_function_set_attribute(world *w)
{
    const CUfunction_attribute attr = CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
    int v = 0;
    CUS_TRY(cus_function_attribute(w->add, attr, &v));
    return cus_function_set_attribute(w->add, attr, v);
}

static cus_status c_function_set_max_dynamic_shared(world *w)
{
    int v = 0;
    CUS_TRY(cus_function_attribute(w->add, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &v));
    return cus_function_set_max_dynamic_shared(w->add, (size_t)v);
}

/* PREFER_NONE: the default, so the world's function is unchanged. */
static cus_status c_function_set_cache_config(world *w)
{
    return cus_function_set_cache_config(w->add, CU_FUNC_CACHE_PREFER_NONE);
}

static cus_status c_function_set_shared_mem_config(world *w)
{
    return cus_function_set_shared_mem_config(w->add, CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE);
}

static cus_status c_function_max_potential_block(world *w)
{
    int min_grid = 0, block = 0;
    CUS_TRY(cus_function_max_potential_block(w->add, 0, 0, &min_grid, &block));
    return cus_function_max_potential_block(w->add, 1024, 256, NULL, &block);
}

static cus_status c_function_max_active_blocks(world *w)
{
    int blocks = 0;
    return cus_function_max_active_blocks(w->add, 128, 0, &blocks);
}

/* --- launch.h --------------------------------------------------------------------------------- */

static cus_status c_launch(world *w)
{
    return cus_launch(w->add, 1, 1, 0, w->stream, w->buf, 16u);
}

/* A raw device address (u64) rather than a cus_buffer *, dim3 grid and
 * block, dynamic shared memory, the legacy default stream. */
static cus_status c_launch_raw_pointer(world *w)
{
    return cus_launch(w->add, CUS_DIM3(2, 2, 1), CUS_DIM3(16, 4, 1), 1024, NULL,
                      (uint64_t)cus_buffer_ptr(w->buf2), 1024u);
}

static cus_status c_launch_no_args(world *w)
{
    return cus_launch(w->noargs, 4, 32, 0, w->stream);
}

/* cus_grid_for's grid over the buffer's 1024 words. */
static cus_status c_launch_grid_for(world *w)
{
    const unsigned int block = 96;
    return cus_launch(w->add, cus_grid_for(1024, block), block, 0, w->stream, w->buf, 1024u);
}

/* With ctx current on the thread, twice from one call site: the second
 * launch takes the checked site's fast path straight to the driver. */
static cus_status c_launch_fast_path(world *w)
{
    cus_context_scope(g, w->ctx);
    if (g.status)
        return g.status;
    for (int i = 0; i < 2; i++)
        CUS_TRY(cus_launch(w->add, 1, 32, 0, w->stream, w->buf, 16u));
    return CUS_SUCCESS;
}

static cus_status c_function_launch(world *w)
{
    CUdeviceptr p = cus_buffer_ptr(w->buf);
    unsigned int n = 16;
    void *args[] = {&p, &n};
    const size_t sizes[] = {sizeof p, sizeof n};
    return cus_function_launch(w->add, CUS_DIM3(1, 1, 1), CUS_DIM3(64, 1, 1), 0, w->stream, 2,
                               args, sizes);
}

/* sizes NULL: no check; no arguments for noargs. */
static cus_status c_function_launch_unchecked(world *w)
{
    CUdeviceptr p = cus_buffer_ptr(w->buf);
    unsigned int n = 16;
    void *args[] = {&p, &n};
    CUS_TRY(cus_function_launch(w->add, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0, w->stream, 2,
                                args, NULL));
    return cus_function_launch(w->noargs, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0, NULL, 0, NULL,
                               cus_launch_no_args_);
}

static cus_status c_launch_ex(world *w)
{
    const cus_launch_config cfg = {
        .grid = CUS_DIM3(2, 1, 1),
        .block = CUS_DIM3(32, 1, 1),
        .stream = w->stream,
    };
    return cus_launch_ex(w->add, &cfg, w->buf, 16u);
}

/* A cluster of 2 blocks along x (the grid's 4 divide by it). */
static cus_status c_launch_ex_cluster(world *w)
{
    const cus_launch_config cfg = {
        .grid = CUS_DIM3(4, 1, 1),
        .block = CUS_DIM3(64, 1, 1),
        .stream = w->stream,
        .cluster = CUS_DIM3(2, 1, 1),
    };
    return cus_launch_ex(w->add, &cfg, w->buf, 16u);
}

/* Cooperative, without arguments, on the legacy default stream. */
static cus_status c_launch_ex_cooperative(world *w)
{
    const cus_launch_config cfg = {
        .grid = CUS_DIM3(2, 1, 1),
        .block = CUS_DIM3(32, 1, 1),
        .cooperative = true,
    };
    return cus_launch_ex(w->noargs, &cfg);
}

static cus_status c_function_launch_ex(world *w)
{
    CUdeviceptr p = cus_buffer_ptr(w->buf);
    unsigned int n = 16;
    void *args[] = {&p, &n};
    const size_t sizes[] = {sizeof p, sizeof n};
    const cus_launch_config cfg = {
        .grid = CUS_DIM3(2, 2, 1),
        .block = CUS_DIM3(8, 8, 1),
        .stream = w->stream,
        .cluster = CUS_DIM3(1, 2, 0),
        .cooperative = true,
    };
    return cus_function_launch_ex(w->add, &cfg, 2, args, sizes);
}

/* --- graph.h: capture ------------------------------------------------------------------------- */

/* An empty GLOBAL capture, begun and ended by hand (abandoned if the end
 * leaves it open). */
static cus_status c_capture_begin(world *w)
{
    cus_autoptr(cus_graph) graph = NULL;
    cus_capture_guard cap = cus_capture_begin(w->stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
    if (cap.status)
        return cap.status;
    cus_status st = cus_capture_end(&cap, &graph);
    cus_capture_abandon(&cap);
    return st;
}

/* A RELAXED capture of a launch, async copies and a fill: what the graph
 * keeps (the module, the buffers) goes with it. */
static cus_status c_capture_end(world *w)
{
    cus_autoptr(cus_graph) graph = NULL;
    cus_capture_guard cap = cus_capture_begin(w->stream, CU_STREAM_CAPTURE_MODE_RELAXED);
    if (cap.status)
        return cap.status;
    cus_status st = cus_launch(w->add, 1, 1, 0, w->stream, w->buf, 16u);
    if (!st)
        st = cus_copy_to_device_async(w->buf2, 0, cus_host_buffer_data(w->host), 64, w->stream);
    if (!st)
        st = cus_copy_device_async(w->buf, 0, w->buf2, 0, 64, w->stream);
    if (!st)
        st = cus_buffer_fill_u32_async(w->buf2, 0, 1u, 16, w->stream);
    if (!st)
        st = cus_capture_end(&cap, &graph);
    cus_capture_abandon(&cap);
    return st;
}

/* The scoped form: the scope's exit ends what an early return left open. */
static cus_status c_capture_scope(world *w)
{
    cus_autoptr(cus_graph) graph = NULL;
    {
        cus_capture_scope(cap, w->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        CUS_TRY(cap.status);
        CUS_TRY(cus_launch(w->add, 1, 1, 0, w->stream, w->buf2, 16u));
        CUS_TRY(cus_launch(w->noargs, 1, 1, 0, w->stream));
        CUS_TRY(cus_capture_end(&cap, &graph));
    }
    return CUS_SUCCESS;
}

/* While a capture is open on the world's stream, on another stream: asked
 * whether that one captures (cuStreamGetCaptureInfo), then allocated. */
static cus_status c_buffer_alloc_async_capture_elsewhere(world *w)
{
    cus_autoptr(cus_graph) graph = NULL;
    cus_autoptr(cus_stream) s = NULL;
    cus_autoptr(cus_buffer) b = NULL;
    CUS_TRY(cus_stream_create(w->ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    {
        cus_capture_scope(cap, w->stream, CU_STREAM_CAPTURE_MODE_RELAXED);
        CUS_TRY(cap.status);
        CUS_TRY(cus_buffer_alloc_async(s, 256, &b));
        CUS_TRY(cus_capture_end(&cap, &graph));
    }
    return CUS_SUCCESS;
}

/* A second stream joins the capture through an event, launches (its
 * capture found by asking the driver), and is joined back. */
static cus_status c_capture_end_fork_join(world *w)
{
    cus_autoptr(cus_graph) graph = NULL;
    cus_autoptr(cus_stream) s = NULL;
    cus_autoptr(cus_event) fork = NULL;
    cus_autoptr(cus_event) join = NULL;
    CUS_TRY(cus_stream_create(w->ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    CUS_TRY(cus_event_create(w->ctx, CU_EVENT_DISABLE_TIMING, &fork));
    CUS_TRY(cus_event_create(w->ctx, CU_EVENT_DISABLE_TIMING, &join));
    {
        cus_capture_scope(cap, w->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        CUS_TRY(cap.status);
        CUS_TRY(cus_event_record(fork, w->stream));
        CUS_TRY(cus_stream_wait_event(s, fork));
        CUS_TRY(cus_launch(w->add, 1, 1, 0, s, w->buf2, 16u));
        CUS_TRY(cus_event_record(join, s));
        CUS_TRY(cus_stream_wait_event(w->stream, join));
        CUS_TRY(cus_capture_end(&cap, &graph));
    }
    return CUS_SUCCESS;
}

/* A module released while the capture is open: its unload waits for the
 * end of the capture. */
static cus_status c_capture_end_deferred_release(world *w)
{
    cus_autoptr(cus_graph) graph = NULL;
    cus_autoptr(cus_module) m = NULL;
    CUS_TRY(cus_module_load_data(w->ctx, every_call_ptx, every_call_ptx_size, NULL, &m));
    {
        cus_capture_scope(cap, w->stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
        CUS_TRY(cap.status);
        m = cus_module_unref(m);
        CUS_TRY(cus_launch(w->noargs, 1, 1, 0, w->stream));
        CUS_TRY(cus_capture_end(&cap, &graph));
    }
    return CUS_SUCCESS;
}

static void noop_host_fn(void *data)
{
    (void)data;
}

/* A captured host function: its record goes with the graph, which is
 * instantiated and replayed. */
static cus_status c_capture_end_host_fn(world *w)
{
    cus_autoptr(cus_graph) graph = NULL;
    {
        cus_capture_scope(cap, w->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        CUS_TRY(cap.status);
        CUS_TRY(cus_stream_launch_host_fn(w->stream, noop_host_fn, NULL));
        CUS_TRY(cus_capture_end(&cap, &graph));
    }
    cus_autoptr(cus_graph_exec) e = NULL;
    CUS_TRY(cus_graph_instantiate(graph, 0, &e));
    return cus_graph_exec_launch(e, w->stream);
}

/* The same on a stream that joined the capture through an event: the record
 * is found by the capture's id (a capture query), and replayed twice. */
static cus_status c_capture_end_host_fn_joined(world *w)
{
    cus_autoptr(cus_graph) graph = NULL;
    cus_autoptr(cus_stream) s = NULL;
    cus_autoptr(cus_event) fork = NULL;
    cus_autoptr(cus_event) join = NULL;
    CUS_TRY(cus_stream_create(w->ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    CUS_TRY(cus_event_create(w->ctx, CU_EVENT_DISABLE_TIMING, &fork));
    CUS_TRY(cus_event_create(w->ctx, CU_EVENT_DISABLE_TIMING, &join));
    {
        cus_capture_scope(cap, w->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        CUS_TRY(cap.status);
        CUS_TRY(cus_event_record(fork, w->stream));
        CUS_TRY(cus_stream_wait_event(s, fork));
        CUS_TRY(cus_stream_launch_host_fn(s, noop_host_fn, NULL));
        CUS_TRY(cus_event_record(join, s));
        CUS_TRY(cus_stream_wait_event(w->stream, join));
        CUS_TRY(cus_capture_end(&cap, &graph));
    }
    cus_autoptr(cus_graph_exec) e = NULL;
    CUS_TRY(cus_graph_instantiate(graph, 0, &e));
    CUS_TRY(cus_graph_exec_launch(e, w->stream));
    return cus_graph_exec_launch(e, w->stream);
}

static cus_status c_stream_is_capturing(world *w)
{
    bool capturing = true;
    return cus_stream_is_capturing(w->stream, &capturing);
}

/* --- graph.h: graphs and executable graphs ---------------------------------------------------- */

static cus_status c_graph_node_count(world *w)
{
    size_t n = 0;
    return cus_graph_node_count(w->graph, &n);
}

static cus_status c_graph_instantiate(world *w)
{
    cus_autoptr(cus_graph_exec) e = NULL;
    return cus_graph_instantiate(w->graph, 0, &e);
}

static cus_status c_graph_instantiate_auto_free(world *w)
{
    cus_autoptr(cus_graph_exec) e = NULL;
    return cus_graph_instantiate(w->graph, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH, &e);
}

static cus_status c_graph_exec_launch(world *w)
{
    return cus_graph_exec_launch(w->exec, w->stream);
}

static cus_status c_graph_exec_launch_legacy(world *w)
{
    return cus_graph_exec_launch(w->exec, NULL);
}

static cus_status c_graph_exec_upload(world *w)
{
    return cus_graph_exec_upload(w->exec, w->stream);
}

/* From the graph the exec already replays: the parameters again. */
static cus_status c_graph_exec_update(world *w)
{
    CUgraphExecUpdateResult result = CU_GRAPH_EXEC_UPDATE_ERROR;
    return cus_graph_exec_update(w->exec, w->graph, &result);
}

/* From a new capture of the same topology (another buffer), on an exec of
 * its own: the exec then keeps both graphs. */
static cus_status c_graph_exec_update_new_graph(world *w)
{
    cus_autoptr(cus_graph_exec) e = NULL;
    CUS_TRY(cus_graph_instantiate(w->graph, 0, &e));
    CUS_TRY(cus_graph_exec_launch(e, w->stream));
    cus_autoptr(cus_graph) graph = NULL;
    {
        cus_capture_scope(cap, w->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        CUS_TRY(cap.status);
        CUS_TRY(cus_launch(w->add, 1, 1, 0, w->stream, w->buf2, 32u));
        CUS_TRY(cus_capture_end(&cap, &graph));
    }
    CUgraphExecUpdateResult result = CU_GRAPH_EXEC_UPDATE_ERROR;
    return cus_graph_exec_update(e, graph, &result);
}

const every_call every_calls_data[] = {
    /* memory.h */
    {"cus_buffer_alloc", c_buffer_alloc, 0, NULL},
    {"cus_buffer_alloc_array", c_buffer_alloc_array, 0, NULL},
    {"cus_buffer_alloc_array (cus_buffer_alloc_n)", c_buffer_alloc_n, 0, NULL},
    {"cus_buffer_alloc_async", c_buffer_alloc_async, 0, NULL},
    {"cus_buffer_alloc_managed", c_buffer_alloc_managed, 0, NULL},
    {"cus_buffer_alloc_managed (CU_MEM_ATTACH_HOST)", c_buffer_alloc_managed_host, 0, NULL},
    {"cus_host_buffer_alloc", c_host_buffer_alloc, 0, NULL},
    {"cus_host_buffer_register", c_host_buffer_register, 0, NULL},
    {"cus_buffer_prefetch", c_buffer_prefetch, 0, NULL},
    {"cus_buffer_prefetch (CU_DEVICE_CPU)", c_buffer_prefetch_cpu, 0, NULL},
    {"cus_buffer_advise", c_buffer_advise, 0, NULL},
    {"cus_memory_info", c_memory_info, 0, NULL},
    {"cus_context_can_access_peer", c_context_can_access_peer, EC_NOT_POISONED,
     "asks cuDeviceCanAccessPeer about the two contexts' devices: no call on either context, "
     "so no poison check (lib/memory.c)"},
    {"cus_context_enable_peer_access", c_context_enable_peer_access, 0, NULL},
    {"cus_context_enable_peer_access (ctx as the peer)", c_context_enable_peer_access_reverse, 0,
     NULL},
    {"cus_copy_to_device", c_copy_to_device, 0, NULL},
    {"cus_copy_to_host", c_copy_to_host, 0, NULL},
    {"cus_copy_device", c_copy_device, 0, NULL},
    {"cus_copy_device (peer)", c_copy_device_peer, 0, NULL},
    {"cus_copy_to_device_async", c_copy_to_device_async, 0, NULL},
    {"cus_copy_to_device_async (pageable memory)", c_copy_to_device_async_pageable, 0, NULL},
    {"cus_copy_to_host_async", c_copy_to_host_async, 0, NULL},
    {"cus_copy_device_async", c_copy_device_async, 0, NULL},
    {"cus_copy_device_async (peer)", c_copy_device_async_peer, 0, NULL},
    {"cus_copy_device_async (peer, other's legacy stream)", c_copy_device_async_peer_other, 0,
     NULL},
    {"cus_copy_to_host_async (legacy stream)", c_copy_to_host_async_legacy, 0, NULL},
    {"cus_buffer_fill_u8", c_buffer_fill_u8, 0, NULL},
    {"cus_buffer_fill_u16", c_buffer_fill_u16, 0, NULL},
    {"cus_buffer_fill_u32", c_buffer_fill_u32, 0, NULL},
    {"cus_buffer_fill_u8_async", c_buffer_fill_u8_async, 0, NULL},
    {"cus_buffer_fill_u16_async", c_buffer_fill_u16_async, 0, NULL},
    {"cus_buffer_fill_u32_async", c_buffer_fill_u32_async, 0, NULL},
    /* module.h */
    {"cus_module_load_data", c_module_load_data, 0, NULL},
    {"cus_module_load_data (JIT options, size 0)", c_module_load_data_jit, 0, NULL},
    {"cus_module_load_file", c_module_load_file, 0, NULL},
    {"cus_module_get_function", c_module_get_function, 0, NULL},
    {"cus_module_get_function (cached)", c_module_get_function_cached, EC_NO_DRIVER,
     "a repeated lookup is answered by the module's cache without a driver call (module.h)"},
    {"cus_module_get_global", c_module_get_global, 0, NULL},
    {"cus_module_copy_to_global", c_module_copy_to_global, 0, NULL},
    {"cus_module_copy_to_global (.const)", c_module_copy_to_global_const, 0, NULL},
    {"cus_module_copy_from_global", c_module_copy_from_global, 0, NULL},
    {"cus_module_copy_from_global (.const)", c_module_copy_from_global_const, 0, NULL},
    {"cus_module_function_count", c_module_function_count, 0, NULL},
    {"cus_module_function_names", c_module_function_names, 0, NULL},
    /* function.h */
    {"cus_function_param_info", c_function_param_info,
     EC_HOST_FN_OK | EC_NOT_POISONED | EC_NO_DRIVER | EC_FORK_OK,
     "reads the layout cached at the lookup: no driver call (function.h: getters need no "
     "driver), so outside the host-function refusal of the calls that may reach the driver "
     "(docs/bad-input.md), and it touches no context"},
    {"cus_function_attribute", c_function_attribute, 0, NULL},
    {"cus_function_set_attribute", c_function_set_attribute, 0, NULL},
    {"cus_function_set_max_dynamic_shared", c_function_set_max_dynamic_shared, 0, NULL},
    {"cus_function_set_cache_config", c_function_set_cache_config, 0, NULL},
    {"cus_function_set_shared_mem_config", c_function_set_shared_mem_config, 0, NULL},
    {"cus_function_max_potential_block", c_function_max_potential_block, 0, NULL},
    {"cus_function_max_active_blocks", c_function_max_active_blocks, 0, NULL},
    /* launch.h */
    {"cus_launch", c_launch, 0, NULL},
    {"cus_launch (u64 address, dim3, legacy stream)", c_launch_raw_pointer, 0, NULL},
    {"cus_launch (no arguments)", c_launch_no_args, 0, NULL},
    {"cus_launch (cus_grid_for)", c_launch_grid_for, 0, NULL},
    {"cus_launch (context current, checked site)", c_launch_fast_path, 0, NULL},
    {"cus_function_launch", c_function_launch, 0, NULL},
    {"cus_function_launch (sizes NULL, no arguments)", c_function_launch_unchecked, 0, NULL},
    {"cus_launch_ex", c_launch_ex, 0, NULL},
    {"cus_launch_ex (cluster)", c_launch_ex_cluster, 0, NULL},
    {"cus_launch_ex (cooperative, no arguments)", c_launch_ex_cooperative, 0, NULL},
    {"cus_function_launch_ex", c_function_launch_ex, 0, NULL},
    /* graph.h */
    {"cus_capture_begin", c_capture_begin, 0, NULL},
    {"cus_capture_end", c_capture_end, 0, NULL},
    {"cus_capture_scope", c_capture_scope, 0, NULL},
    {"cus_buffer_alloc_async (a capture open elsewhere)", c_buffer_alloc_async_capture_elsewhere,
     0, NULL},
    {"cus_capture_end (a stream forked and joined)", c_capture_end_fork_join, 0, NULL},
    {"cus_capture_end (a release deferred to the end)", c_capture_end_deferred_release, 0, NULL},
    {"cus_capture_end (a host function)", c_capture_end_host_fn, 0, NULL},
    {"cus_capture_end (a host function on a joined stream)", c_capture_end_host_fn_joined, 0,
     NULL},
    {"cus_stream_is_capturing", c_stream_is_capturing, 0, NULL},
    {"cus_graph_node_count", c_graph_node_count, 0, NULL},
    {"cus_graph_instantiate", c_graph_instantiate, 0, NULL},
    {"cus_graph_instantiate (AUTO_FREE_ON_LAUNCH)", c_graph_instantiate_auto_free, 0, NULL},
    {"cus_graph_exec_launch", c_graph_exec_launch, 0, NULL},
    {"cus_graph_exec_launch (legacy stream)", c_graph_exec_launch_legacy, 0, NULL},
    {"cus_graph_exec_upload", c_graph_exec_upload, 0, NULL},
    {"cus_graph_exec_update", c_graph_exec_update, 0, NULL},
    {"cus_graph_exec_update (new graph)", c_graph_exec_update_new_graph, 0, NULL},
    {NULL, NULL, 0, NULL},
};
