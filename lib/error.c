/* The thread-local last-error record and the destroy-error channel; and the
 * refusal of a call that must not run here (a fork() child, a host function),
 * with the flag fork.c's child handler sets: the bottom layer, so that every
 * file, the driver table's included, may refuse without calling up. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

typedef struct error_record {
    cus_error pub;
    char message[CUS_ERROR_MESSAGE_MAX_];
} error_record;

static _Thread_local error_record last_error = {
    .pub = {.status = CUS_SUCCESS, .function = "", .driver_call = "", .message = ""},
};

_Thread_local const char *cus_api_function_ __attribute__((tls_model("initial-exec")));

atomic_bool cus_forked_;

static pthread_mutex_t handler_lock = PTHREAD_MUTEX_INITIALIZER;
static cus_error_handler handler_fn;
static void *handler_data;
static atomic_ulong destroy_errors;

CUS_PRINTF(5, 0) static void format_record(error_record *rec, cus_status status, const char *function,
                          const char *driver_call, const char *fmt, va_list ap)
{
    char detail[CUS_ERROR_MESSAGE_MAX_ - 128]; /* room for the prefix */
    vsnprintf(detail, sizeof detail, fmt, ap);
    rec->pub.status = status;
    rec->pub.function = function ? function : "";
    rec->pub.driver_call = driver_call ? driver_call : "";
    if (driver_call)
        snprintf(rec->message, sizeof rec->message, "%s: %s failed with %s (%s): %s", function,
                 driver_call, cus_status_name(status), cus_status_string(status), detail);
    else
        snprintf(rec->message, sizeof rec->message, "%s: %s: %s", function,
                 cus_status_name(status), detail);
    rec->pub.message = rec->message;
}

cus_status cus_fail_(cus_status status, const char *function, const char *driver_call,
                     const char *fmt, ...)
{
    if (cus_destroy_depth_)
        return status; /* inside a destruction: see cus_run_destroy_ */
    function = cus_api_name_(function);
    va_list ap;
    va_start(ap, fmt);
    format_record(&last_error, status, function, driver_call, fmt, ap);
    va_end(ap);
    return status;
}

void cus_destroy_error_(cus_status status, const char *function, const char *driver_call,
                        const char *fmt, ...)
{
    error_record rec;
    va_list ap;
    va_start(ap, fmt);
    format_record(&rec, status, function, driver_call, fmt, ap);
    va_end(ap);
    atomic_fetch_add_explicit(&destroy_errors, 1, memory_order_relaxed);

    pthread_mutex_lock(&handler_lock);
    cus_error_handler fn = handler_fn;
    void *data = handler_data;
    pthread_mutex_unlock(&handler_lock);
    if (fn) {
        /* The handler is user code and may call cuscope: its own calls name
         * themselves, not the call that raised this report. */
        const char *api = cus_api_function_;
        cus_api_function_ = NULL;
        fn(&rec.pub, data);
        cus_api_function_ = api;
    }
    else
        fprintf(stderr, "cuscope: error while releasing: %s\n", rec.message);
}

void cus_error_save_(cus_error_save *s)
{
    s->status = last_error.pub.status;
    s->function = last_error.pub.function;
    s->driver_call = last_error.pub.driver_call;
    memcpy(s->message, last_error.message, sizeof s->message);
}

void cus_error_restore_(const cus_error_save *s)
{
    last_error.pub.status = s->status;
    last_error.pub.function = s->function;
    last_error.pub.driver_call = s->driver_call;
    memcpy(last_error.message, s->message, sizeof last_error.message);
    last_error.pub.message = last_error.message;
}

CUS_API const cus_error *cus_last_error(void)
{
    last_error.pub.message = last_error.message;
    return &last_error.pub;
}

CUS_API const char *cus_last_error_message(void)
{
    return last_error.message;
}

CUS_API cus_status cus_last_status(void)
{
    return last_error.pub.status;
}

CUS_API void cus_clear_last_error(void)
{
    last_error.pub.status = CUS_SUCCESS;
    last_error.pub.function = "";
    last_error.pub.driver_call = "";
    last_error.message[0] = '\0';
}

CUS_API void cus_set_destroy_error_handler(cus_error_handler fn, void *user_data)
{
    pthread_mutex_lock(&handler_lock);
    handler_fn = fn;
    handler_data = user_data;
    pthread_mutex_unlock(&handler_lock);
}

CUS_API unsigned long cus_destroy_error_count(void)
{
    return atomic_load_explicit(&destroy_errors, memory_order_relaxed);
}

/* fork.c's child hook: a parent thread may have held the lock at fork time. */
void cus_error_atfork_child_(bool forked)
{
    (void)forked;
    pthread_mutex_init(&handler_lock, NULL);
}

__attribute__((noinline, cold)) cus_status cus_refuse_call_(const char *function)
{
    if (cus_is_forked_())
        return cus_fail_(CUS_ERROR_FORKED, function, NULL,
                         "this process is a fork() child of a process that used the CUDA "
                         "driver, and CUDA does not survive fork(): no driver call was made. "
                         "Release the objects inherited from the parent (that frees host memory "
                         "only), and use CUDA in the parent, or in a process started with exec()");
    return cus_fail_(CUS_ERROR_IN_HOST_FUNCTION, function, NULL,
                     "host functions run on a driver thread and must not call CUDA or cuscope; "
                     "no driver call was made");
}
