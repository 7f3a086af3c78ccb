/* Module images for the fake driver: a pure parser of what cuModuleLoadData
 * is given (PTX text, a cubin, a fatbin, or the runtime's fatbin wrapper)
 * into the kernels, their parameter layouts and the module's globals, for a
 * device of a given compute capability (which fatbin entry is taken, and
 * where PTX puts its parameters, depend on it).
 *
 * It touches no fake state and depends on libc and cuda.h only (and, where
 * the build found them, liblz4 and libzstd for compressed fatbin entries),
 * so that it can be tested and fuzzed on its own.
 *
 * What was checked against the real driver (H200, compute capability 9.0,
 * driver 580, nvcc 13.0), and the leniencies left:
 * - fatbins: the entry is chosen as the driver chooses (fake_image_parse),
 *   compressed entries (LZ4, Zstandard) included;
 * - cubins: EIATTR_KPARAM_INFO and, for kernels with more than 4 KiB of
 *   parameters, EIATTR_KPARAM_INFO_V2; sm_90a-style cubins are told apart
 *   by their .nv.compat;
 * - PTX: laid out for the device it is JIT-compiled for, whatever its
 *   .target; the device graph functions ptxas resolves itself are no
 *   unresolved externs (ptx.c, is_builtin_function);
 * - relocatable cubins (ET_REL: nvcc -rdc=true, also inside fatbins): the
 *   driver loads and lists every kernel, but cuModuleGetFunction fails for
 *   those whose code still holds relocations (fake_image_function.lookup);
 * - leniency: the PTX entry of an -rdc fatbin (PTX only, "--compile-only"
 *   in the entry's options) is JIT-compiled as relocatable by the driver,
 *   with the same cuModuleGetFunction failures; the fake parses it as whole
 *   PTX and finds every kernel;
 * - difference: a relocatable cubin's kernel has the static shared memory
 *   of its .nv.shared section; for one of 1104 bytes (a 1 KiB and an
 *   80-byte array) the H200 answered 80, unexplained (that kernel cannot be
 *   got by name anyway). */
#ifndef CUSCOPE_LIB_FAKE_IMAGE_H
#define CUSCOPE_LIB_FAKE_IMAGE_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>

#define FAKE_IMAGE_API __attribute__((visibility("hidden")))

typedef enum { FAKE_IMAGE_PTX, FAKE_IMAGE_CUBIN, FAKE_IMAGE_FATBIN } fake_image_format;

/* The variants of an architecture, as in CUjit_target's high bits: sm_90
 * (plain), sm_90a (arch-specific), sm_100f (family-specific). */
enum { FAKE_IMAGE_ARCH_PLAIN = 0, FAKE_IMAGE_ARCH_SPECIFIC = 1, FAKE_IMAGE_ARCH_FAMILY = 2 };

typedef struct {
    size_t offset, size, align;
} fake_image_param;

typedef struct {
    char *name;                 /* the .entry name (mangled as written) */
    size_t nparams;
    fake_image_param *params;
    size_t param_bytes;         /* end of the last param (0 for none) */
    unsigned max_threads;       /* .maxntid product, or 0 when not given */
    unsigned reqntid[3];        /* .reqntid, zeros when not given */
    size_t static_shared;       /* sum of .shared declarations in the body (aligned) */
    /* What cuModuleGetFunction answers for it: CUDA_SUCCESS, except in a
     * relocatable cubin (fake_image.relocatable), where a kernel whose code
     * still holds relocations is CUDA_ERROR_INVALID_IMAGE, or
     * CUDA_ERROR_NOT_FOUND where one is against an undefined symbol (an
     * extern __shared__ array); cuModuleGetFunctionCount and
     * cuModuleEnumerateFunctions list it all the same. */
    CUresult lookup;
} fake_image_function;

typedef struct {
    char *name;
    size_t size, align;
    bool constant;              /* .const (else .global) */
    unsigned char *init;        /* size bytes: the initializer, zero-filled where absent */
} fake_image_global;

typedef struct {
    fake_image_format format;
    /* Where the code comes from: format, or for a fatbin the format of the
     * entry taken (FAKE_IMAGE_PTX: JIT-compiled, or FAKE_IMAGE_CUBIN). */
    fake_image_format code;
    bool relocatable;           /* the code is an ET_REL cubin (nvcc -rdc=true) */
    char target[32];            /* e.g. "sm_90", "sm_90a" (PTX .target, or the cubin's/fatbin's arch) */
    unsigned ptx_version_major, ptx_version_minor; /* PTX only */
    size_t nfunctions;
    fake_image_function *functions;
    size_t nglobals;
    fake_image_global *globals;
} fake_image;

/* The most bytes of globals one image may declare; more is
 * CUDA_ERROR_OUT_OF_MEMORY (every global gets its init buffer). */
#define FAKE_IMAGE_MAX_GLOBAL_BYTES ((size_t)1 << 30)

/* The most bytes a compressed fatbin entry may expand to (its header says
 * how many); more is CUDA_ERROR_OUT_OF_MEMORY. The input is untrusted: the
 * output buffer is allocated before decompressing. */
#define FAKE_IMAGE_MAX_ENTRY_BYTES ((size_t)1 << 28)

/* A compute capability as the parser takes it: major * 10 + minor (90 for
 * 9.0, 103 for 10.3). */
