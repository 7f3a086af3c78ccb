/* Host twins of the kernels of kernels/ for the fake driver (see twins.h). Each follows
 * its kernel's source: the index of a thread is blockIdx.x * blockDim.x +
 * threadIdx.x, and the y and z extents of the grid and the block repeat the
 * x threads (those copies do the same work, as on the device). */
#include "twins.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuscope/fake.h>

/* Nothing is mapped in the first 64 KiB (Linux's mmap_min_addr). */
#define UNMAPPED_BELOW ((uintptr_t)0x10000)

static void *ptr_arg(void *arg)
{
    CUdeviceptr p;
    memcpy(&p, arg, sizeof p);
    return (void *)(uintptr_t)p;
}

static bool unmapped(const void *p)
{
    return (uintptr_t)p < UNMAPPED_BELOW;
}

/* Threads along x, and how many times the y and z extents repeat them. */
static unsigned long long x_threads(const cus_fake_launch *l)
{
    return (unsigned long long)l->grid[0] * l->block[0];
}

static unsigned long long copies(const cus_fake_launch *l)
{
    return (unsigned long long)l->grid[1] * l->grid[2] * l->block[1] * l->block[2];
}

/* The device's cvt.rzi.s64 of a float or double: truncation, saturated at
 * the ends, NaN to 0 (a C cast would be undefined there). */
static long long to_s64(double v)
{
    if (v != v)
        return 0;
    if (v >= 9223372036854775808.0)
        return LLONG_MAX;
    if (v < -9223372036854775808.0)
        return LLONG_MIN;
    return (long long)v;
}

/* sum(const float *x, const float *y, float *out, int count): a grid-stride
 * loop, so every i < count is written whatever the grid. */
static CUresult sum_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)l;
    (void)user;
    const float *x = ptr_arg(args[0]), *y = ptr_arg(args[1]);
    float *out = ptr_arg(args[2]);
    int count;
    memcpy(&count, args[3], sizeof count);
    if (count <= 0)
        return CUDA_SUCCESS;
    if (unmapped(x) || unmapped(y) || unmapped(out))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (int i = 0; i < count; i++)
        out[i] = x[i] + y[i];
    return CUDA_SUCCESS;
}

/* saxpy(float a, const float *x, float *y, unsigned long long n): one
 * element per x thread. nvcc contracts a * x[i] + y[i] into fma.rn.f32; in
 * double the product is exact, so the result is the fma's whenever the sum
 * fits in double's 53 bits (all the data the tests use), without libm. */
static CUresult saxpy_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)user;
    float a;
    memcpy(&a, args[0], sizeof a);
    const float *x = ptr_arg(args[1]);
    float *y = ptr_arg(args[2]);
    unsigned long long n;
    memcpy(&n, args[3], sizeof n);
    unsigned long long active = x_threads(l) < n ? x_threads(l) : n;
    if (active == 0)
        return CUDA_SUCCESS;
    if (unmapped(x) || unmapped(y))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (unsigned long long c = copies(l); c > 0; c--)
        for (unsigned long long i = 0; i < active; i++)
            y[i] = (float)((double)a * (double)x[i] + (double)y[i]);
    return CUDA_SUCCESS;
}

static CUresult empty_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)l;
    (void)args;
    (void)user;
    return CUDA_SUCCESS;
}

/* params.cu's struct cusk_triple { char c; double d; int i; }: 24 bytes. */
struct twin_triple {
    signed char c;
    double d;
    int i;
};
_Static_assert(sizeof(struct twin_triple) == 24, "cusk_triple is 24 bytes, align 8");

/* mixed(signed char, unsigned char, int, float, double, cusk_triple,
 * const int *p, long long *out): thread (0, 0) of x writes what it got. */
static CUresult mixed_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)l;
    (void)user;
    signed char c8;
    unsigned char u8;
    int i32;
    float f32;
    double d64;
    struct twin_triple t;
    memcpy(&c8, args[0], 1);
    memcpy(&u8, args[1], 1);
    memcpy(&i32, args[2], 4);
    memcpy(&f32, args[3], 4);
    memcpy(&d64, args[4], 8);
    memcpy(&t, args[5], sizeof t);
    const int *p = ptr_arg(args[6]);
    long long *out = ptr_arg(args[7]);
    if (unmapped(out) || (p && unmapped(p)))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    out[0] = c8;
    out[1] = u8;
    out[2] = i32;
    out[3] = to_s64((double)(f32 * 1000.0f)); /* the product is a float, as on the device */
    out[4] = to_s64(d64 * 1000.0);
    out[5] = t.c;
    out[6] = to_s64(t.d * 1000.0);
    out[7] = t.i;
    out[8] = p ? *p : -1;
    return CUDA_SUCCESS;
}

