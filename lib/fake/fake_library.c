/* Libraries and kernels: cuLibrary*, cuKernel*. Part of the module area: a
 * library is loaded into a context as a module of that context
 * (fake_module_load_into_locked), lazily, the first time that context
 * needs it (a launch, cuKernelGetFunction, cuLibraryGetGlobal), as the
 * driver does with CUDA_MODULE_LOADING=LAZY, its default since 12.2. With
 * EAGER loading the driver would load into every context at once; the fake
 * does not model that mode.
 *
 * A library is a registered record (kind LIBRARY) holding the image (a copy,
 * or the caller's with CU_LIBRARY_BINARY_IS_PRESERVED), the image as parsed
 * for the first device that can run it (the names and layouts), one kernel
 * record per kernel, and the modules it was loaded as, per context. Kernel
 * records are not registry handles: they live in their library's array and
 * stay, like every record, until the next install, so that a kernel of an
 * unloaded library is recognised and reported. cuLibraryUnload unloads the
 * modules (synchronizing their contexts first, as cuModuleUnload does); a
 * context's death unloads its module and leaves the library.
 *
 * The context rules are the H200's (test/rules); the rest is checked
 * against the documentation and, where said, an H200 (gpu-library):
 * - cuLibraryLoadData needs no context; an image that no device can run is
 *   refused at load with the module's answer for the first device
 *   (CUDA_ERROR_NO_BINARY_FOR_GPU, CUDA_ERROR_INVALID_PTX for a .target above
 *   it). PTX that does not compile at all is loaded, as an H200 loads it
 *   (its JIT runs at the first use), and cuLibraryGetKernel answers
 *   CUDA_ERROR_INVALID_PTX (the H200's answer), as do the fake's other uses
 *   of the library's code (count, enumeration, globals: unchecked); the
 *   JIT's error log is written at the load, into the buffers its options
 *   named, where the driver writes it at the first use.
 * - cuKernelGetFunction, cuLibraryGetGlobal and cuKernelGetParamInfo need a
 *   current context (CUDA_ERROR_INVALID_CONTEXT without one; a poisoned one
 *   answers its error), though a kernel's layout is the same in every one.
 * - a launch of a CUkernel runs in its stream's context, or the current one
 *   for the NULL and legacy streams (cuLaunchKernel's documentation).
 * - cuKernelGetAttribute/SetAttribute need no context; a bad device is
 *   CUDA_ERROR_INVALID_DEVICE.
 * - cuLibraryGetManaged and cuLibraryGetUnifiedFunction: the image parser
 *   has no __managed__ variables nor unified functions, so every name is
 *   unknown: CUDA_ERROR_NOT_FOUND for a variable, CUDA_ERROR_INVALID_VALUE
 *   for a function (the H200's answer for a name that is no unified
 *   function). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_module_records.h"

/* --- records ------------------------------------------------------------------------------ */

typedef struct fake_lib_kernel {
    struct CUlib_st *lib;
    size_t index; /* in lib->img->functions */
    /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES set per device */
    int max_dynamic_shared[CUS_FAKE_MAX_DEVICES];
    bool dynamic_shared_set[CUS_FAKE_MAX_DEVICES];
} fake_lib_kernel;

typedef struct lib_load {
    struct CUctx_st *ctx;
    struct CUmod_st *mod;
} lib_load;

struct CUlib_st {
    fake_handle h; /* kind LIBRARY */
    const unsigned char *image; /* the copy, or the caller's preserved binary */
    unsigned char *copy;        /* owned; NULL when preserved */
    size_t size;
    fake_image *img;            /* NULL once unloaded */
    size_t nkernels;
    fake_lib_kernel *kernels;   /* kept until install */
    size_t nloads, loads_capacity;
    lib_load *loads;
    /* PTX that does not compile: loaded all the same, as the H200 loads it
     * (its JIT runs at the first use), and every later use answers this
     * (CUDA_ERROR_INVALID_PTX), img NULL. The JIT's error log was written
     * at the load, into the buffers the load's options named. */
    CUresult deferred;
};

static struct CUlib_st **libraries; /* every library since install */
static size_t library_count, library_capacity;

