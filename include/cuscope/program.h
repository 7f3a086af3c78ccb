/* cuscope/program.h: compiling CUDA C++ at run time (NVRTC), with a compile
 * cache.
 *
 * A cus_program is a reference-counted CUDA C++ source with a name and the
 * headers it may `#include`, compiled once by cus_program_compile into PTX, a
 * cubin or LTO-IR, which cus_program_load loads into a module. It holds no
 * context and makes no driver call but to find the default architecture and
 * to load.
 *
 * NVRTC is loaded at run time, at the first compile: libnvrtc.so.13, else
 * libnvrtc.so.12 (on the loader's path, else in the lib64 directory of
 * $CUDA_HOME, $CUDA_PATH or /usr/local/cuda), or the file that the environment variable
 * CUSCOPE_LIBNVRTC names (read with secure_getenv: ignored in setuid and
 * setgid programs), or the path cus_nvrtc_set_library sets. A program linked
 * against cuscope starts without it; a compile then fails with
 * CUS_ERROR_NOT_SUPPORTED and a message naming what was looked for. NVRTC
 * runs on the CPU: on a machine with the toolkit and no GPU, what it compiles
 * loads on the fake driver (cuscope/fake.h), whose device is compute
 * capability 9.0.
 *
 * NVRTC's results become cus_status codes, the NVRTC result's name in the
 * message and the NVRTC function in cus_last_error()->driver_call:
 *   NVRTC_ERROR_COMPILATION                 CUDA_ERROR_INVALID_SOURCE (the
 *                                           compile log is in the message)
 *   NVRTC_ERROR_INVALID_OPTION, _INPUT      CUS_ERROR_INVALID_ARGUMENT
 *   NVRTC_ERROR_OUT_OF_MEMORY               CUS_ERROR_OUT_OF_HOST_MEMORY
 *   NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID   CUDA_ERROR_NOT_FOUND
 *   NVRTC_ERROR_BUILTIN_OPERATION_FAILURE   CUS_ERROR_NOT_SUPPORTED
 *                                           (libnvrtc-builtins is missing)
 *   any other                               CUDA_ERROR_UNKNOWN
 *
 * The compile cache is on by default: a compile of the same source, name,
 * headers, options (after the defaults are filled in: the architecture
 * included) and name expressions as an earlier successful one in the process
 * returns that one's outputs, log and lowered names without calling NVRTC.
 * The key is a 128-bit FNV-1a hash of all of them (not a cryptographic hash:
 * inputs crafted to collide could share an entry; the inputs are the
 * program's own). It holds at most CUS_PROGRAM_CACHE_MAX_ENTRIES outputs and
 * CUS_PROGRAM_CACHE_MAX_BYTES bytes of them, dropping the least recently used
 * first; failed compiles are not cached. Threads that compile the same inputs
 * at once: one compiles, the others wait for its output.
 *
 * Every function is thread-safe unless its comment says otherwise, returns a
 * cus_status (but the accessors), records the thread's last error on failure
 * and leaves out parameters untouched then. None may be called from a host
 * function (CUS_ERROR_IN_HOST_FUNCTION).
 */
#ifndef CUSCOPE_PROGRAM_H
#define CUSCOPE_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>

#include "context.h"
#include "function.h"
#include "library.h"
#include "module.h"
#include "object.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A CUDA C++ program compiled at run time by NVRTC: reference-counted,
 * its source, headers, options and outputs kept until the last unref. */
typedef struct cus_program cus_program;

/* A header a program's source may `#include` by `name`, with its text. */
typedef struct cus_program_header {
    const char *name;   /* as the source writes it in `#include "name"` */
    const char *source; /* its text, NUL-terminated */
} cus_program_header;

/* What a compile makes. */
typedef enum cus_program_target {
    CUS_PROGRAM_PTX = 0, /* PTX for compute_XX (-arch=compute_XX): JIT-compiled at load */
    CUS_PROGRAM_CUBIN,   /* a cubin for sm_XX (-arch=sm_XX), and its PTX */
    CUS_PROGRAM_LTOIR,   /* LTO-IR (-dlto -arch=compute_XX), for a JIT link */
} cus_program_target;

/* The options of a compile. Zero-initialise for the defaults: PTX for the
 *  architecture of device 0, NVRTC's C++ dialect, no debug information. */