/* rotate_texture(float *out, u64 tex, unsigned width, unsigned height,
 * float c, float s): every (x, y) of the 2D grid inside the image reads the
 * texture at the rotated point, as the kernel does, through the fake's
 * fetch (cus_fake_tex2d_float). */
static CUresult rotate_texture_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)user;
    float *out = ptr_arg(args[0]);
    CUtexObject tex;
    unsigned int width, height;
    float c, s;
    memcpy(&tex, args[1], sizeof tex);
    memcpy(&width, args[2], sizeof width);
    memcpy(&height, args[3], sizeof height);
    memcpy(&c, args[4], sizeof c);
    memcpy(&s, args[5], sizeof s);
    unsigned long long nx = (unsigned long long)l->grid[0] * l->block[0];
    unsigned long long ny = (unsigned long long)l->grid[1] * l->block[1];
    if (width && height && nx && ny && unmapped(out))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (unsigned long long y = 0; y < ny && y < height; y++)
        for (unsigned long long x = 0; x < nx && x < width; x++) {
            float u = (float)x / (float)width - 0.5f, v = (float)y / (float)height - 0.5f;
            out[y * width + x] =
                cus_fake_tex2d_float(tex, u * c - v * s + 0.5f, v * c + u * s + 0.5f);
        }
    return CUDA_SUCCESS;
}

/* --- scale_by_coeffs and the globals it reads ------------------------------- */

#define MAX_BINDINGS 64

static pthread_mutex_t bindings_lock = PTHREAD_MUTEX_INITIALIZER;
static struct binding {
    CUfunction fn;
    CUdeviceptr coeffs, counter;
} bindings[MAX_BINDINGS];
static unsigned binding_count, binding_next;

void twins_bind_globals(const cus_function *scale_by_coeffs, CUdeviceptr coeffs,
                        CUdeviceptr counter)
{
    CUfunction fn = cus_function_handle(scale_by_coeffs);
    if (!fn)
        return;
    pthread_mutex_lock(&bindings_lock);
    struct binding *b = NULL;
    for (unsigned i = 0; i < binding_count && !b; i++)
        if (bindings[i].fn == fn)
            b = &bindings[i];
    if (!b && binding_count < MAX_BINDINGS)
        b = &bindings[binding_count++];
    if (!b) /* full: replace the oldest (function handles are never reused before install) */
        b = &bindings[binding_next++ % MAX_BINDINGS];
    b->fn = fn;
    b->coeffs = coeffs;
    b->counter = counter;
    pthread_mutex_unlock(&bindings_lock);
}

static bool find_binding(CUfunction fn, struct binding *out)
{
    bool found = false;
    pthread_mutex_lock(&bindings_lock);
    for (unsigned i = 0; i < binding_count && !found; i++)
        if (bindings[i].fn == fn) {
            *out = bindings[i];
            found = true;
        }
    pthread_mutex_unlock(&bindings_lock);
    return found;
}

/* scale_by_coeffs(const float *in, float *out, int n):
 * out[i] = cusk_coeffs[i % 4] * in[i], and one atomicAdd(&cusk_counter, 1)
 * per thread with i < n. */