/* Every kernel record since install, by its address (the CUkernel handed
 * out): open addressing, at most half full, never shrinking (an unloaded
 * library's kernels stay recognisable). A lookup is O(1) however many
 * libraries were loaded; a scan of them made each launch and lookup of a
 * kernel grow with every library ever loaded. */
static fake_lib_kernel **kernel_slots;
static size_t kernel_slots_capacity, kernel_slots_used;

static size_t kernel_slot_of(uintptr_t key, size_t cap)
{
    return (size_t)(((uint64_t)key * UINT64_C(0x9E3779B97F4A7C15)) >> 17) & (cap - 1);
}

/* Room for n more kernels; false when out of host memory. */
static bool kernel_index_reserve_locked(size_t n)
{
    if ((kernel_slots_used + n) * 2 <= kernel_slots_capacity)
        return true;
    size_t cap = kernel_slots_capacity ? kernel_slots_capacity : 64;
    while ((kernel_slots_used + n) * 2 > cap)
        cap *= 2;
    fake_lib_kernel **slots = calloc(cap, sizeof *slots);
    if (!slots)
        return false;
    for (size_t i = 0; i < kernel_slots_capacity; i++) {
        fake_lib_kernel *k = kernel_slots[i];
        if (!k)
            continue;
        size_t j = kernel_slot_of((uintptr_t)k, cap);
        while (slots[j])
            j = (j + 1) & (cap - 1);
        slots[j] = k;
    }
    free(kernel_slots);
    kernel_slots = slots;
    kernel_slots_capacity = cap;
    return true;
}

/* After kernel_index_reserve_locked. */
static void kernel_index_put_locked(fake_lib_kernel *k)
{
    size_t j = kernel_slot_of((uintptr_t)k, kernel_slots_capacity);
    while (kernel_slots[j])
        j = (j + 1) & (kernel_slots_capacity - 1);
    kernel_slots[j] = k;
    kernel_slots_used++;
}

static void library_reset_locked(const cus_fake_config *cfg)
{
    (void)cfg;
    for (size_t i = 0; i < library_count; i++) {
        struct CUlib_st *l = libraries[i];
        free(l->copy);
        fake_image_free(l->img);
        free(l->kernels);
        free(l->loads);
        /* the registry frees the record; the modules went with the module area */
    }
    free(libraries);
    libraries = NULL;
    library_count = library_capacity = 0;
    free(kernel_slots);
    kernel_slots = NULL;
    kernel_slots_capacity = kernel_slots_used = 0;
}

/* --- arguments ---------------------------------------------------------------------------- */

/* A library argument: unknown or unloaded is misuse and
 * CUDA_ERROR_INVALID_HANDLE (NULL too, without the misuse). */
