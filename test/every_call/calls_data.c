/* The table of every_call.h for the memory, module, function, launch and
 * graph headers. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "every_call.h"

/* --- memory.h: allocations -------------------------------------------------------------------- */

static cus_status c_buffer_alloc(world *w)
{
    cus_autoptr(cus_buffer) b = NULL;
    EC_RETURN_OUT(cus_buffer_alloc(w->ctx, 256, &b), b != NULL);
}

static cus_status c_buffer_alloc_array(world *w)
{
    cus_autoptr(cus_buffer) b = NULL;
    EC_RETURN_OUT(cus_buffer_alloc_array(w->ctx, 64, 4, &b), b != NULL);
}

static cus_status c_buffer_alloc_n(world *w)
{
    cus_autoptr(cus_buffer) b = NULL;
    EC_RETURN_OUT(cus_buffer_alloc_n(w->ctx, uint32_t, 64, &b), b != NULL);
}

static cus_status c_buffer_alloc_async(world *w)
{
    cus_autoptr(cus_buffer) b = NULL;
    EC_RETURN_OUT(cus_buffer_alloc_async(w->stream, 256, &b), b != NULL);
}

static cus_status c_buffer_alloc_managed(world *w)
{
    cus_autoptr(cus_buffer) b = NULL;
    EC_RETURN_OUT(cus_buffer_alloc_managed(w->ctx, 256, CU_MEM_ATTACH_GLOBAL, &b), b != NULL);
}

static cus_status c_buffer_alloc_managed_host(world *w)
{
    cus_autoptr(cus_buffer) b = NULL;
    EC_RETURN_OUT(cus_buffer_alloc_managed(w->ctx, 256, CU_MEM_ATTACH_HOST, &b), b != NULL);
}

static cus_status c_host_buffer_alloc(world *w)
{
    cus_autoptr(cus_host_buffer) h = NULL;
    EC_RETURN_OUT(cus_host_buffer_alloc(w->ctx, 256, CU_MEMHOSTALLOC_PORTABLE, &h), h != NULL);
}

static cus_status c_host_buffer_register(world *w)
{
    /* The caller's memory, alive until the registration is dropped. */
    static unsigned char mem[4096] __attribute__((aligned(4096)));
    cus_autoptr(cus_host_buffer) h = NULL;
    EC_RETURN_OUT(cus_host_buffer_register(w->ctx, mem, sizeof mem, 0, &h), h != NULL);
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
    size_t free_bytes = SIZE_MAX, total_bytes = 0;
    EC_RETURN_OUT(cus_memory_info(w->ctx, &free_bytes, &total_bytes),
                  total_bytes > 0 && free_bytes <= total_bytes);
}