static CUresult scale_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)user;
    const float *in = ptr_arg(args[0]);
    float *out = ptr_arg(args[1]);
    int n;
    memcpy(&n, args[2], sizeof n);
    unsigned long long active = n > 0 ? (unsigned long long)n : 0;
    if (x_threads(l) < active)
        active = x_threads(l);
    if (active == 0)
        return CUDA_SUCCESS;
    struct binding b;
    if (!find_binding(l->handle, &b)) {
        fprintf(stderr, "twins: scale_by_coeffs (function %p) ran on the fake without "
                        "twins_bind_globals(): its globals are unknown, nothing computed\n",
                (void *)l->handle);
        return CUDA_ERROR_NOT_FOUND; /* a misuse for the fake: the teardown reports it */
    }
    const float *coeffs = (const float *)(uintptr_t)b.coeffs;
    unsigned int *counter = (unsigned int *)(uintptr_t)b.counter;
    if (unmapped(in) || unmapped(out) || unmapped(coeffs) || unmapped(counter))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (unsigned long long c = copies(l); c > 0; c--) {
        for (unsigned long long i = 0; i < active; i++) {
            out[i] = coeffs[i % 4] * in[i];
            (*counter)++;
        }
    }
    return CUDA_SUCCESS;
}

/* fault(int *bad): *bad = 42 on an address that maps nothing. */
static CUresult fault_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)l;
    (void)args;
    (void)user;
    return CUDA_ERROR_ILLEGAL_ADDRESS;
}

/* sm_ids(unsigned *seen, unsigned nseen, unsigned *count, long long spin):
 * the blocks spread over the context's SMs (a green context's share, the
 * fake says how many: cus_fake_context_sm_count), at most one per block, so
 * SMs 0 to n-1 are marked and *count gains n. */
static CUresult sm_ids_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)user;
    unsigned int *seen = ptr_arg(args[0]), *count = ptr_arg(args[2]);
    unsigned int nseen;
    memcpy(&nseen, args[1], sizeof nseen);
    if (unmapped(seen) || unmapped(count))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    unsigned long long blocks = (unsigned long long)l->grid[0] * l->grid[1] * l->grid[2];
    unsigned long long n = cus_fake_context_sm_count(l->context);
    if (n > blocks)
        n = blocks;
    for (unsigned int id = 0; id < n && id < nseen; id++)
        if (!seen[id]) {
            seen[id] = 1;
            ++*count;
        }
    return CUDA_SUCCESS;
}

/* tma_copy_tile(const __grid_constant__ CUtensorMap map, float *out,
 * unsigned width, unsigned height, unsigned box_w, unsigned box_h)
 * (kernels/tma.cu): block (bx, by) copies the map's box at (bx * box_w,
 * by * box_h) to out, a width x height matrix, where it lies inside it; the
 * tensor is read through the map the fake encoded
 * (cus_fake_tensor_map_decode), zeros past its dims, as TMA fills them. A
 * map the fake did not encode (zeros: a NULL map), one not 2-D of 4-byte
 * elements, or a box other than the kernel's faults, as the TMA unit would
 * (or hang, for the box). */
static CUresult tma_copy_tile_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)user;
    CUtensorMap map;
    memcpy(&map, args[0], sizeof map);
    float *out = ptr_arg(args[1]);
    unsigned int width, height, box_w, box_h;
    memcpy(&width, args[2], sizeof width);
    memcpy(&height, args[3], sizeof height);
    memcpy(&box_w, args[4], sizeof box_w);
    memcpy(&box_h, args[5], sizeof box_h);
    cus_fake_tensor_map d;
    if (!cus_fake_tensor_map_decode(&map, &d) || d.im2col || d.rank != 2 ||
        cus_tensor_map_element_bits(d.data_type) != 32 || d.box_dim[0] != box_w ||
        d.box_dim[1] != box_h || unmapped(out) || unmapped((void *)(uintptr_t)d.address))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    const unsigned char *src = (const unsigned char *)(uintptr_t)d.address;
    for (unsigned int by = 0; by < l->grid[1]; by++)
        for (unsigned int bx = 0; bx < l->grid[0]; bx++)
            for (unsigned int j = 0; j < box_h; j++)
                for (unsigned int i = 0; i < box_w; i++) {
                    unsigned long long x = (unsigned long long)bx * box_w + i;
                    unsigned long long y = (unsigned long long)by * box_h + j;
                    if (x >= width || y >= height)
                        continue;
                    float v = 0;
                    if (x < d.global_dim[0] && y < d.global_dim[1])
                        memcpy(&v, src + y * d.global_strides[0] + x * 4, sizeof v);
                    out[y * width + x] = v;
                }
    return CUDA_SUCCESS;
}

/* countdown(unsigned *counter, CUgraphConditionalHandle handle): *counter
 * goes down by one (not below 0) and the handle's value becomes whether it
 * is still positive (cus_fake_graph_set_conditional, the device's
 * cudaGraphSetConditional). A handle the fake did not make faults. */