static CUresult library_arg_locked(CUlibrary hlib, struct CUlib_st **out)
{
    if (!hlib)
        return CUDA_ERROR_INVALID_HANDLE;
    fake_handle *h = fake_handle_find_locked((uintptr_t)hlib);
    if (!h || h->kind != CUS_FAKE_HANDLE_LIBRARY) {
        fake_misuse_locked("unknown library handle 0x%" PRIxPTR, (uintptr_t)hlib);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (h->state != FAKE_LIVE) {
        fake_misuse_locked("library 0x%" PRIxPTR " used after cuLibraryUnload", (uintptr_t)hlib);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    *out = (struct CUlib_st *)h;
    return CUDA_SUCCESS;
}

/* The same for a use of its code: a library whose PTX did not compile
 * answers that now. */
static CUresult library_code_locked(CUlibrary hlib, struct CUlib_st **out)
{
    struct CUlib_st *l = NULL;
    CUresult r = library_arg_locked(hlib, &l);
    if (r == CUDA_SUCCESS && l->deferred != CUDA_SUCCESS)
        return l->deferred;
    if (r == CUDA_SUCCESS)
        *out = l;
    return r;
}

/* The kernel record k points at, or NULL; never dereferences k. */
static fake_lib_kernel *kernel_find(const void *k)
{
    if (!k || !kernel_slots_capacity)
        return NULL;
    for (size_t j = kernel_slot_of((uintptr_t)k, kernel_slots_capacity);;
         j = (j + 1) & (kernel_slots_capacity - 1)) {
        if (!kernel_slots[j])
            return NULL;
        if ((const void *)kernel_slots[j] == k)
            return kernel_slots[j];
    }
}

/* A kernel argument, by the library's rules; NULL answers if_null. */
static CUresult kernel_arg_locked(CUkernel hk, CUresult if_null, fake_lib_kernel **out)
{
    if (!hk)
        return if_null;
    fake_lib_kernel *k = kernel_find(hk);
    if (!k) {
        fake_misuse_locked("unknown kernel handle 0x%" PRIxPTR, (uintptr_t)hk);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (k->lib->h.state != FAKE_LIVE) {
        fake_misuse_locked("kernel 0x%" PRIxPTR " used after its library 0x%" PRIxPTR
                           " was unloaded", (uintptr_t)hk, (uintptr_t)k->lib);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    *out = k;
    return CUDA_SUCCESS;
}

static const fake_image_function *kernel_image(const fake_lib_kernel *k)
{
    return &k->lib->img->functions[k->index];
}

/* --- loading per context ------------------------------------------------------------------ */

/* The library's module in c, loaded now if it was not yet. */
static CUresult load_in_locked(struct CUlib_st *l, struct CUctx_st *c, struct CUmod_st **out)
{
    for (size_t i = 0; i < l->nloads; i++) {
        if (l->loads[i].ctx == c && l->loads[i].mod->h.state == FAKE_LIVE) {
            *out = l->loads[i].mod;
            return CUDA_SUCCESS;
        }
    }
    if (l->nloads == l->loads_capacity) {
        size_t cap = l->loads_capacity ? l->loads_capacity * 2 : 4;
        lib_load *grown = realloc(l->loads, cap * sizeof *grown);
        if (!grown)
            return CUDA_ERROR_OUT_OF_MEMORY;
        l->loads = grown;
        l->loads_capacity = cap;
    }
    struct CUmod_st *m = NULL;
    CUresult r = fake_module_load_into_locked(c, l->image, l->size, &m);
    if (r != CUDA_SUCCESS)
        return r;
    /* What cuKernelSetAttribute set for the device applies here too. */
    for (size_t i = 0; i < l->nkernels; i++) {
        const fake_lib_kernel *k = &l->kernels[i];
        struct CUfunc_st *f = k->dynamic_shared_set[c->device]
                                  ? fake_module_function_named(m, kernel_image(k)->name)
                                  : NULL;
        if (f)
            f->max_dynamic_shared = k->max_dynamic_shared[c->device];
    }
    l->loads[l->nloads++] = (lib_load){c, m};
    *out = m;
    return CUDA_SUCCESS;
}

/* The kernel's function in c. */
static CUresult kernel_function_in_locked(fake_lib_kernel *k, struct CUctx_st *c,
                                          struct CUfunc_st **out)
{
    struct CUmod_st *m = NULL;
    CUresult r = load_in_locked(k->lib, c, &m);
    if (r != CUDA_SUCCESS)
        return r;
    struct CUfunc_st *f = fake_module_function_named(m, kernel_image(k)->name);
    if (!f)
        return CUDA_ERROR_NOT_FOUND; /* parsed differently for this device */
    if (f->fi->lookup != CUDA_SUCCESS)
        return f->fi->lookup;
    *out = f;
    return CUDA_SUCCESS;
}

/* fake_module_kernel_resolver: a launch of a CUkernel. */
static bool resolve_launch_kernel(CUfunction h, CUstream stream, CUresult *r,
                                  struct CUfunc_st **out)
{
    fake_lib_kernel *k = kernel_find(h);
    if (!k)
        return false;
    *r = kernel_arg_locked((CUkernel)h, CUDA_ERROR_INVALID_HANDLE, &k);
    if (*r != CUDA_SUCCESS)
        return true;
    struct CUctx_st *c = NULL;
    if (!stream || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) {
        *r = fake_current_context_locked(&c);
    } else {
        struct CUstream_st *s = NULL;
        *r = fake_stream_arg_locked(stream, &s);
        if (*r == CUDA_SUCCESS)
            c = s->ctx;
    }
    if (*r == CUDA_SUCCESS)
        *r = kernel_function_in_locked(k, c, out);
    return true;
}

__attribute__((constructor)) static void register_resolver(void)
{
    fake_module_kernel_resolver = resolve_launch_kernel;
}

/* --- loading ---------------------------------------------------------------------------- */

static uint64_t rd(const unsigned char *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* The bytes of an image the parser accepted: what a copy must hold. A
 * fatbin wrapper's fatbin is copied instead of the wrapper (*image moves to
 * it). 0 when it cannot be told. */
static size_t image_extent(const unsigned char **image)
{
    const unsigned char *p = *image;
    uint32_t magic = (uint32_t)rd(p, 4);
    if (magic == 0x466243b1u) { /* the wrapper: { magic, version, fatbin, ... } */
        const unsigned char *fat = (const unsigned char *)(uintptr_t)rd(p + 8, 8);
        *image = fat;
        return image_extent(image);
    }
    if (magic == 0xBA55ED50u)
        return (size_t)(rd(p + 6, 2) + rd(p + 8, 8));
    if (magic == 0x464c457fu) { /* ELF64 (the parser refused anything else) */
        uint64_t end = rd(p + 0x28, 8) + rd(p + 0x3a, 2) * rd(p + 0x3c, 2);
        uint64_t ph = rd(p + 0x20, 8) + rd(p + 0x36, 2) * rd(p + 0x38, 2);
        if (ph > end)
            end = ph;
        uint64_t shoff = rd(p + 0x28, 8), shentsize = rd(p + 0x3a, 2), shnum = rd(p + 0x3c, 2);
        for (uint64_t i = 0; i < shnum; i++) {
            const unsigned char *sh = p + shoff + i * shentsize;
            if (rd(sh + 4, 4) == 8) /* SHT_NOBITS */
                continue;
            uint64_t e = rd(sh + 0x18, 8) + rd(sh + 0x20, 8);
            if (e > end)
                end = e;
        }
        return (size_t)end;
    }
    return strlen((const char *)p) + 1; /* PTX */
}

static bool reserve_library_slot_locked(void)
{
    if (library_count < library_capacity)
        return true;
    size_t cap = library_capacity ? library_capacity * 2 : 16;
    struct CUlib_st **list = realloc(libraries, cap * sizeof *list);
    if (!list)
        return false;
    libraries = list;
    library_capacity = cap;
    return true;
}

static CUresult library_options_parse(unsigned int n, const CUlibraryOption *options,
                                      void **values, bool *preserved)
{
    *preserved = false;
    if (n && (!options || !values))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned int i = 0; i < n; i++) {
        switch ((int)options[i]) {
        case CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE:
            break;
        case CU_LIBRARY_BINARY_IS_PRESERVED:
            *preserved = values[i] != NULL;
            break;
        default:
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return CUDA_SUCCESS;
}

static CUresult load_locked(CUlibrary *library, const void *code, size_t size,
                            CUjit_option *jit_options, void **jit_values, unsigned int njit,
                            CUlibraryOption *lib_options, void **lib_values, unsigned int nlib)
{
    if (!library || !code)
        return CUDA_ERROR_INVALID_VALUE;
    bool preserved;
    CUresult r = library_options_parse(nlib, lib_options, lib_values, &preserved);
    if (r != CUDA_SUCCESS)
        return r;
    /* The first device that runs it; else the first device's answer. */
    fake_image *img = NULL;
    CUresult first = CUDA_ERROR_NO_DEVICE;
    for (CUdevice d = 0; d < fake_dev.count && !img; d++) {
        r = fake_module_parse_for_device_locked(d, code, size, njit, jit_options, jit_values,
                                                &img);
        if (d == 0)
            first = r;
    }
    /* PTX the parser refuses for any architecture (a syntax error, not a
     * .target above the devices): loaded, refused at the first use. */
    CUresult deferred = CUDA_SUCCESS;
    if (!img && first == CUDA_ERROR_INVALID_PTX) {
        fake_image *any = NULL;
        if (fake_image_parse(code, size, FAKE_IMAGE_CC(99, 9), &any, NULL, 0, NULL, 0) ==
            CUDA_ERROR_INVALID_PTX)
            deferred = CUDA_ERROR_INVALID_PTX;
        fake_image_free(any);
    }
    if (!img && !deferred)
        return first;
    const unsigned char *image = code;
    size_t extent = image_extent(&image);
    size_t nfunctions = img ? img->nfunctions : 0;
    preserved = preserved && img && img->format != FAKE_IMAGE_PTX; /* PTX is always copied */
    unsigned char *copy = preserved ? NULL : malloc(extent ? extent : 1);
    fake_lib_kernel *kernels = calloc(nfunctions ? nfunctions : 1, sizeof *kernels);
    struct CUlib_st *l = NULL;
    if ((preserved || copy) && kernels && reserve_library_slot_locked() &&
        kernel_index_reserve_locked(nfunctions))
        l = fake_handle_new_locked(CUS_FAKE_HANDLE_LIBRARY, sizeof *l, 0);
    if (!l) {
        free(copy);
        free(kernels);
        fake_image_free(img);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (copy)
        memcpy(copy, image, extent);
    l->image = copy ? copy : image;
    l->copy = copy;
    l->size = extent;
    l->img = img;
    l->deferred = deferred;
    l->nkernels = nfunctions;
    l->kernels = kernels;
    for (size_t i = 0; i < nfunctions; i++) {
        kernels[i] = (fake_lib_kernel){.lib = l, .index = i};
        kernel_index_put_locked(&kernels[i]);
    }
    libraries[library_count++] = l;
    *library = (CUlibrary)l;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI fake_cuLibraryLoadData(CUlibrary *library, const void *code,
                                        CUjit_option *jitOptions, void **jitOptionsValues,
                                        unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                        void **libraryOptionValues, unsigned int numLibraryOptions)
{
    FAKE_ENTER(cuLibraryLoadData);
    return fake_leave(load_locked(library, code, SIZE_MAX, jitOptions, jitOptionsValues,
                                  numJitOptions, libraryOptions, libraryOptionValues,
                                  numLibraryOptions));
}

CUresult CUDAAPI fake_cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                            CUjit_option *jitOptions, void **jitOptionsValues,
                                            unsigned int numJitOptions,
                                            CUlibraryOption *libraryOptions,
                                            void **libraryOptionValues,
                                            unsigned int numLibraryOptions)
{
    FAKE_ENTER(cuLibraryLoadFromFile);
    if (!library || !fileName)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    /* cuda.h (CU_LIBRARY_BINARY_IS_PRESERVED): "Specifying this option with
     * cuLibraryLoadFromFile() is invalid and will return
     * CUDA_ERROR_INVALID_VALUE." */
    for (unsigned int i = 0; libraryOptions && i < numLibraryOptions; i++)
        if (libraryOptions[i] == CU_LIBRARY_BINARY_IS_PRESERVED)
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
    unsigned char *data = NULL;
    size_t size = 0;
    CUresult r = fake_module_read_file(fileName, &data, &size);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    /* the file's bytes are copied (preserving was refused above) */
    r = load_locked(library, data, size + 1, jitOptions, jitOptionsValues, numJitOptions,
                    libraryOptions, libraryOptionValues, numLibraryOptions);
    free(data);
    return fake_leave(r);
}

CUresult CUDAAPI fake_cuLibraryUnload(CUlibrary library)
{
    FAKE_ENTER(cuLibraryUnload);
    fake_handle *h = fake_handle_find_locked((uintptr_t)library);
    if (h && h->kind == CUS_FAKE_HANDLE_LIBRARY && h->state != FAKE_LIVE) {
        fake_misuse_locked("double cuLibraryUnload of library 0x%" PRIxPTR, (uintptr_t)library);
        return fake_leave(CUDA_ERROR_INVALID_HANDLE);
    }
    struct CUlib_st *l = NULL;
    CUresult r = library_arg_locked(library, &l);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    /* Unloading synchronizes each context it was loaded in (as
     * cuModuleUnload); the lock may be released meanwhile. */
    for (size_t i = 0; i < l->nloads; i++)
        fake_module_unload_for_library_locked(l->loads[i].mod);
    if (l->h.state != FAKE_LIVE) { /* unloaded meanwhile by another thread */
        fake_misuse_locked("double cuLibraryUnload of library 0x%" PRIxPTR, (uintptr_t)library);
        return fake_leave(CUDA_ERROR_INVALID_HANDLE);
    }
    free(l->copy);
    l->copy = NULL;
    l->image = NULL;
    /* the image stays until install: launch records name its kernels */
    fake_handle_set_state_locked(&l->h, FAKE_DESTROYED);
    return fake_leave(CUDA_SUCCESS);
}

/* --- kernels ------------------------------------------------------------------------------- */

CUresult CUDAAPI fake_cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    FAKE_ENTER(cuLibraryGetKernel);
    struct CUlib_st *l = NULL;
    CUresult r = library_code_locked(library, &l);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!pKernel || !name)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    for (size_t i = 0; i < l->nkernels; i++) {
        const fake_image_function *fi = &l->img->functions[i];
        if (strcmp(fi->name, name) == 0) {
            if (fi->lookup != CUDA_SUCCESS)
                return fake_leave(fi->lookup);
            *pKernel = (CUkernel)&l->kernels[i];
            return fake_leave(CUDA_SUCCESS);
        }
    }
    return fake_leave(CUDA_ERROR_NOT_FOUND);
}

CUresult CUDAAPI fake_cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
    FAKE_ENTER(cuLibraryGetKernelCount);
    struct CUlib_st *l = NULL;
    CUresult r = library_code_locked(lib, &l);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!count)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    *count = (unsigned int)l->nkernels;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels,
                                                CUlibrary lib)
{
    FAKE_ENTER(cuLibraryEnumerateKernels);
    struct CUlib_st *l = NULL;
    CUresult r = library_code_locked(lib, &l);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!kernels || numKernels == 0)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    for (size_t i = 0; i < l->nkernels && i < numKernels; i++)
        kernels[i] = (CUkernel)&l->kernels[i];
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuKernelGetName(const char **name, CUkernel hfunc)
{
    FAKE_ENTER(cuKernelGetName);
    fake_lib_kernel *k = NULL;
    CUresult r = kernel_arg_locked(hfunc, CUDA_ERROR_INVALID_VALUE, &k);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!name)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    *name = kernel_image(k)->name;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex,
                                           size_t *paramOffset, size_t *paramSize)
{
    FAKE_ENTER(cuKernelGetParamInfo);
    fake_lib_kernel *k = NULL;
    CUresult r = kernel_arg_locked(kernel, CUDA_ERROR_INVALID_VALUE, &k);
    struct CUctx_st *c = NULL;
    if (r == CUDA_SUCCESS)
        r = fake_current_context_locked(&c); /* the H200's rule (test/rules) */
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    const fake_image_function *fi = kernel_image(k);
    if (paramIndex >= fi->nparams)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    if (paramOffset)
        *paramOffset = fi->params[paramIndex].offset;
    if (paramSize)
        *paramSize = fi->params[paramIndex].size;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    FAKE_ENTER(cuKernelGetFunction);
    fake_lib_kernel *k = NULL;
    CUresult r = kernel_arg_locked(kernel, CUDA_ERROR_INVALID_HANDLE, &k);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!pFunc)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUctx_st *c = NULL;
    r = fake_current_context_locked(&c);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    struct CUfunc_st *f = NULL;
    r = kernel_function_in_locked(k, c, &f);
    if (r == CUDA_SUCCESS)
        *pFunc = (CUfunction)f;
    return fake_leave(r);
}