static cus_status c_context_can_access_peer(world *w)
{
    bool can = true; /* one device: cuDeviceCanAccessPeer says 0 */
    EC_RETURN_OUT(cus_context_can_access_peer(w->ctx, w->other, &can), !can);
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

/* Whether bytes [a_off, a_off + n) of a equal bytes [b_off, b_off + n) of b
 * (device buffers read back through cus_copy_to_host). */
static bool same_bytes(cus_buffer *a, size_t a_off, const unsigned char *host_b, cus_buffer *b,
                       size_t b_off, size_t n)
{
    static unsigned char x[4096], y[4096];
    if (n > sizeof x || cus_copy_to_host(x, a, a_off, n) != CUS_SUCCESS)
        return false;
    if (!host_b) {
        if (cus_copy_to_host(y, b, b_off, n) != CUS_SUCCESS)
            return false;
        host_b = y;
    } else {
        host_b += b_off;
    }
    return memcmp(x, host_b, n) == 0;
}

static bool k_copy_to_device_async(world *w)
{
    return same_bytes(w->buf, 64, cus_host_buffer_data(w->host), NULL, 0, 256);
}

static bool k_copy_to_device_async_pageable(world *w)
{
    return same_bytes(w->buf2, 0, w->bytes, NULL, 0, sizeof w->bytes);
}

static bool k_copy_to_host_async(world *w)
{
    return same_bytes(w->buf, 0, cus_host_buffer_data(w->host), NULL, 0, 256);
}

static bool k_copy_device_async(world *w)
{
    return same_bytes(w->buf2, 512, NULL, w->buf, 0, 512);
}

static bool k_copy_device_async_peer(world *w)
{
    return same_bytes(w->buf, 0, NULL, w->other_buf, 0, 512);
}

static bool k_copy_device_async_peer_other(world *w)
{
    return same_bytes(w->other_buf, 256, NULL, w->buf, 0, 256);
}

static bool k_copy_to_host_async_legacy(world *w)
{
    return same_bytes(w->buf, 0, cus_host_buffer_data(w->host), NULL, 0, 4096);
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

/* count elements of `size` bytes at byte offset `off` of buf all hold v. */
static bool filled(cus_buffer *buf, size_t off, size_t size, uint32_t v, size_t count)
{
    static unsigned char x[4096];
    if (count * size > sizeof x || cus_copy_to_host(x, buf, off, count * size) != CUS_SUCCESS)
        return false;
    for (size_t i = 0; i < count; i++) {
        uint32_t e = 0;
        memcpy(&e, x + i * size, size); /* little-endian */
        if (e != v)
            return false;
    }
    return true;
}

static bool k_buffer_fill_u8_async(world *w)
{
    return filled(w->buf, 1, 1, 0x5a, 200);
}

static bool k_buffer_fill_u16_async(world *w)
{
    return filled(w->buf, 8, 2, 0x1234, 200);
}

static bool k_buffer_fill_u32_async(world *w)
{
    return filled(w->buf2, 0, 4, 0x01020304u, 1024);
}

/* --- ipc.h ----------------------------------------------------------------------------------- */

#define EC_IPC_EVENT (CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING)

static cus_status c_buffer_ipc_export(world *w)
{
    CUipcMemHandle h;
    memset(&h, 0, sizeof h);
    EC_RETURN_OUT(cus_buffer_ipc_export(w->buf, &h), h.reserved[0] != 0);
}

/* The handle made foreign (the fake's importer side in one process), and
 * read through. */
static cus_status c_buffer_ipc_import(world *w)
{
    CUipcMemHandle h;
    CUS_TRY(cus_buffer_ipc_export(w->buf, &h));
    if (cus_fake_ipc_mem_handle_as_foreign(&h) != CUS_SUCCESS)
        return ec_out_not_set(__func__, "a foreign handle");
    cus_autoptr(cus_buffer) view = NULL;
    EC_CHECK_OUT(cus_buffer_ipc_import(w->ctx, &h, 0, 4096, &view),
                 view != NULL && cus_buffer_get_kind(view) == CUS_BUFFER_IMPORTED);
    unsigned char back[16];
    return cus_copy_to_host(back, view, 0, sizeof back);
}

static cus_status c_event_ipc_export(world *w)
{
    cus_autoptr(cus_event) e = NULL;
    CUS_TRY(cus_event_create(w->ctx, EC_IPC_EVENT, &e));
    CUipcEventHandle h;
    memset(&h, 0, sizeof h);
    EC_RETURN_OUT(cus_event_ipc_export(e, &h), h.reserved[0] != 0);
}

static cus_status c_event_ipc_import(world *w)
{
    cus_autoptr(cus_event) e = NULL;
    CUS_TRY(cus_event_create(w->ctx, EC_IPC_EVENT, &e));
    CUipcEventHandle h;
    CUS_TRY(cus_event_ipc_export(e, &h));
    if (cus_fake_ipc_event_handle_as_foreign(&h) != CUS_SUCCESS)
        return ec_out_not_set(__func__, "a foreign handle");
    cus_autoptr(cus_event) imported = NULL;
    EC_RETURN_OUT(cus_event_ipc_import(w->ctx, &h, &imported),
                  imported != NULL && cus_event_context(imported) == w->ctx);
}

/* --- library.h ------------------------------------------------------------------------------- */

#define EC_LIBRARY_NOTE                                                        \
    "a library belongs to no context: the call neither refuses a poisoned context nor switches"

static cus_status c_library_load_data(world *w)
{
    (void)w;
    cus_autoptr(cus_library) lib = NULL;
    EC_RETURN_OUT(cus_library_load_data(every_call_ptx, every_call_ptx_size, NULL, NULL, &lib),
                  lib != NULL);
}

static cus_status c_library_get_kernel(world *w)
{
    (void)w;
    cus_autoptr(cus_library) lib = NULL;
    CUS_TRY(cus_library_load_data(every_call_ptx, every_call_ptx_size, NULL, NULL, &lib));
    cus_autoptr(cus_kernel) k = NULL;
    EC_RETURN_OUT(cus_library_get_kernel(lib, "add", &k), k != NULL);
}

static cus_status c_kernel_function(world *w)
{
    cus_autoptr(cus_library) lib = NULL;
    CUS_TRY(cus_library_load_data(every_call_ptx, every_call_ptx_size, NULL, NULL, &lib));
    cus_autoptr(cus_kernel) k = NULL;
    CUS_TRY(cus_library_get_kernel(lib, "add", &k));
    CUfunction f = NULL;
    EC_RETURN_OUT(cus_kernel_function(k, w->ctx, &f), f != NULL);
}

static cus_status c_library_get_global(world *w)
{
    cus_autoptr(cus_library) lib = NULL;
    CUS_TRY(cus_library_load_data(every_call_ptx, every_call_ptx_size, NULL, NULL, &lib));
    CUdeviceptr p = 0;
    size_t n = 0;
    EC_RETURN_OUT(cus_library_get_global(lib, w->ctx, "counter", &p, &n), p != 0 && n == 4);
}

/* A library of its own, and its kernel `add`, for the rows below. */
static cus_status ec_library_kernel(cus_library **lib, cus_kernel **k)
{
    CUS_TRY(cus_library_load_data(every_call_ptx, every_call_ptx_size, NULL, NULL, lib));
    return k ? cus_library_get_kernel(*lib, "add", k) : CUS_SUCCESS;
}

static cus_status c_library_load_file(world *w)
{
    (void)w;
    char path[] = "/tmp/cuscope-every-call-lib-XXXXXX";
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
    cus_autoptr(cus_library) lib = NULL;
    cus_status st = cus_library_load_file(path, NULL, &lib);
    unlink(path);
    EC_RETURN_OUT(st, lib != NULL);
}

static cus_status c_library_kernel_count(world *w)
{
    (void)w;
    cus_autoptr(cus_library) lib = NULL;
    CUS_TRY(ec_library_kernel(&lib, NULL));
    unsigned int n = 0;
    EC_RETURN_OUT(cus_library_kernel_count(lib, &n), n == 2);
}

static cus_status c_library_kernel_names(world *w)
{
    (void)w;
    cus_autoptr(cus_library) lib = NULL;
    CUS_TRY(ec_library_kernel(&lib, NULL));
    const char *names[4] = {NULL};
    unsigned int n = 0;
    EC_RETURN_OUT(cus_library_kernel_names(lib, names, 4, &n), n == 2 && names[0] && names[1]);
}

/* The fake's images have no __managed__ variable and no unified function
 * (lib/fake/fake_library.c): the driver's answer for an unknown name
 * (CUDA_ERROR_NOT_FOUND for a variable, CUDA_ERROR_INVALID_VALUE for a
 * function) is that of a call that worked; an injected fault
 * (CUDA_ERROR_UNKNOWN) is still passed on. */
static cus_status ec_unknown_name_is_an_answer(cus_status st, cus_status answer)
{
    return st == answer && cus_last_status() == answer ? CUS_SUCCESS : st;
}

static cus_status c_library_get_managed(world *w)
{
    (void)w;
    cus_autoptr(cus_library) lib = NULL;
    CUS_TRY(ec_library_kernel(&lib, NULL));
    CUdeviceptr p = 0;
    size_t n = 0;
    return ec_unknown_name_is_an_answer(cus_library_get_managed(lib, "counter", &p, &n),
                                        (cus_status)CUDA_ERROR_NOT_FOUND);
}

static cus_status c_library_get_unified_function(world *w)
{
    (void)w;
    cus_autoptr(cus_library) lib = NULL;
    CUS_TRY(ec_library_kernel(&lib, NULL));
    void *fp = NULL;
    return ec_unknown_name_is_an_answer(cus_library_get_unified_function(lib, "add", &fp),
                                        (cus_status)CUDA_ERROR_INVALID_VALUE);
}

/* With w->ctx current: the layout is read in a context (the driver needs
 * one), at the lookup here. */
static cus_status c_kernel_param_info(world *w)
{
    cus_context_scope(g, w->ctx);
    CUS_TRY(g.status);
    cus_autoptr(cus_library) lib = NULL;
    cus_autoptr(cus_kernel) k = NULL;
    CUS_TRY(ec_library_kernel(&lib, &k));
    size_t off = 0, size = 0;
    EC_RETURN_OUT(cus_kernel_param_info(k, 1, &off, &size), off == 8 && size == 4);
}

static cus_status c_kernel_attribute(world *w)
{
    cus_autoptr(cus_library) lib = NULL;
    cus_autoptr(cus_kernel) k = NULL;
    CUS_TRY(ec_library_kernel(&lib, &k));
    int v = 0;
    EC_RETURN_OUT(cus_kernel_attribute(k, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                       cus_context_device(w->ctx), &v),
                  v > 0);
}

static cus_status c_kernel_set_attribute(world *w)
{
    cus_autoptr(cus_library) lib = NULL;
    cus_autoptr(cus_kernel) k = NULL;
    CUS_TRY(ec_library_kernel(&lib, &k));
    return cus_kernel_set_attribute(k, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1024,
                                    cus_context_device(w->ctx));
}

/* --- module.h --------------------------------------------------------------------------------- */

static cus_status c_module_load_data(world *w)
{
    cus_autoptr(cus_module) m = NULL;
    EC_RETURN_OUT(cus_module_load_data(w->ctx, every_call_ptx, every_call_ptx_size, NULL, &m),
                  m != NULL);
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
    EC_RETURN_OUT(cus_module_load_data(w->ctx, every_call_ptx, 0, &jit, &m), m != NULL);
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
    EC_RETURN_OUT(st, m != NULL);
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
    EC_RETURN_OUT(cus_module_get_function(m, "noargs", &g), f != NULL && g != NULL && f != g);
}

/* A repeated lookup: the world's cache answers. */
static cus_status c_module_get_function_cached(world *w)
{
    cus_autoptr(cus_function) f = NULL;
    EC_RETURN_OUT(cus_module_get_function(w->mod, "add", &f), f != NULL);
}

static cus_status c_module_get_global(world *w)
{
    CUdeviceptr p = 0;
    size_t n = 0;
    EC_CHECK_OUT(cus_module_get_global(w->mod, "counter", &p, &n), p != 0 && n == 4);
    EC_RETURN_OUT(cus_module_get_global(w->mod, "table", NULL, &n), n == 64);
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
    EC_RETURN_OUT(cus_module_copy_from_global(&v, w->mod, "counter", 0, sizeof v), v == 7);
}

static cus_status c_module_copy_from_global_const(world *w)
{
    unsigned char t[64];
    return cus_module_copy_from_global(t, w->mod, "table", 0, sizeof t);
}

static cus_status c_module_function_count(world *w)
{
    unsigned int n = 0;
    EC_RETURN_OUT(cus_module_function_count(w->mod, &n), n == 2);
}

static cus_status c_module_function_names(world *w)
{
    const char *names[4] = {NULL};
    unsigned int n = 0;
    EC_RETURN_OUT(cus_module_function_names(w->mod, names, 4, &n),
                  n == 2 && names[0] != NULL && names[1] != NULL);
}

/* --- function.h ------------------------------------------------------------------------------- */

static cus_status c_function_param_info(world *w)
{
    size_t off = 0, size = 0;
    EC_RETURN_OUT(cus_function_param_info(w->add, 1, &off, &size), off == 8 && size == 4);
}

static cus_status c_function_attribute(world *w)
{
    int v = 0;
    EC_CHECK_OUT(cus_function_attribute(w->add, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &v),
                 v > 0);
    v = -1;
    EC_RETURN_OUT(cus_function_attribute(w->add, CU_FUNC_ATTRIBUTE_NUM_REGS, &v), v >= 0);
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
    EC_CHECK_OUT(cus_function_max_potential_block(w->add, 0, 0, &min_grid, &block),
                 min_grid > 0 && block > 0);
    block = 0;
    EC_RETURN_OUT(cus_function_max_potential_block(w->add, 1024, 256, NULL, &block),
                  block > 0 && block <= 256);
}

static cus_status c_function_max_active_blocks(world *w)
{
    int blocks = -1;
    EC_RETURN_OUT(cus_function_max_active_blocks(w->add, 128, 0, &blocks), blocks >= 0);
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

/* --- graph_capture.h: capture into a graph -------------------------------------------------- */

/* An empty capture into a graph of one node, after it, begun and ended by
 * hand (abandoned if the end leaves it open). */
static cus_status c_capture_begin_to_graph(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    cus_graph_node first;
    CUS_TRY(cus_graph_add_empty(g, NULL, 0, &first));
    cus_autoptr(cus_graph) same = NULL;
    cus_capture_guard cap = cus_capture_begin_to_graph(w->stream, g, &first, 1,
                                                       CU_STREAM_CAPTURE_MODE_GLOBAL);
    if (cap.status)
        return cap.status;
    cus_status st = cus_capture_end(&cap, &same);
    cus_capture_abandon(&cap);
    if (!st && same != g)
        return ec_out_not_set(__func__, "same == g");
    return st;
}

/* A launch and a copy captured after a fill added by hand, a copy to host
 * added after the captured leaves: the graph keeps the module and buffers. */
static cus_status c_capture_end_to_graph(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    cus_graph_node fill;
    CUS_TRY(cus_graph_add_fill_u32(g, NULL, 0, &fill, w->buf2, 0, 3u, 16));
    cus_graph_node leaves[2];
    size_t n = 2;
    {
        cus_capture_scope_to_graph(cap, w->stream, g, &fill, 1, CU_STREAM_CAPTURE_MODE_RELAXED);
        CUS_TRY(cap.status);
        CUS_TRY(cus_launch(w->add, 1, 1, 0, w->stream, w->buf2, 16u));
        CUS_TRY(cus_copy_device_async(w->buf, 0, w->buf2, 0, 64, w->stream));
        CUS_TRY(cus_capture_leaves(&cap, leaves, &n));
        cus_autoptr(cus_graph) same = NULL;
        CUS_TRY(cus_capture_end(&cap, &same));
    }
    EC_RETURN_OUT(cus_graph_add_copy_to_host(g, leaves, n, NULL, w->bytes, w->buf, 0, 64),
                  cus_graph_kept_objects(g) == 3);
}

static cus_status c_capture_leaves(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    cus_graph_node leaf = {0};
    size_t n = 1;
    {
        cus_capture_scope_to_graph(cap, w->stream, g, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL);
        CUS_TRY(cap.status);
        CUS_TRY(cus_buffer_fill_u32_async(w->buf2, 0, 1u, 16, w->stream));
        CUS_TRY(cus_capture_leaves(&cap, &leaf, &n));
        cus_autoptr(cus_graph) same = NULL;
        CUS_TRY(cus_capture_end(&cap, &same));
    }
    if (n != 1 || !leaf.handle)
        return ec_out_not_set(__func__, "n == 1 && leaf.handle");
    return CUS_SUCCESS;
}

/* --- graph_nodes.h: 2D and 3D copy nodes -------------------------------------------------------- */

/* 8 rows of 32 bytes, 64 apart, from the world's host bytes into buf. */
static cus_copy_2d_desc ec_rows(world *w)
{
    cus_copy_2d_desc d = {cus_copy_buffer(w->buf, 0, 64), cus_copy_host(w->bytes, 64), 32, 8};
    return d;
}

/* Two slices of 8 such rows, from buf into buf2. */
static cus_copy_3d_desc ec_slices(world *w)
{
    cus_copy_3d_desc d = {cus_copy_buffer(w->buf2, 0, 64), cus_copy_buffer(w->buf, 0, 64), 32, 8,
                          2};
    d.dst.rows = d.src.rows = 8;
    return d;
}

static cus_status c_graph_add_copy_2d(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    cus_copy_2d_desc d = ec_rows(w);
    cus_graph_node node = {0};
    EC_RETURN_OUT(cus_graph_add_copy_2d(g, NULL, 0, &node, &d),
                  node.handle != NULL && cus_graph_kept_objects(g) == 1);
}

static cus_status c_graph_add_copy_3d(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    cus_copy_3d_desc d = ec_slices(w);
    cus_graph_node node = {0};
    EC_RETURN_OUT(cus_graph_add_copy_3d(g, NULL, 0, &node, &d),
                  node.handle != NULL && cus_graph_kept_objects(g) == 2);
}

static cus_status c_graph_exec_set_copy_2d(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    cus_copy_2d_desc d = ec_rows(w);
    d.height = 1; /* the driver updates 1-D copy nodes only */
    cus_graph_node node;
    CUS_TRY(cus_graph_add_copy_2d(g, NULL, 0, &node, &d));
    cus_autoptr(cus_graph_exec) e = NULL;
    CUS_TRY(cus_graph_instantiate(g, 0, &e));
    d.dst = cus_copy_buffer(w->buf2, 64, 64);
    return cus_graph_exec_set_copy_2d(e, node, &d);
}

static cus_status c_graph_exec_set_copy_3d(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    cus_copy_3d_desc d = ec_slices(w);
    d.height = d.depth = 1; /* the driver updates 1-D copy nodes only */
    cus_graph_node node;
    CUS_TRY(cus_graph_add_copy_3d(g, NULL, 0, &node, &d));
    cus_autoptr(cus_graph_exec) e = NULL;
    CUS_TRY(cus_graph_instantiate(g, 0, &e));
    d.src.offset = 256;
    return cus_graph_exec_set_copy_3d(e, node, &d);
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

/* A module released while a GLOBAL capture is open: unloaded at once, in
 * relaxed interaction mode (the exchanges, the unload, and the exchange back
 * each fail in turn in the driver-fault mode). */
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

/* A stream-ordered buffer released while its stream captures: its free
 * waits for the capture's end (it would become a node of the graph). */
static cus_status c_capture_end_stream_ordered_release(world *w)
{
    cus_autoptr(cus_graph) graph = NULL;
    cus_buffer *b = NULL;
    CUS_TRY(cus_buffer_alloc_async(w->stream, 256, &b));
    cus_status st = cus_stream_synchronize(w->stream);
    if (st) {
        b = cus_buffer_unref(b);
        return st;
    }
    {
        cus_capture_scope(cap, w->stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
        if (cap.status) {
            b = cus_buffer_unref(b);
            return cap.status;
        }
        b = cus_buffer_unref(b);
        CUS_TRY(cus_launch(w->noargs, 1, 1, 0, w->stream));
        CUS_TRY(cus_capture_end(&cap, &graph));
    }
    return CUS_SUCCESS;
}

/* An executable graph, launched, released during a GLOBAL capture: its
 * cuCtxSynchronize and cuGraphExecDestroy run at once, relaxed. */
static cus_status c_capture_end_exec_release(world *w)
{
    cus_autoptr(cus_graph) graph = NULL;
    cus_graph_exec *e = NULL;
    CUS_TRY(cus_graph_instantiate(w->graph, 0, &e));
    cus_status st = cus_graph_exec_launch(e, w->stream);
    if (st) {
        e = cus_graph_exec_unref(e);
        return st;
    }
    {
        cus_capture_scope(cap, w->stream, CU_STREAM_CAPTURE_MODE_GLOBAL);
        if (cap.status) {
            e = cus_graph_exec_unref(e);
            return cap.status;
        }
        e = cus_graph_exec_unref(e);
        CUS_TRY(cus_launch(w->noargs, 1, 1, 0, w->stream));
        CUS_TRY(cus_capture_end(&cap, &graph));
    }
    return CUS_SUCCESS;
}

/* Counts its runs: the checks of the host-function captures. */
static atomic_ulong captured_runs;
static unsigned long captured_runs_before;

static void noop_host_fn(void *data)
{
    (void)data;
    atomic_fetch_add(&captured_runs, 1);
}

/* A captured host function: its record goes with the graph, which is
 * instantiated and replayed. */
static cus_status c_capture_end_host_fn(world *w)
{
    cus_autoptr(cus_graph) graph = NULL;
    captured_runs_before = atomic_load(&captured_runs);
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
    captured_runs_before = atomic_load(&captured_runs);
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

/* The replays ran the captured host function: once, twice. */
static bool k_capture_end_host_fn(world *w)
{
    (void)w;
    return atomic_load(&captured_runs) == captured_runs_before + 1;
}

static bool k_capture_end_host_fn_joined(world *w)
{
    (void)w;
    return atomic_load(&captured_runs) == captured_runs_before + 2;
}

static cus_status c_stream_is_capturing(world *w)
{
    bool capturing = true;
    EC_RETURN_OUT(cus_stream_is_capturing(w->stream, &capturing), !capturing);
}

/* --- graph.h: graphs and executable graphs ---------------------------------------------------- */

static cus_status c_graph_node_count(world *w)
{
    size_t n = 0;
    EC_RETURN_OUT(cus_graph_node_count(w->graph, &n), n == 1);
}

static cus_status c_graph_instantiate(world *w)
{
    cus_autoptr(cus_graph_exec) e = NULL;
    EC_RETURN_OUT(cus_graph_instantiate(w->graph, 0, &e), e != NULL);
}

static cus_status c_graph_instantiate_auto_free(world *w)
{
    cus_autoptr(cus_graph_exec) e = NULL;
    EC_RETURN_OUT(
        cus_graph_instantiate(w->graph, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH, &e),
        e != NULL);
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
    EC_RETURN_OUT(cus_graph_exec_update(w->exec, w->graph, &result),
                  result == CU_GRAPH_EXEC_UPDATE_SUCCESS);
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
    EC_RETURN_OUT(cus_graph_exec_update(e, graph, &result), result == CU_GRAPH_EXEC_UPDATE_SUCCESS);
}

/* A capture of one launch of add on buf, as the world's graph is (the same
 * topology: an update from one to the other works). */
static cus_status capture_add(world *w, cus_buffer *buf, unsigned n, cus_graph **graph)
{
    cus_capture_scope(cap, w->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    CUS_TRY(cap.status);
    CUS_TRY(cus_launch(w->add, 1, 1, 0, w->stream, buf, n));
    return cus_capture_end(&cap, graph);
}

/* An exec of its own, never launched, updated: the graph it replaces goes
 * at once (no fence). */
static cus_status c_graph_exec_update_not_launched(world *w)
{
    cus_autoptr(cus_graph_exec) e = NULL;
    CUS_TRY(cus_graph_instantiate(w->graph, 0, &e));
    cus_autoptr(cus_graph) graph = NULL;
    CUS_TRY(capture_add(w, w->buf2, 32u, &graph));
    CUgraphExecUpdateResult result = CU_GRAPH_EXEC_UPDATE_ERROR;
    EC_RETURN_OUT(cus_graph_exec_update(e, graph, &result), result == CU_GRAPH_EXEC_UPDATE_SUCCESS);
}

/* Launched, updated (the world's graph kept with a fence), launched,
 * updated again: the second update queries the first fence and fences the
 * second graph; the exec's release finds what is left. */
static cus_status c_graph_exec_update_fenced_twice(world *w)
{
    cus_autoptr(cus_graph_exec) e = NULL;
    CUS_TRY(cus_graph_instantiate(w->graph, 0, &e));
    cus_autoptr(cus_graph) g2 = NULL;
    cus_autoptr(cus_graph) g3 = NULL;
    CUS_TRY(capture_add(w, w->buf2, 32u, &g2));
    CUS_TRY(capture_add(w, w->buf, 8u, &g3));
    CUS_TRY(cus_graph_exec_launch(e, w->stream));
    CUS_TRY(cus_graph_exec_update(e, g2, NULL));
    CUS_TRY(cus_graph_exec_launch(e, w->stream));
    CUgraphExecUpdateResult result = CU_GRAPH_EXEC_UPDATE_ERROR;
    EC_RETURN_OUT(cus_graph_exec_update(e, g3, &result), result == CU_GRAPH_EXEC_UPDATE_SUCCESS);
}

/* Launched on the world's stream, a stream of its own and the legacy
 * default stream: one fence each (several: an array of them). */
static cus_status c_graph_exec_update_three_streams(world *w)
{
    cus_autoptr(cus_graph_exec) e = NULL;
    CUS_TRY(cus_graph_instantiate(w->graph, 0, &e));
    cus_autoptr(cus_graph) graph = NULL;
    CUS_TRY(capture_add(w, w->buf2, 32u, &graph));
    cus_autoptr(cus_stream) s = NULL;
    CUS_TRY(cus_stream_create(w->ctx, CU_STREAM_NON_BLOCKING, 0, &s));
    CUS_TRY(cus_graph_exec_launch(e, w->stream));
    CUS_TRY(cus_graph_exec_launch(e, s));
    CUS_TRY(cus_graph_exec_launch(e, NULL));
    CUgraphExecUpdateResult result = CU_GRAPH_EXEC_UPDATE_ERROR;
    EC_RETURN_OUT(cus_graph_exec_update(e, graph, &result), result == CU_GRAPH_EXEC_UPDATE_SUCCESS);
}

/* Launched on a wrapped stream, which an update cannot fence (its owner may
 * have destroyed it): the update waits for the context instead. */
static cus_status c_graph_exec_update_wrapped_stream(world *w)
{
    cus_autoptr(cus_graph_exec) e = NULL;
    CUS_TRY(cus_graph_instantiate(w->graph, 0, &e));
    cus_autoptr(cus_graph) graph = NULL;
    CUS_TRY(capture_add(w, w->buf2, 32u, &graph));
    cus_autoptr(cus_stream) wrapped = NULL;
    CUS_TRY(cus_stream_wrap(w->ctx, cus_stream_handle(w->stream), &wrapped));
    CUS_TRY(cus_graph_exec_launch(e, wrapped));
    CUgraphExecUpdateResult result = CU_GRAPH_EXEC_UPDATE_ERROR;
    EC_RETURN_OUT(cus_graph_exec_update(e, graph, &result), result == CU_GRAPH_EXEC_UPDATE_SUCCESS);
}

/* A launch after an update whose fence completed: the launch queries it
 * and releases the replaced graph. */
static cus_status c_graph_exec_launch_releases_replaced(world *w)
{
    cus_autoptr(cus_graph_exec) e = NULL;
    CUS_TRY(cus_graph_instantiate(w->graph, 0, &e));
    cus_autoptr(cus_graph) graph = NULL;
    CUS_TRY(capture_add(w, w->buf2, 32u, &graph));
    CUS_TRY(cus_graph_exec_launch(e, w->stream));
    CUS_TRY(cus_graph_exec_update(e, graph, NULL));
    CUS_TRY(cus_stream_synchronize(w->stream));
    return cus_graph_exec_launch(e, w->stream);
}

/* --- tensor_map.h: a 32 x 32 float tensor map of buf (4096 bytes) ------------------------------ */

static cus_tensor_map_params ec_tensor_map_params(void)
{
    return (cus_tensor_map_params){.data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                                   .rank = 2,
                                   .global_dim = {32, 32},
                                   .global_strides = {128},
                                   .box_dim = {32, 8}};
}

static cus_status c_tensor_map_create_tiled(world *w)
{
    cus_tensor_map_params p = ec_tensor_map_params();
    cus_autoptr(cus_tensor_map) m = NULL;
    EC_RETURN_OUT(cus_tensor_map_create_tiled(w->buf, &p, &m), m && cus_tensor_map_get(m));
}

static cus_status c_tensor_map_create_im2col(world *w)
{
    /* NWC: 8 channels, 16 pixels, 8 images. */
    cus_tensor_map_params p = {.data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
                               .rank = 3,
                               .global_dim = {8, 16, 8},
                               .global_strides = {32, 512},
                               .channels_per_pixel = 8,
                               .pixels_per_column = 16};
    cus_autoptr(cus_tensor_map) m = NULL;
    EC_RETURN_OUT(cus_tensor_map_create_im2col(w->buf, &p, &m), m != NULL);
}

static cus_status c_tensor_map_rebind(world *w)
{
    cus_tensor_map_params p = ec_tensor_map_params();
    cus_autoptr(cus_tensor_map) m = NULL;
    cus_status st = cus_tensor_map_create_tiled(w->buf, &p, &m);
    if (st != CUS_SUCCESS)
        return st;
    cus_autoptr(cus_tensor_map) r = NULL;
    EC_RETURN_OUT(cus_tensor_map_rebind(m, w->buf2, 0, &r), cus_tensor_map_buffer(r) == w->buf2);
}

/* --- array.h: arrays, pitched buffers, 2D and 3D copies, textures, surfaces ----------------- */

static cus_status ec_new_array(world *w, unsigned int flags, cus_array **out)
{
    return cus_array_create(w->ctx,
                            &(CUDA_ARRAY3D_DESCRIPTOR){.Width = 16, .Height = 16,
                                                       .Format = CU_AD_FORMAT_FLOAT,
                                                       .NumChannels = 1, .Flags = flags},
                            out);
}

static cus_status c_array_create(world *w)
{
    cus_autoptr(cus_array) a = NULL;
    EC_RETURN_OUT(ec_new_array(w, 0, &a), a != NULL);
}

static cus_status c_array_create_3d(world *w)
{
    cus_autoptr(cus_array) a = NULL;
    EC_RETURN_OUT(cus_array_create(w->ctx,
                                   &(CUDA_ARRAY3D_DESCRIPTOR){.Width = 8, .Height = 8, .Depth = 4,
                                                              .Format = CU_AD_FORMAT_HALF,
                                                              .NumChannels = 2},
                                   &a),
                  a != NULL);
}

static cus_status c_array_descriptor(world *w)
{
    cus_autoptr(cus_array) a = NULL;
    CUS_TRY(ec_new_array(w, 0, &a));
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = 0};
    EC_RETURN_OUT(cus_array_descriptor(a, &d), d.Width == 16);
}

static cus_status c_mipmapped_array_create(world *w)
{
    cus_autoptr(cus_mipmapped_array) m = NULL;
    EC_RETURN_OUT(cus_mipmapped_array_create(w->ctx,
                                             &(CUDA_ARRAY3D_DESCRIPTOR){
                                                 .Width = 16, .Height = 16,
                                                 .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1},
                                             3, &m),
                  m != NULL);
}

static cus_status c_mipmapped_array_level(world *w)
{
    cus_autoptr(cus_mipmapped_array) m = NULL;
    CUS_TRY(cus_mipmapped_array_create(w->ctx,
                                       &(CUDA_ARRAY3D_DESCRIPTOR){.Width = 16, .Height = 16,
                                                                  .Format = CU_AD_FORMAT_FLOAT,
                                                                  .NumChannels = 1},
                                       3, &m));
    cus_autoptr(cus_array) level = NULL;
    EC_RETURN_OUT(cus_mipmapped_array_level(m, 2, &level), level != NULL);
}

static cus_status c_buffer_alloc_pitch(world *w)
{
    cus_autoptr(cus_buffer) b = NULL;
    size_t pitch = 0;
    EC_RETURN_OUT(cus_buffer_alloc_pitch(w->ctx, 100, 8, 4, &b, &pitch), b && pitch >= 100);
}

static cus_status c_copy_2d(world *w)
{
    cus_autoptr(cus_array) a = NULL;
    CUS_TRY(ec_new_array(w, 0, &a));
    return cus_copy_2d(&(cus_copy_2d_desc){cus_copy_array(a, 0, 0), cus_copy_host(w->bytes, 64),
                                           64, 16});
}

static cus_status c_copy_2d_buffers(world *w)
{
    return cus_copy_2d(&(cus_copy_2d_desc){cus_copy_buffer(w->buf, 0, 128),
                                           cus_copy_buffer(w->buf2, 0, 64), 64, 8});
}

static cus_status c_copy_2d_async(world *w)
{
    return cus_copy_2d_async(&(cus_copy_2d_desc){cus_copy_buffer(w->buf, 0, 64),
                                                 cus_copy_host(w->bytes, 64), 64, 16},
                             w->stream);
}

static cus_status c_copy_3d(world *w)
{
    cus_autoptr(cus_array) a = NULL;
    CUS_TRY(cus_array_create(w->ctx,
                             &(CUDA_ARRAY3D_DESCRIPTOR){.Width = 8, .Height = 4, .Depth = 2,
                                                        .Format = CU_AD_FORMAT_FLOAT,
                                                        .NumChannels = 1},
                             &a));
    return cus_copy_3d(&(cus_copy_3d_desc){cus_copy_array(a, 0, 0), cus_copy_host(w->bytes, 32),
                                           32, 4, 2});
}

static cus_status c_copy_3d_async(world *w)
{
    return cus_copy_3d_async(&(cus_copy_3d_desc){cus_copy_host(w->bytes, 64),
                                                 cus_copy_buffer(w->buf, 0, 64), 64, 4, 2},
                             w->stream);
}

static cus_status c_texture_create_array(world *w)
{
    cus_autoptr(cus_array) a = NULL;
    CUS_TRY(ec_new_array(w, 0, &a));
    CUDA_TEXTURE_DESC td = cus_texture_desc(CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_LINEAR,
                                            CU_TRSF_NORMALIZED_COORDINATES);
    cus_autoptr(cus_texture) t = NULL;
    EC_RETURN_OUT(cus_texture_create_array(a, &td, NULL, &t), t && cus_texture_handle(t));
}

static cus_status c_texture_create_mipmapped(world *w)
{
    cus_autoptr(cus_mipmapped_array) m = NULL;
    CUS_TRY(cus_mipmapped_array_create(w->ctx,
                                       &(CUDA_ARRAY3D_DESCRIPTOR){.Width = 16, .Height = 16,
                                                                  .Format = CU_AD_FORMAT_FLOAT,
                                                                  .NumChannels = 1},
                                       2, &m));
    CUDA_TEXTURE_DESC td = cus_texture_desc(CU_TR_ADDRESS_MODE_WRAP, CU_TR_FILTER_MODE_POINT,
                                            CU_TRSF_NORMALIZED_COORDINATES);
    cus_autoptr(cus_texture) t = NULL;
    EC_RETURN_OUT(cus_texture_create_mipmapped(m, &td, NULL, &t), t != NULL);
}

static cus_status c_texture_create_linear(world *w)
{
    CUDA_TEXTURE_DESC td = cus_texture_desc(CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0);
    cus_autoptr(cus_texture) t = NULL;
    EC_RETURN_OUT(cus_texture_create_linear(w->buf, CU_AD_FORMAT_FLOAT, 1, &td, &t), t != NULL);
}

static cus_status c_texture_create_pitch2d(world *w)
{
    cus_autoptr(cus_buffer) b = NULL;
    size_t pitch = 0;
    CUS_TRY(cus_buffer_alloc_pitch(w->ctx, 64, 8, 4, &b, &pitch));
    CUDA_TEXTURE_DESC td = cus_texture_desc(CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0);
    cus_autoptr(cus_texture) t = NULL;
    EC_RETURN_OUT(cus_texture_create_pitch2d(b, CU_AD_FORMAT_FLOAT, 1, 16, 8, &td, &t), t != NULL);
}

static cus_status c_texture_resource_desc(world *w)
{
    CUDA_TEXTURE_DESC td = cus_texture_desc(CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0);
    cus_autoptr(cus_texture) t = NULL;
    CUS_TRY(cus_texture_create_linear(w->buf, CU_AD_FORMAT_FLOAT, 1, &td, &t));
    CUDA_RESOURCE_DESC res;
    memset(&res, 0, sizeof res);
    EC_RETURN_OUT(cus_texture_resource_desc(t, &res), res.resType == CU_RESOURCE_TYPE_LINEAR);
}

static cus_status c_surface_create(world *w)
{
    cus_autoptr(cus_array) a = NULL;
    CUS_TRY(ec_new_array(w, CUDA_ARRAY3D_SURFACE_LDST, &a));
    cus_autoptr(cus_surface) s = NULL;
    EC_RETURN_OUT(cus_surface_create(a, &s), s && cus_surface_handle(s));
}

/* --- graph_memory.h: graph memory nodes, the device's graph memory ------------------------------ */

static cus_status c_graph_add_alloc(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    cus_autoptr(cus_buffer) b = NULL;
    cus_graph_node n = {0};
    EC_RETURN_OUT(cus_graph_add_alloc(g, NULL, 0, &n, 256, &b),
                  b && cus_buffer_get_kind(b) == CUS_BUFFER_GRAPH && cus_buffer_ptr(b) &&
                      n.handle != NULL);
}

/* A graph of w->ctx: an allocation node and its free. */
static cus_status graph_alloc_free(world *w, cus_graph **g, cus_buffer **b, cus_graph_node *alloc,
                                   cus_graph_node *free_node)
{
    CUS_TRY(cus_graph_create(w->ctx, g));
    CUS_TRY(cus_graph_add_alloc(*g, NULL, 0, alloc, 256, b));
    return cus_graph_add_free(*g, alloc, 1, free_node, *b);
}

static cus_status c_graph_add_free(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    cus_autoptr(cus_buffer) b = NULL;
    cus_graph_node alloc, free_node = {0};
    EC_RETURN_OUT(graph_alloc_free(w, &g, &b, &alloc, &free_node), free_node.handle != NULL);
}

static cus_status c_graph_alloc_node_params(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    cus_autoptr(cus_buffer) b = NULL;
    cus_graph_node alloc, free_node;
    CUS_TRY(graph_alloc_free(w, &g, &b, &alloc, &free_node));
    size_t bytes = 0;
    CUdeviceptr p = 0;
    EC_RETURN_OUT(cus_graph_alloc_node_params(alloc, &bytes, &p),
                  bytes == 256 && p == cus_buffer_ptr(b));
}

static cus_status c_graph_free_node_ptr(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    cus_autoptr(cus_buffer) b = NULL;
    cus_graph_node alloc, free_node;
    CUS_TRY(graph_alloc_free(w, &g, &b, &alloc, &free_node));
    CUdeviceptr p = 0;
    EC_RETURN_OUT(cus_graph_free_node_ptr(free_node, &p), p == cus_buffer_ptr(b));
}

/* A launch leaves an allocation allocated; it is freed outside the graph.
 * When that free fails, it is made again (the faults are single), so that
 * nothing stays allocated; the first failure stays the recorded one. */
static cus_status c_graph_allocation_free(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    cus_autoptr(cus_buffer) b = NULL;
    CUS_TRY(cus_graph_add_alloc(g, NULL, 0, NULL, 256, &b));
    cus_autoptr(cus_graph_exec) e = NULL;
    CUS_TRY(cus_graph_instantiate(g, 0, &e));
    CUS_TRY(cus_graph_exec_launch(e, w->stream));
    cus_status st = cus_graph_allocation_free(b, w->stream);
    if (st != CUS_SUCCESS)
        (void)cus_graph_allocation_free(b, w->stream);
    return st;
}

static cus_status c_device_graph_mem_trim(world *w)
{
    return cus_device_graph_mem_trim(w->dev);
}

static cus_status c_device_graph_mem_attribute(world *w)
{
    uint64_t used = UINT64_MAX, reserved = 0;
    CUS_TRY(cus_device_graph_mem_attribute(w->dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used));
    EC_RETURN_OUT(cus_device_graph_mem_attribute(w->dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT,
                                                 &reserved),
                  used != UINT64_MAX && reserved >= used);
}

static cus_status c_device_graph_mem_reset_high(world *w)
{
    return cus_device_graph_mem_reset_high(w->dev);
}

const every_call every_calls_data[] = {
    /* memory.h */
    {"cus_buffer_alloc", c_buffer_alloc, 0, NULL, NULL},
    {"cus_buffer_alloc_array", c_buffer_alloc_array, 0, NULL, NULL},
    {"cus_buffer_alloc_array (cus_buffer_alloc_n)", c_buffer_alloc_n, 0, NULL, NULL},
    {"cus_buffer_alloc_async", c_buffer_alloc_async, 0, NULL, NULL},
    {"cus_buffer_alloc_managed", c_buffer_alloc_managed, 0, NULL, NULL},
    {"cus_buffer_alloc_managed (CU_MEM_ATTACH_HOST)", c_buffer_alloc_managed_host, 0, NULL, NULL},
    {"cus_host_buffer_alloc", c_host_buffer_alloc, 0, NULL, NULL},
    {"cus_host_buffer_register", c_host_buffer_register, 0, NULL, NULL},
    {"cus_buffer_prefetch", c_buffer_prefetch, EC_QUEUES_WORK, NULL, NULL},
    {"cus_buffer_prefetch (CU_DEVICE_CPU)", c_buffer_prefetch_cpu, EC_QUEUES_WORK, NULL, NULL},
    {"cus_buffer_advise", c_buffer_advise, 0, NULL, NULL},
    {"cus_memory_info", c_memory_info, 0, NULL, NULL},
    {"cus_context_can_access_peer", c_context_can_access_peer, EC_NOT_POISONED,
     "asks cuDeviceCanAccessPeer about the two contexts' devices: no call on either context, "
     "so no poison check (lib/memory.c)", NULL},
    {"cus_context_enable_peer_access", c_context_enable_peer_access, 0, NULL, NULL},
    {"cus_context_enable_peer_access (ctx as the peer)", c_context_enable_peer_access_reverse, 0,
     NULL, NULL},
    {"cus_copy_to_device", c_copy_to_device, 0, NULL, NULL},
    {"cus_copy_to_host", c_copy_to_host, 0, NULL, NULL},
    {"cus_copy_device", c_copy_device, 0, NULL, NULL},
    {"cus_copy_device (peer)", c_copy_device_peer, 0, NULL, NULL},
    {"cus_copy_to_device_async", c_copy_to_device_async, EC_QUEUES_WORK, NULL,
     k_copy_to_device_async},
    {"cus_copy_to_device_async (pageable memory)", c_copy_to_device_async_pageable,
     EC_QUEUES_WORK, NULL, k_copy_to_device_async_pageable},
    {"cus_copy_to_host_async", c_copy_to_host_async, EC_QUEUES_WORK, NULL, k_copy_to_host_async},
    {"cus_copy_device_async", c_copy_device_async, EC_QUEUES_WORK, NULL, k_copy_device_async},
    {"cus_copy_device_async (peer)", c_copy_device_async_peer, EC_QUEUES_WORK, NULL,
     k_copy_device_async_peer},
    {"cus_copy_device_async (peer, other's legacy stream)", c_copy_device_async_peer_other,
     EC_QUEUES_WORK, NULL, k_copy_device_async_peer_other},
    {"cus_copy_to_host_async (legacy stream)", c_copy_to_host_async_legacy, EC_QUEUES_WORK, NULL,
     k_copy_to_host_async_legacy},
    {"cus_buffer_fill_u8", c_buffer_fill_u8, 0, NULL, NULL},
    {"cus_buffer_fill_u16", c_buffer_fill_u16, 0, NULL, NULL},
    {"cus_buffer_fill_u32", c_buffer_fill_u32, 0, NULL, NULL},
    {"cus_buffer_fill_u8_async", c_buffer_fill_u8_async, EC_QUEUES_WORK, NULL,
     k_buffer_fill_u8_async},
    {"cus_buffer_fill_u16_async", c_buffer_fill_u16_async, EC_QUEUES_WORK, NULL,
     k_buffer_fill_u16_async},
    {"cus_buffer_fill_u32_async", c_buffer_fill_u32_async, EC_QUEUES_WORK, NULL,
     k_buffer_fill_u32_async},
    /* ipc.h */
    {"cus_buffer_ipc_export", c_buffer_ipc_export, 0, NULL, NULL},
    {"cus_buffer_ipc_import", c_buffer_ipc_import, 0, NULL, NULL},
    {"cus_event_ipc_export", c_event_ipc_export, 0, NULL, NULL},
    {"cus_event_ipc_import", c_event_ipc_import, 0, NULL, NULL},
    /* module.h */
    {"cus_library_load_data", c_library_load_data, EC_NOT_POISONED | EC_NO_OWN_SWITCH,
     EC_LIBRARY_NOTE, NULL},
    {"cus_library_get_kernel", c_library_get_kernel, EC_NOT_POISONED | EC_NO_OWN_SWITCH,
     EC_LIBRARY_NOTE, NULL},
    {"cus_kernel_function", c_kernel_function, EC_SKIP_REFUSALS,
     "the entry loads a library of its own first (no context, no refusal of a poisoned one); "
     "the poisoned refusal itself: test_library.c", NULL},
    {"cus_library_get_global", c_library_get_global, EC_SKIP_REFUSALS,
     "the entry loads a library of its own first (no context, no refusal of a poisoned one); "
     "the poisoned refusal itself: test_library.c", NULL},
    {"cus_library_load_file", c_library_load_file, EC_NOT_POISONED | EC_NO_OWN_SWITCH,
     EC_LIBRARY_NOTE, NULL},
    {"cus_library_kernel_count", c_library_kernel_count, EC_NOT_POISONED | EC_NO_OWN_SWITCH,
     EC_LIBRARY_NOTE, NULL},
    {"cus_library_kernel_names", c_library_kernel_names, EC_NOT_POISONED | EC_NO_OWN_SWITCH,
     EC_LIBRARY_NOTE, NULL},
    {"cus_library_get_managed", c_library_get_managed, EC_NOT_POISONED | EC_NO_OWN_SWITCH,
     EC_LIBRARY_NOTE "; the fake's CUDA_ERROR_NOT_FOUND (no __managed__ variables) is the "
     "answer", NULL},
    {"cus_library_get_unified_function", c_library_get_unified_function,
     EC_NOT_POISONED | EC_NO_OWN_SWITCH,
     EC_LIBRARY_NOTE "; the fake's CUDA_ERROR_INVALID_VALUE (no unified functions: the H200's "
     "answer for an unknown name) is the answer",
     NULL},
    {"cus_kernel_param_info", c_kernel_param_info,
     EC_NOT_POISONED | EC_SKIP_REFUSALS | EC_NO_OWN_SWITCH | EC_POPS_ITSELF,
     "reads the layout cached at the lookup (made with the entry's guard of ctx current): no "
     "driver call, allowed in a host function (library.h); the entry's own guard and load are "
     "what the host-function and fault modes see", NULL},
    {"cus_kernel_attribute", c_kernel_attribute, EC_NOT_POISONED | EC_NO_OWN_SWITCH,
     EC_LIBRARY_NOTE, NULL},
    {"cus_kernel_set_attribute", c_kernel_set_attribute, EC_NOT_POISONED | EC_NO_OWN_SWITCH,
     EC_LIBRARY_NOTE, NULL},
    {"cus_module_load_data", c_module_load_data, 0, NULL, NULL},
    {"cus_module_load_data (JIT options, size 0)", c_module_load_data_jit, 0, NULL, NULL},
    {"cus_module_load_file", c_module_load_file, 0, NULL, NULL},
    {"cus_module_get_function", c_module_get_function, EC_NO_OWN_SWITCH,
     "EC_NO_OWN_SWITCH: the lookup's driver calls take the module and function handles, with no "
     "context current (lib/module.c); the pops reported are the entry's load's and unload's",
     NULL},
    {"cus_module_get_function (cached)", c_module_get_function_cached, EC_NO_DRIVER,
     "a repeated lookup is answered by the module's cache without a driver call (module.h)", NULL},
    {"cus_module_get_global", c_module_get_global, 0, NULL, NULL},
    {"cus_module_copy_to_global", c_module_copy_to_global, 0, NULL, NULL},
    {"cus_module_copy_to_global (.const)", c_module_copy_to_global_const, 0, NULL, NULL},
    {"cus_module_copy_from_global", c_module_copy_from_global, 0, NULL, NULL},
    {"cus_module_copy_from_global (.const)", c_module_copy_from_global_const, 0, NULL, NULL},
    {"cus_module_function_count", c_module_function_count, 0, NULL, NULL},
    {"cus_module_function_names", c_module_function_names, 0, NULL, NULL},
    /* function.h */
    {"cus_function_param_info", c_function_param_info,
     EC_HOST_FN_OK | EC_NOT_POISONED | EC_NO_DRIVER | EC_FORK_OK,
     "reads the layout cached at the lookup: no driver call (function.h: getters need no "
     "driver), so outside the host-function refusal of the calls that may reach the driver "
     "(docs/bad-input.md), and it touches no context", NULL},
    {"cus_function_attribute", c_function_attribute, 0, NULL, NULL},
    {"cus_function_set_attribute", c_function_set_attribute, 0, NULL, NULL},
    {"cus_function_set_max_dynamic_shared", c_function_set_max_dynamic_shared, 0, NULL, NULL},
    {"cus_function_set_cache_config", c_function_set_cache_config, 0, NULL, NULL},
    {"cus_function_set_shared_mem_config", c_function_set_shared_mem_config, 0, NULL, NULL},
    {"cus_function_max_potential_block", c_function_max_potential_block, 0, NULL, NULL},
    {"cus_function_max_active_blocks", c_function_max_active_blocks, 0, NULL, NULL},
    /* launch.h */
    {"cus_launch", c_launch, EC_QUEUES_WORK, NULL, NULL},
    {"cus_launch (u64 address, dim3, legacy stream)", c_launch_raw_pointer, EC_QUEUES_WORK, NULL,
     NULL},
    {"cus_launch (no arguments)", c_launch_no_args, EC_QUEUES_WORK, NULL, NULL},
    {"cus_launch (cus_grid_for)", c_launch_grid_for, EC_QUEUES_WORK, NULL, NULL},
    {"cus_launch (context current, checked site)", c_launch_fast_path,
     EC_QUEUES_WORK | EC_POPS_ITSELF, "the scope's exit pops ctx off the stack", NULL},
    {"cus_function_launch", c_function_launch, EC_QUEUES_WORK, NULL, NULL},
    {"cus_function_launch (sizes NULL, no arguments)", c_function_launch_unchecked, EC_QUEUES_WORK,
     NULL, NULL},
    {"cus_launch_ex", c_launch_ex, EC_QUEUES_WORK, NULL, NULL},
    {"cus_launch_ex (cluster)", c_launch_ex_cluster, EC_QUEUES_WORK, NULL, NULL},
    {"cus_launch_ex (cooperative, no arguments)", c_launch_ex_cooperative, EC_QUEUES_WORK, NULL,
     NULL},
    {"cus_function_launch_ex", c_function_launch_ex, EC_QUEUES_WORK, NULL, NULL},
    /* graph.h */
    {"cus_capture_begin", c_capture_begin, 0, NULL, NULL},
    {"cus_capture_end", c_capture_end, 0, NULL, NULL},
    /* graph_capture.h */
    {"cus_capture_begin_to_graph", c_capture_begin_to_graph, 0, NULL, NULL},
    {"cus_capture_end (into a graph)", c_capture_end_to_graph, 0, NULL, NULL},
    {"cus_capture_leaves", c_capture_leaves, 0, NULL, NULL},
    /* graph_nodes.h: 2D and 3D copy nodes */
    {"cus_graph_add_copy_2d", c_graph_add_copy_2d, 0, NULL, NULL},
    {"cus_graph_add_copy_3d", c_graph_add_copy_3d, 0, NULL, NULL},
    {"cus_graph_exec_set_copy_2d", c_graph_exec_set_copy_2d, 0, NULL, NULL},
    {"cus_graph_exec_set_copy_3d", c_graph_exec_set_copy_3d, 0, NULL, NULL},
    {"cus_capture_scope", c_capture_scope, EC_NO_OWN_SWITCH,
     "EC_NO_OWN_SWITCH: the macro over cus_capture_begin and cus_capture_end, which the reports "
     "name",
     NULL},
    {"cus_buffer_alloc_async (a capture open elsewhere)", c_buffer_alloc_async_capture_elsewhere,
     0, NULL, NULL},
    {"cus_capture_end (a stream forked and joined)", c_capture_end_fork_join, 0, NULL, NULL},
    {"cus_capture_end (a module released during it)", c_capture_end_deferred_release, 0, NULL,
     NULL},
    {"cus_capture_end (a stream-ordered buffer of its stream released during it)",
     c_capture_end_stream_ordered_release, 0, NULL, NULL},
    {"cus_capture_end (a launched executable graph released during it)",
     c_capture_end_exec_release, EC_QUEUES_WORK, NULL, NULL},
    {"cus_capture_end (a host function)", c_capture_end_host_fn, EC_QUEUES_WORK, NULL,
     k_capture_end_host_fn},
    {"cus_capture_end (a host function on a joined stream)", c_capture_end_host_fn_joined,
     EC_QUEUES_WORK, NULL, k_capture_end_host_fn_joined},
    {"cus_stream_is_capturing", c_stream_is_capturing, 0, NULL, NULL},
    {"cus_graph_node_count", c_graph_node_count, 0, NULL, NULL},
    {"cus_graph_instantiate", c_graph_instantiate, 0, NULL, NULL},
    {"cus_graph_instantiate (AUTO_FREE_ON_LAUNCH)", c_graph_instantiate_auto_free, 0, NULL, NULL},
    {"cus_graph_exec_launch", c_graph_exec_launch, EC_QUEUES_WORK, NULL, NULL},
    {"cus_graph_exec_launch (legacy stream)", c_graph_exec_launch_legacy, EC_QUEUES_WORK, NULL,
     NULL},
    {"cus_graph_exec_upload", c_graph_exec_upload, EC_QUEUES_WORK, NULL, NULL},
    {"cus_graph_exec_update", c_graph_exec_update, 0, NULL, NULL},
    {"cus_graph_exec_update (new graph)", c_graph_exec_update_new_graph, EC_QUEUES_WORK, NULL,
     NULL},
    {"cus_graph_exec_update (new graph, not launched since)", c_graph_exec_update_not_launched, 0,
     NULL, NULL},
    {"cus_graph_exec_update (fenced twice)", c_graph_exec_update_fenced_twice, EC_QUEUES_WORK,
     NULL, NULL},
    {"cus_graph_exec_update (three streams fenced)", c_graph_exec_update_three_streams,
     EC_QUEUES_WORK, NULL, NULL},
    {"cus_graph_exec_update (a wrapped stream: waits)", c_graph_exec_update_wrapped_stream,
     EC_QUEUES_WORK, NULL, NULL},
    {"cus_graph_exec_launch (releases a replaced graph)", c_graph_exec_launch_releases_replaced,
     EC_QUEUES_WORK, NULL, NULL},
    /* array.h */
    {"cus_array_create", c_array_create, 0, NULL, NULL},
    {"cus_array_create (3D, half2)", c_array_create_3d, 0, NULL, NULL},
    {"cus_array_descriptor", c_array_descriptor, 0, NULL, NULL},
    {"cus_mipmapped_array_create", c_mipmapped_array_create, 0, NULL, NULL},
    {"cus_mipmapped_array_level", c_mipmapped_array_level, 0, NULL, NULL},
    {"cus_buffer_alloc_pitch", c_buffer_alloc_pitch, 0, NULL, NULL},
    {"cus_copy_2d", c_copy_2d, 0, NULL, NULL},
    {"cus_copy_2d (buffer to buffer)", c_copy_2d_buffers, 0, NULL, NULL},
    {"cus_copy_2d_async", c_copy_2d_async, EC_QUEUES_WORK, NULL, NULL},
    {"cus_copy_3d", c_copy_3d, 0, NULL, NULL},
    {"cus_copy_3d_async", c_copy_3d_async, EC_QUEUES_WORK, NULL, NULL},
    {"cus_texture_create_array", c_texture_create_array, 0, NULL, NULL},
    {"cus_texture_create_mipmapped", c_texture_create_mipmapped, 0, NULL, NULL},
    {"cus_texture_create_linear", c_texture_create_linear, 0, NULL, NULL},
    {"cus_texture_create_pitch2d", c_texture_create_pitch2d, 0, NULL, NULL},
    {"cus_texture_resource_desc", c_texture_resource_desc, 0, NULL, NULL},
    {"cus_surface_create", c_surface_create, 0, NULL, NULL},
    {"cus_tensor_map_create_tiled", c_tensor_map_create_tiled, 0, NULL, NULL},
    {"cus_tensor_map_create_im2col", c_tensor_map_create_im2col, 0, NULL, NULL},
    {"cus_tensor_map_rebind", c_tensor_map_rebind, 0, NULL, NULL},
    /* graph_memory.h */
    {"cus_graph_add_alloc", c_graph_add_alloc, 0, NULL, NULL},
    {"cus_graph_add_free", c_graph_add_free, 0, NULL, NULL},
    {"cus_graph_alloc_node_params", c_graph_alloc_node_params, 0, NULL, NULL},
    {"cus_graph_free_node_ptr", c_graph_free_node_ptr, 0, NULL, NULL},
    {"cus_graph_allocation_free", c_graph_allocation_free, EC_QUEUES_WORK, NULL, NULL},
    {"cus_device_graph_mem_trim", c_device_graph_mem_trim, EC_NOT_POISONED,
     "EC_NOT_POISONED: takes a device value, no context object", NULL},
    {"cus_device_graph_mem_attribute", c_device_graph_mem_attribute, EC_NOT_POISONED,
     "EC_NOT_POISONED: takes a device value, no context object", NULL},
    {"cus_device_graph_mem_reset_high", c_device_graph_mem_reset_high, EC_NOT_POISONED,
     "EC_NOT_POISONED: takes a device value, no context object", NULL},
    {NULL, NULL, 0, NULL, NULL},
};