typedef struct cus_program_options {
    cus_program_target target; /* PTX (the default), a cubin, or LTO-IR */
    /* The architecture as major * 10 + minor (90 for sm_90); 0: the
     *  compute capability of ctx's device, or of device 0 when ctx is NULL
     *  (which needs the driver: cus_init). */
    int arch;
    cus_context *ctx;  /* borrowed for the call; only read for the architecture */
    const char *std;   /* "c++17" gives -std=c++17; NULL: NVRTC's default */
    bool line_info;    /* -lineinfo: source lines for profilers */
    bool debug;        /* -G: device debug information (no optimisation) */
    const char *const *defines; /* "NAME" or "NAME=value", each given as -D */
    size_t ndefines; /* the number of defines */
    const char *const *include_paths; /* directories, each given as -I */
    size_t ninclude_paths; /* the number of include_paths */
    /* Further NVRTC options, passed as they are, after the ones above. One
     *  that sets the architecture (-arch..., --gpu-architecture...) replaces
     *  cuscope's own -arch. */
    const char *const *options;
    size_t noptions; /* the number of options */
    /* Name expressions ("my_kernel<float>", "&my_global") whose lowered
     *  (mangled) names cus_program_lowered_name returns after the compile. */
    const char *const *name_expressions;
    size_t nname_expressions; /* the number of name_expressions */
    bool no_cache; /* compile even if the cache holds the output, and do not cache it */
} cus_program_options;

/* Makes a program of source (NUL-terminated CUDA C++), called name in
 *  NVRTC's messages (NULL: "program.cu"), with nheaders headers (headers may
 *  be NULL when nheaders is 0; each needs a name and a source). Everything is
 *  copied. No NVRTC call: libnvrtc need not be there yet. *out receives a new
 *  reference. Errors: CUS_ERROR_INVALID_ARGUMENT (a NULL source or out, a
 *  header without name or source), CUS_ERROR_OUT_OF_HOST_MEMORY. */
CUS_API cus_status cus_program_create(const char *source, const char *name,
                                      const cus_program_header *headers, size_t nheaders,
                                      cus_program **out);

/* Adds a reference to program (NULL is fine) and returns it. Thread-safe. */
CUS_API cus_program *cus_program_ref(cus_program *program);
/* Drops a reference (NULL is fine); the last one frees the program, its
 *  outputs and log. Always returns NULL. Thread-safe. */
CUS_API cus_program *cus_program_unref(cus_program *program);
CUS_DEFINE_AUTOPTR(cus_program, cus_program_unref)

/* Compiles the program with options (NULL: the defaults), from the cache
 *  when it holds the same compile (see the top). A successful compile is
 *  final: a second one fails with CUS_ERROR_INVALID_ARGUMENT; a failed one
 *  may be retried, with other options too. Errors: CUS_ERROR_INVALID_ARGUMENT
 *  (a NULL program, a NULL entry in an options array, an architecture below
 *  50, or an option NVRTC refuses), CUS_ERROR_NOT_SUPPORTED (NVRTC cannot be
 *  loaded; the message names the library), CUDA_ERROR_INVALID_SOURCE (the
 *  source does not compile: the log is in the message, and in
 *  cus_program_log), CUDA_ERROR_NOT_FOUND (a name expression that names
 *  nothing), the driver's errors when the architecture is asked of a device,
 *  and the other NVRTC results as mapped above. Thread-safe: concurrent
 *  compiles of one program are serialized. */
CUS_API cus_status cus_program_compile(cus_program *program, const cus_program_options *options);

/* The compile log of the last compile ("" before one, or when NVRTC wrote
 *  none; warnings may be there after a success). Valid as long as the
 *  program after a successful compile; after a failed one, until the next
 *  cus_program_compile of the program, which must not run meanwhile. */
CUS_API const char *cus_program_log(const cus_program *program);

/* The name given at creation. Valid as long as the program. */
CUS_API const char *cus_program_name(const cus_program *program);

/* Whether the successful compile came from the cache (false before one). */
CUS_API bool cus_program_from_cache(const cus_program *program);

/* The compiled output of a kind: *data (valid as long as the program) and
 *  *size in bytes (PTX's size counts its terminating NUL). PTX is there for
 *  the PTX and CUBIN targets, a cubin for CUBIN (none when the caller's
 *  options set a virtual -arch=compute_XX, for which NVRTC makes no cubin:
 *  cus_program_load then loads the PTX), LTO-IR for LTOIR. Errors:
 *  CUS_ERROR_INVALID_ARGUMENT (a NULL argument, no successful compile yet),
 *  CUDA_ERROR_NOT_FOUND (that output was not made). */
CUS_API cus_status cus_program_code(const cus_program *program, cus_program_target kind,
                                    const void **data, size_t *size);

/* The lowered (mangled) name of a name expression given to the compile:
 *  "my_kernel<float>" gives "_Z9my_kernelIfEvPT_". *lowered is valid as long
 *  as the program. Errors: CUS_ERROR_INVALID_ARGUMENT (NULL, no successful
 *  compile yet), CUDA_ERROR_NOT_FOUND (expression not among the compile's
 *  name_expressions). No NVRTC call. */
CUS_API cus_status cus_program_lowered_name(const cus_program *program, const char *expression,
                                            const char **lowered);

/* Loads the compiled output into ctx (cus_module_load_data): the cubin when
 *  there is one, else the PTX; jit as there (may be NULL). *out receives a
 *  new reference to the module, which does not hold the program. Errors:
 *  CUS_ERROR_INVALID_ARGUMENT (NULL, no successful compile yet, or LTO-IR
 *  only, which must be linked first), and cus_module_load_data's. */
