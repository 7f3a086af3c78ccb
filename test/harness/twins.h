/* Host twins of the kernels of kernels/ for the fake driver: registered with
 * cus_fake_register_kernel, so that a launch on the fake computes what the
 * GPU computes (device pointers are host addresses there).
 *
 *   sum, saxpy, mixed   as in their .cu files, thread by thread over the grid
 *   empty, empty1, empty16
 *                       nothing (registered all the same, so that a launch of
 *                       them runs a twin like any other)
 *   scale_by_coeffs     reads the module's __constant__ cusk_coeffs and
 *                       updates its __device__ cusk_counter: the globals the
 *                       fake's cuModuleGetGlobal returns. A twin may not call
 *                       the driver, so it cannot look them up itself:
 *                       twins_bind_globals() tells it where they are for one
 *                       function. An unbound launch is reported on stderr and
 *                       returns CUDA_ERROR_NOT_FOUND, which the fake counts as
 *                       a misuse (so the test's teardown fails and says why).
 *   rotate_texture      texture.cu's rotation, over the 2D grid, each fetch
 *                       the fake's (cus_fake_tex2d_float)
 *   sm_ids              smid.cu's distinct SMs: the context's SM count
 *                       (cus_fake_context_sm_count: a green context's share),
 *                       at most one SM per block
 *   tma_copy_tile       tma.cu's tile copy, each block's box read through the
 *                       tensor map the fake encoded (cus_fake_tensor_map_decode)
 *   countdown           countdown.cu's step of a WHILE loop: *counter down by
 *                       one, the handle's value set to *counter > 0
 *                       (cus_fake_graph_set_conditional)
 *   pdl_primary, pdl_secondary
 *                       pdl.cu's pair: out = 2 * in, then out2 = out + 1
 *   link_scale          kernels/link's kernel once linked: x = 2 * x + 1
 *   fault               the illegal-address fault it exists to cause: returns
 *                       CUDA_ERROR_ILLEGAL_ADDRESS, which poisons the context
 *                       the way the fake emulates sticky errors (see fake.h).
 *                       It never writes through its pointer: a twin cannot
 *                       tell a mapped address from an unmapped one.
 * Every other twin faults the same way (CUDA_ERROR_ILLEGAL_ADDRESS, writing
 * nothing) when a thread would dereference a pointer in the first 64 KiB,
 * which nothing maps: a NULL or small bogus pointer faults as on a GPU
 * instead of crashing the test.
 *
 * Under the fake (CUS_TEST_FAKE) env_setup_with() registers them after every
 * install (harness/env.c), and so does the fault sweep, whose installs go
 * through env_setup_with(). Elsewhere (the gpu harness) the functions below
 * are no-ops, so that shared scenarios can call them unconditionally. */
#ifndef CUSCOPE_TEST_TWINS_H
#define CUSCOPE_TEST_TWINS_H

#include <cuscope/cuscope.h>

#if defined(CUS_TEST_FAKE) && defined(CUS_TEST_HAVE_KERNELS)

/* Registers every twin with the installed fake and forgets earlier bindings
 * (the fake forgets its registrations at every install). */
cus_status twins_register(void);
/* Removes them all (for a test of the fake's own kernel registry). */
void twins_unregister(void);

/* scale_by_coeffs (a function of the globals image) reads its coefficients
 * at `coeffs` and counts at `counter`: the addresses cus_module_get_global
 * returned for cusk_coeffs and cusk_counter of its module. No driver call.
 * Up to 64 functions are bound at once; binding one again replaces it. */
void twins_bind_globals(const cus_function *scale_by_coeffs, CUdeviceptr coeffs,
                        CUdeviceptr counter);

#else

static inline cus_status twins_register(void)
{
    return CUS_SUCCESS;
}

static inline void twins_unregister(void)
{
}

static inline void twins_bind_globals(const cus_function *scale_by_coeffs, CUdeviceptr coeffs,
                                      CUdeviceptr counter)
{
    (void)scale_by_coeffs;
    (void)coeffs;
    (void)counter;
}

#endif

#endif