#define FAKE_IMAGE_CC(major, minor) ((unsigned)(major) * 10u + (unsigned)(minor))

/* Whether SASS for sm_<sm> of that variant runs on a device of compute
 * capability device_cc: the same major version and a minor at or below the
 * device's (sm_86 runs on 8.6 and 8.9, not on 9.0); the arch-specific
 * variant only on exactly its own (sm_90a on 9.0); the family-specific one
 * on the family, the same major (sm_100f on 10.0 and 10.3, sm_103f on 10.3
 * only), which is the plain rule. */
FAKE_IMAGE_API bool fake_image_sass_runs_on(unsigned sm, unsigned variant, unsigned device_cc);
/* Whether PTX for compute_<arch> of that variant can be JIT-compiled for
 * that device: plain PTX for any device at or above it (compute_80 on 9.0
 * and 10.0), arch-specific PTX only for its own, family-specific PTX for
 * its family at or above it. */
FAKE_IMAGE_API bool fake_image_ptx_runs_on(unsigned arch, unsigned variant, unsigned device_cc);

/* Parses a module image as cuModuleLoadData sees it on a device of compute
 * capability device_cc (FAKE_IMAGE_CC): `image` points at PTX text
 * (NUL-terminated), a cubin (ELF), or a fatbin (magic 0xBA55ED50, or the
 * 0x466243b1 wrapper struct whose third member points at the fatbin). `size`
 * is the number of readable bytes when known (tests, fuzzing), or SIZE_MAX;
 * with a known size nothing past it is read, and a wrapper (whose pointer
 * cannot be checked) is CUDA_ERROR_INVALID_IMAGE.
 *
 * Of a fatbin the entry the driver loads is taken: the SASS (ELF) that runs
 * on the device (fake_image_sass_runs_on) with the highest arch, the
 * arch-specific variant before the family-specific one before the plain one
 * of the same arch; else the PTX that can be JIT-compiled for it
 * (fake_image_ptx_runs_on) with the highest arch, in the same order; else
 * CUDA_ERROR_NO_BINARY_FOR_GPU. Of two entries of the same arch and
 * variant, the first SASS and the last PTX are taken (as the H200 did). A
 * compressed entry is decompressed first (LZ4 or Zstandard); one that does
 * not expand as its header says is CUDA_ERROR_UNKNOWN ("error   :
 * Uncompress failed", as the driver), and where the build has no library
 * for it, CUDA_ERROR_NO_BINARY_FOR_GPU with a message saying so. A PTX
 * entry that is not text is CUDA_ERROR_INVALID_PTX, as ptxas reports it. A
 * cubin is parsed whatever its arch (whether it runs is the caller's check,
 * img->target).
 *
 * Returns CUDA_SUCCESS and *out (free with fake_image_free), or what the real
 * driver gives, leaving *out untouched: CUDA_ERROR_INVALID_VALUE (NULL image
 * or out), CUDA_ERROR_INVALID_IMAGE (empty, unknown magic, binary bytes,
 * truncated or inconsistent ELF/fatbin), CUDA_ERROR_INVALID_PTX (a PTX syntax
 * error), CUDA_ERROR_NO_BINARY_FOR_GPU (a fatbin without code for the
 * device, or whose chosen entry the build cannot decompress),
 * CUDA_ERROR_UNKNOWN (a compressed entry that fails to decompress),
 * CUDA_ERROR_OUT_OF_MEMORY.
 *
 * Both logs (either may be NULL) are always NUL-terminated, truncated to
 * their size. A PTX error writes ptxas' message into error_log ("ptxas
 * application ptx input, line 12; error   : Not a name of any known
 * instruction: 'frobnicate'"); a PTX success writes ptxas' -v style info
 * ("ptxas info    : Compiling entry function 'add' for 'sm_90'") to info_log.
 *
 * Parameter offsets of PTX follow ptxas, compiling for the device: each
 * parameter is aligned to the larger of its .align and its element size, and
 * the alignment applies to its address in the constant bank, whose parameter
 * area starts at 0x160 (sm_75..89), 0x210 (sm_9x) or 0x380 (sm_100 and
 * later); so alignments above 16 depend on the device, not on the .target
 * (the H200 puts a 64-byte aligned parameter of compute_80 PTX at 48, as
 * for sm_90). A device_cc of 0 lays PTX out for its .target (and no fatbin
 * entry runs on it). */
/* A device_cc for fake_image_parse where only names and parameter counts
 * matter (cuscope's module loads): of a fatbin the entry with the highest
 * arch is taken, whatever the device, and PTX is laid out for its .target. */
#define FAKE_IMAGE_ANY_DEVICE 0xffffffffu

FAKE_IMAGE_API CUresult fake_image_parse(const void *image, size_t size, unsigned device_cc,
                                         fake_image **out,
                                         char *error_log, size_t error_log_size,
                                         char *info_log, size_t info_log_size);
FAKE_IMAGE_API void fake_image_free(fake_image *img);
/* NULL when img or name is NULL or nothing has that name. */
FAKE_IMAGE_API const fake_image_function *fake_image_find_function(const fake_image *img,
                                                                   const char *name);
FAKE_IMAGE_API const fake_image_global *fake_image_find_global(const fake_image *img,
                                                               const char *name);

#endif