CUS_API cus_status cus_program_load(const cus_program *program, cus_context *ctx,
                                    const cus_jit_options *jit, cus_module **out);

/** Loads the compiled output as a library (cus_library_load_data, no
 *  context needed): the cubin when there is one, else the PTX; jit as there
 *  (may be NULL), no library options. *out receives a new reference to the
 *  library, which does not hold the program; look kernels up with
 *  cus_library_get_kernel (by the lowered name for a name expression: see
 *  cus_program_lowered_name). Errors: CUS_ERROR_INVALID_ARGUMENT (NULL, no
 *  successful compile yet, or LTO-IR only, which must be linked first), and
 *  cus_library_load_data's (CUS_ERROR_NOT_SUPPORTED before a 12.0 driver).
 *  Thread-safe. */
CUS_API cus_status cus_program_load_library(const cus_program *program,
                                            const cus_jit_options *jit, cus_library **out);

/* The kernel of module named by `name`: a name expression given to the
 *  program's compile (its lowered name is looked up), else the name as it
 *  is (an extern "C" kernel). *out receives a new reference
 *  (cus_module_get_function). Errors: CUS_ERROR_INVALID_ARGUMENT (NULL, no
 *  successful compile yet), and cus_module_get_function's
 *  (CUDA_ERROR_NOT_FOUND for no such kernel). */
CUS_API cus_status cus_program_get_function(const cus_program *program, cus_module *module,
                                            const char *name, cus_function **out);

/* --- the compile cache ----------------------------------------------------------- */

/* The cache's bounds: entries, and bytes of output (PTX, cubin, LTO-IR, log
 *  and names) over all entries. An output larger than the byte bound is not
 *  cached. */
#define CUS_PROGRAM_CACHE_MAX_ENTRIES 256
/* The cache's bound on bytes of output, over all entries (64 MiB). */
#define CUS_PROGRAM_CACHE_MAX_BYTES ((size_t)64 << 20)

/* What the cache holds and has done since the process started or the last
 *  cus_program_cache_clear. */
typedef struct cus_program_cache_stats {
    size_t entries;      /* outputs held */
    size_t bytes;        /* their bytes, against CUS_PROGRAM_CACHE_MAX_BYTES */
    unsigned long hits;  /* compiles answered from the cache */
    unsigned long misses; /* compiles that looked and compiled */
} cus_program_cache_stats;

/* Fills *stats (NULL: nothing). Thread-safe. */
CUS_API void cus_program_cache_get_stats(cus_program_cache_stats *stats);

/* Drops every output the cache holds (programs that compiled keep theirs)
 *  and zeroes its counters. Thread-safe; compiles under way are not
 *  affected. */
CUS_API void cus_program_cache_clear(void);

/* Turns the cache on (the default) or off for later compiles: off, every
 *  compile calls NVRTC and nothing is added (what it holds stays until
 *  cleared). Thread-safe. */
CUS_API void cus_program_cache_set_enabled(bool enabled);

/* --- the NVRTC library ----------------------------------------------------------- */

/* Sets the file to dlopen() as NVRTC at the next compile (NULL: back to
 *  CUSCOPE_LIBNVRTC or the sonames); the path is copied. Takes effect at the
 *  next load: a library already loaded is left loaded (never unloaded) and
 *  no longer used. Errors: CUS_ERROR_OUT_OF_HOST_MEMORY. Must not race with
 *  compiles (as cus_driver_set_library with driver calls). */
CUS_API cus_status cus_nvrtc_set_library(const char *path);

/* Loads NVRTC when it is not yet, and gives its version (nvrtcVersion).
 *  Errors: CUS_ERROR_INVALID_ARGUMENT (NULL), CUS_ERROR_NOT_SUPPORTED
 *  (NVRTC cannot be loaded: what was tried is in the message). Tests use it
 *  to skip where there is no NVRTC. Thread-safe. */
CUS_API cus_status cus_nvrtc_version(int *major, int *minor);

/* The NVRTC library loaded (the soname or path dlopen()ed), or "" when none
 *  is. Valid until the next load. Thread-safe. */
CUS_API const char *cus_nvrtc_library(void);

/* For tests of failure paths: the nth call from now (1: the next) of the
 *  NVRTC function named call ("nvrtcCompileProgram", any that cuscope
 *  calls) fails once with result (an nvrtcResult other than NVRTC_SUCCESS),
 *  without calling NVRTC. call NULL disarms and zeroes the count below.
 *  Errors: CUS_ERROR_INVALID_ARGUMENT (a function cuscope does not call, nth
 *  0, result NVRTC_SUCCESS). Thread-safe. */
CUS_API cus_status cus_debug_nvrtc_fail(const char *call, unsigned long nth, int result);
/* How many NVRTC calls cus_debug_nvrtc_fail failed since it was last
 *  disarmed. Thread-safe. */
CUS_API unsigned long cus_debug_nvrtc_faults(void);

#ifdef __cplusplus
}
#endif

#endif