static CUresult countdown_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)l;
    (void)user;
    unsigned int *counter = ptr_arg(args[0]);
    CUgraphConditionalHandle h;
    memcpy(&h, args[1], sizeof h);
    if (unmapped(counter))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    if (*counter)
        --*counter;
    return cus_fake_graph_set_conditional(h, *counter > 0) == CUS_SUCCESS
               ? CUDA_SUCCESS
               : CUDA_ERROR_ILLEGAL_ADDRESS;
}

/* pdl_primary(const float *in, float *out, unsigned long long n)
 * (kernels/pdl.cu): out[i] = 2 * in[i], one element per x thread. Its
 * trigger needs nothing here: the fake runs kernels one after another. */
static CUresult pdl_primary_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)user;
    const float *in = ptr_arg(args[0]);
    float *out = ptr_arg(args[1]);
    unsigned long long n;
    memcpy(&n, args[2], sizeof n);
    unsigned long long active = x_threads(l) < n ? x_threads(l) : n;
    if (active && (unmapped(in) || unmapped(out)))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (unsigned long long i = 0; i < active; i++)
        out[i] = 2.0f * in[i];
    return CUDA_SUCCESS;
}

/* pdl_secondary(const float *out, float *out2, unsigned long long n):
 * out2[i] = out[i] + 1, after the primary (its cudaGridDependencySynchronize). */
static CUresult pdl_secondary_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)user;
    const float *out = ptr_arg(args[0]);
    float *out2 = ptr_arg(args[1]);
    unsigned long long n;
    memcpy(&n, args[2], sizeof n);
    unsigned long long active = x_threads(l) < n ? x_threads(l) : n;
    if (active && (unmapped(out) || unmapped(out2)))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (unsigned long long i = 0; i < active; i++)
        out2[i] = out[i] + 1.0f;
    return CUDA_SUCCESS;
}

/* link_scale(float *x, int n) (kernels/link, once linked): x[i] = 2 * x[i] + 1,
 * one element per x thread. */
static CUresult link_scale_twin(const cus_fake_launch *l, void **args, void *user)
{
    (void)user;
    float *x = ptr_arg(args[0]);
    int n;
    memcpy(&n, args[1], sizeof n);
    unsigned long long active = n > 0 ? (unsigned long long)n : 0;
    if (x_threads(l) < active)
        active = x_threads(l);
    if (active && unmapped(x))
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (unsigned long long i = 0; i < active; i++)
        x[i] = 2.0f * x[i] + 1.0f;
    return CUDA_SUCCESS;
}

static const struct {
    const char *name;
    cus_fake_kernel_fn fn;
} twins[] = {
    {"sum", sum_twin},         {"saxpy", saxpy_twin},
    {"empty", empty_twin},     {"empty1", empty_twin},
    {"empty16", empty_twin},   {"mixed", mixed_twin},
    {"scale_by_coeffs", scale_twin}, {"fault", fault_twin},
    {"rotate_texture", rotate_texture_twin},
    {"sm_ids", sm_ids_twin},
    {"tma_copy_tile", tma_copy_tile_twin},
    {"countdown", countdown_twin},
    {"pdl_primary", pdl_primary_twin},
    {"pdl_secondary", pdl_secondary_twin},
    {"link_scale", link_scale_twin},
};

void twins_unregister(void)
{
    for (size_t i = 0; i < sizeof twins / sizeof twins[0]; i++)
        (void)cus_fake_register_kernel(twins[i].name, NULL, NULL);
}

cus_status twins_register(void)
{
    pthread_mutex_lock(&bindings_lock);
    memset(bindings, 0, sizeof bindings);
    binding_count = binding_next = 0;
    pthread_mutex_unlock(&bindings_lock);
    for (size_t i = 0; i < sizeof twins / sizeof twins[0]; i++) {
        cus_status st = cus_fake_register_kernel(twins[i].name, twins[i].fn, NULL);
        if (st != CUS_SUCCESS) {
            fprintf(stderr, "twins: cannot register %s: %s\n", twins[i].name,
                    cus_status_name(st));
            return st;
        }
    }
    return CUS_SUCCESS;
}