/* The driver's default: the per-block limit less the static shared memory. */
static int dynamic_shared_limit(const fake_image_function *fi, const int *a, bool optin)
{
    int limit = a[optin ? CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
                        : CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK];
    int st = fi->static_shared > INT32_MAX ? INT32_MAX : (int)fi->static_shared;
    return st > limit ? 0 : limit - st;
}

CUresult CUDAAPI fake_cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel,
                                           CUdevice dev)
{
    FAKE_ENTER(cuKernelGetAttribute);
    fake_lib_kernel *k = NULL;
    CUresult r = kernel_arg_locked(kernel, CUDA_ERROR_INVALID_HANDLE, &k);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!pi || (int)attrib < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    const fake_device *d = fake_device_at_locked(dev);
    if (!d)
        return fake_leave(CUDA_ERROR_INVALID_DEVICE);
    const int *a = d->attributes;
    const fake_image_function *fi = kernel_image(k);
    int v = 0;
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: {
        unsigned long long n = (unsigned long long)a[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
        if (fi->max_threads && fi->max_threads < n)
            n = fi->max_threads;
        v = (int)n;
        break;
    }
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
        v = fi->static_shared > INT32_MAX ? INT32_MAX : (int)fi->static_shared;
        break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
        v = 32; /* the module's default */
        break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        v = k->dynamic_shared_set[dev] ? k->max_dynamic_shared[dev]
                                       : dynamic_shared_limit(fi, a, false);
        break;
    default:
        break; /* the rest: 0, as a fresh function's */
    }
    *pi = v;
    return fake_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI fake_cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
                                           CUdevice dev)
{
    FAKE_ENTER(cuKernelSetAttribute);
    fake_lib_kernel *k = NULL;
    CUresult r = kernel_arg_locked(kernel, CUDA_ERROR_INVALID_HANDLE, &k);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    const fake_device *d = fake_device_at_locked(dev);
    if (!d)
        return fake_leave(CUDA_ERROR_INVALID_DEVICE);
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        if (val < 0 || val > dynamic_shared_limit(kernel_image(k), d->attributes, true))
            return fake_leave(CUDA_ERROR_INVALID_VALUE);
        k->max_dynamic_shared[dev] = val;
        k->dynamic_shared_set[dev] = true;
        /* and in the contexts of dev it is loaded in already */
        for (size_t i = 0; i < k->lib->nloads; i++) {
            lib_load *ld = &k->lib->loads[i];
            struct CUfunc_st *f = ld->mod->h.state == FAKE_LIVE && ld->ctx->device == dev
                                      ? fake_module_function_named(ld->mod, kernel_image(k)->name)
                                      : NULL;
            if (f)
                f->max_dynamic_shared = val;
        }
        break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        break; /* accepted, not modelled for kernels (unsure of the driver's checks) */
    default:
        return fake_leave(CUDA_ERROR_INVALID_VALUE); /* read-only */
    }
    return fake_leave(CUDA_SUCCESS);
}

