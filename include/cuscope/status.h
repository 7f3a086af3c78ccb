/* cuscope/status.h: status codes, the thread's last error, and the handler for
 * errors raised while destroying objects.
 *
 * A cus_status is an int. CUDA_SUCCESS (0) is CUS_SUCCESS. Driver CUresult codes
 * (1..999) pass through unchanged; cuscope's own failures use the disjoint
 * range from 10000 up, listed in CUS_STATUS_MAP below.
 */
#ifndef CUSCOPE_STATUS_H
#define CUSCOPE_STATUS_H

#include <cuda.h>
#include <stdbool.h>

#include "object.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What every fallible cuscope call returns: CUS_SUCCESS (0), a driver
 * CUresult, or one of cuscope's own codes (cus_status_code). */
typedef int cus_status;

/* X(NAME, value, description): the single table of cuscope's own codes. */
#define CUS_STATUS_MAP(X)                                                                       \
    X(DRIVER_NOT_FOUND, 10001,                                                                  \
      "the CUDA driver library (libcuda.so.1) could not be loaded: install the NVIDIA driver, "  \
      "or run on the fake driver")                                                              \
    X(DRIVER_SYMBOL_MISSING, 10002,                                                             \
      "the CUDA driver lacks an entry point that cuscope requires")                            \
    X(DRIVER_TOO_OLD, 10003,                                                                    \
      "the CUDA driver is older than the oldest version cuscope supports (12.0): "              \
      "update the NVIDIA driver")                                                               \
    X(NOT_SUPPORTED, 10004, "the installed CUDA driver does not provide this feature")          \
    X(INVALID_ARGUMENT, 10005, "an argument is invalid (a NULL pointer, a value out of range)") \
    X(OUT_OF_HOST_MEMORY, 10006, "a host memory allocation made by cuscope failed")             \
    X(CONTEXT_MISMATCH, 10007,                                                                  \
      "the context on top of the thread's stack is not the one cuscope expected there")         \
    X(UNBALANCED_POP, 10008, "pop with no context pushed through cuscope on this thread")       \
    X(BUSY, 10009, "the operation needs every cuscope object to be released first")            \
    X(CONTEXTS_LEFT_PUSHED, 10010,                                                              \
      "a thread exited with contexts still pushed through cuscope; cuscope popped them")        \
    X(IN_HOST_FUNCTION, 10011,                                                                  \
      "a cuscope call was made inside a host function (cuLaunchHostFunc): host functions must " \
      "not call CUDA")                                                                          \
    X(OUT_OF_RANGE, 10012,                                                                      \
      "a range lies outside its buffer, or a size computation overflows")                      \
    X(FORKED, 10013,                                                                            \
      "this process is a fork() child of one that used the CUDA driver: CUDA cannot be used in " \
      "it (no driver call was made)")

/* cuscope's codes: CUS_SUCCESS and the CUS_ERROR_<NAME> of CUS_STATUS_MAP
 * (cus_status_string() gives each one's description). */
enum cus_status_code {
    CUS_SUCCESS = 0, /* CUDA_SUCCESS */
#define CUS_STATUS_ENUM_(name, value, desc) CUS_ERROR_##name = value,
    CUS_STATUS_MAP(CUS_STATUS_ENUM_)
#undef CUS_STATUS_ENUM_
};

/* The symbolic name of a status: "CUS_SUCCESS", "CUDA_ERROR_INVALID_VALUE",
 * "CUS_ERROR_DRIVER_NOT_FOUND". Unknown codes give "CUS_UNKNOWN_STATUS".
 * Never NULL; a static string. Needs no driver. Thread-safe. */
CUS_API const char *cus_status_name(cus_status status);

/* A one-line description of a status (static string, never NULL). Needs no
 * driver. Thread-safe. */
CUS_API const char *cus_status_string(cus_status status);

/* True for the driver errors that leave a context unusable (700, 710, 714-719):
 * cuscope latches them on the context ("poisoned"). */
CUS_API bool cus_status_is_sticky(cus_status status);

/* The record of the last failure of a cuscope call on the calling thread.
 * Functions that succeed leave it alone; functions that fail overwrite it.
 * Destructors never touch it (their errors go to the destroy handler). */
typedef struct cus_error {
    cus_status status;       /* CUS_SUCCESS when no error has been recorded */
    const char *function;    /* the cuscope function that failed, or "" */
    const char *driver_call; /* the driver entry point that failed, or "" */
    const char *message;     /* readable text naming all of the above and the object */
} cus_error;

/* The calling thread's last error record. The pointer stays valid until the
 * thread's next failing cuscope call or its exit. Never NULL. */
CUS_API const cus_error *cus_last_error(void);

/* The calling thread's last error as readable text ("" if none). Same
 * lifetime as cus_last_error(). Never NULL. */
CUS_API const char *cus_last_error_message(void);

/* The calling thread's last failing status (CUS_SUCCESS if none). */
CUS_API cus_status cus_last_status(void);

/* Forgets the calling thread's last error. */
CUS_API void cus_clear_last_error(void);

/* Errors raised while an object is destroyed (a failing cuCtxDestroy, a guard
 * that finds someone else's context on top, a thread that exits with contexts
 * pushed) cannot be returned to anyone, nor can the failed closing pop of a
 * temporary switch after a call that succeeded (the call returns CUS_SUCCESS:
 * cuscope/context.h, "Temporary switches"). Each goes, exactly once, to the
 * destroy handler. The record passed is valid only during the call. The
 * default handler (fn == NULL) prints one line to stderr. The handler may be
 * called from any thread that drops a last reference; it must not call back
 * into cuscope. */
typedef void (*cus_error_handler)(const cus_error *error, void *user_data);
/* Sets the destroy handler, fn(error, user_data) (above); NULL restores the
 * default, which prints one line to stderr. Thread-safe. */
CUS_API void cus_set_destroy_error_handler(cus_error_handler fn, void *user_data);

/* The number of errors delivered to the destroy handler since the process
 * started. Thread-safe. */
CUS_API unsigned long cus_destroy_error_count(void);

#ifdef __cplusplus
}
#endif

#endif
