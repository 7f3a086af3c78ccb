/* The table of every_call.h for program.h. The compiles need NVRTC (the
 * toolkit's libnvrtc; CI's machine has it); they give an explicit
 * architecture, so that only cus_program_load and cus_program_get_function
 * reach the driver. The same inputs each time: after the first compile the
 * cache answers, so the modes that run the table many times stay fast, and
 * EC_NO_DRIVER holds for a compile. */
#include "every_call.h"

static const char ec_source[] = "extern \"C\" __global__ void ec_k(float *x) { x[0] = 1.0f; }\n";

static cus_status compile(cus_program **out)
{
    cus_autoptr(cus_program) p = NULL;
    CUS_TRY(cus_program_create(ec_source, "every-call.cu", NULL, 0, &p));
    const char *names[] = {"ec_k"};
    cus_program_options o = {.arch = 90, .name_expressions = names, .nname_expressions = 1};
    CUS_TRY(cus_program_compile(p, &o));
    *out = cus_steal(&p);
    return CUS_SUCCESS;
}

static cus_status c_program_create(world *w)
{
    (void)w;
    cus_autoptr(cus_program) p = NULL;
    EC_RETURN_OUT(cus_program_create(ec_source, "x.cu", NULL, 0, &p), p != NULL);
}

static cus_status c_program_compile(world *w)
{
    (void)w;
    cus_autoptr(cus_program) p = NULL;
    EC_RETURN_OUT(compile(&p), cus_program_log(p) != NULL);
}

static cus_status c_program_code(world *w)
{
    (void)w;
    cus_autoptr(cus_program) p = NULL;
    CUS_TRY(compile(&p));
    const void *ptx = NULL;
    size_t n = 0;
    EC_RETURN_OUT(cus_program_code(p, CUS_PROGRAM_PTX, &ptx, &n), ptx && n > 1);
}

static cus_status c_program_lowered_name(world *w)
{
    (void)w;
    cus_autoptr(cus_program) p = NULL;
    CUS_TRY(compile(&p));
    const char *l = NULL;
    EC_RETURN_OUT(cus_program_lowered_name(p, "ec_k", &l), l && l[0] == 'e');
}

static cus_status c_program_load(world *w)
{
    cus_autoptr(cus_program) p = NULL;
    CUS_TRY(compile(&p));
    cus_autoptr(cus_module) m = NULL;
    EC_RETURN_OUT(cus_program_load(p, w->ctx, NULL, &m), m != NULL);
}

static cus_status c_program_load_library(world *w)
{
    (void)w;
    cus_autoptr(cus_program) p = NULL;
    CUS_TRY(compile(&p));
    cus_autoptr(cus_library) lib = NULL;
    EC_RETURN_OUT(cus_program_load_library(p, NULL, &lib), lib != NULL);
}

static cus_status c_program_get_function(world *w)
{
    cus_autoptr(cus_program) p = NULL;
    CUS_TRY(compile(&p));
    cus_autoptr(cus_module) m = NULL;
    CUS_TRY(cus_program_load(p, w->ctx, NULL, &m));
    cus_autoptr(cus_function) f = NULL;
    EC_RETURN_OUT(cus_program_get_function(p, m, "ec_k", &f), f != NULL);
}

static cus_status c_nvrtc_version(world *w)
{
    (void)w;
    int major = 0, minor = 0;
    EC_RETURN_OUT(cus_nvrtc_version(&major, &minor), major >= 12);
}

#define NO_DRIVER (EC_NO_DRIVER | EC_NOT_POISONED)
#define NO_DRIVER_NOTE "NVRTC only: no driver call, no context"

const every_call every_calls_program[] = {
    {"cus_program_create", c_program_create, NO_DRIVER, NO_DRIVER_NOTE, NULL},
    {"cus_program_compile", c_program_compile, NO_DRIVER, NO_DRIVER_NOTE, NULL},
    {"cus_program_code", c_program_code, NO_DRIVER, NO_DRIVER_NOTE, NULL},
    {"cus_program_lowered_name", c_program_lowered_name, NO_DRIVER, NO_DRIVER_NOTE, NULL},
    {"cus_program_load", c_program_load, 0, NULL, NULL},
    {"cus_program_load_library", c_program_load_library, EC_NOT_POISONED | EC_NO_OWN_SWITCH,
     "a library belongs to no context: the call neither refuses a poisoned context nor switches",
     NULL},
    {"cus_program_get_function", c_program_get_function, EC_NO_OWN_SWITCH,
     "EC_NO_OWN_SWITCH: cus_module_get_function's lookup takes no context (lib/module.c); the "
     "pops reported are the entry's load's and unload's",
     NULL},
    {"cus_nvrtc_version", c_nvrtc_version, NO_DRIVER, NO_DRIVER_NOTE, NULL},
    {NULL, NULL, 0, NULL, NULL},
};