/* --- variables ----------------------------------------------------------------------------- */

CUresult CUDAAPI fake_cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                         const char *name)
{
    FAKE_ENTER(cuLibraryGetGlobal);
    struct CUlib_st *l = NULL;
    CUresult r = library_code_locked(library, &l);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    /* "One of the parameters dptr or bytes (not both) can be NULL" */
    if (!name || (!dptr && !bytes))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    struct CUctx_st *c = NULL;
    r = fake_current_context_locked(&c);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    struct CUmod_st *m = NULL;
    r = load_in_locked(l, c, &m);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    for (size_t i = 0; i < m->nglobals; i++) {
        if (strcmp(m->img->globals[i].name, name) == 0) {
            if (dptr)
                *dptr = (CUdeviceptr)(uintptr_t)fake_memory_global_base(m->globals[i]);
            if (bytes)
                *bytes = m->img->globals[i].size;
            return fake_leave(CUDA_SUCCESS);
        }
    }
    return fake_leave(CUDA_ERROR_NOT_FOUND);
}

CUresult CUDAAPI fake_cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                          const char *name)
{
    FAKE_ENTER(cuLibraryGetManaged);
    struct CUlib_st *l = NULL;
    CUresult r = library_code_locked(library, &l);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    /* "One of the parameters dptr or bytes (not both) can be NULL" */
    if (!name || (!dptr && !bytes))
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    return fake_leave(CUDA_ERROR_NOT_FOUND); /* no __managed__ variables (see the top) */
}

CUresult CUDAAPI fake_cuLibraryGetUnifiedFunction(void **fptr, CUlibrary library,
                                                  const char *symbol)
{
    FAKE_ENTER(cuLibraryGetUnifiedFunction);
    struct CUlib_st *l = NULL;
    CUresult r = library_code_locked(library, &l);
    if (r != CUDA_SUCCESS)
        return fake_leave(r);
    if (!fptr || !symbol)
        return fake_leave(CUDA_ERROR_INVALID_VALUE);
    return fake_leave(CUDA_ERROR_INVALID_VALUE); /* no unified functions (see the top) */
}

/* --- the area -------------------------------------------------------------------------------- */

/* Reset before the module area (whose records the loads point at). */
static const fake_area library_area = {
    .name = "library",
    .reset_order = 39,
    .teardown_order = 19,
    .reset_locked = library_reset_locked,
};
FAKE_AREA(library_area)
