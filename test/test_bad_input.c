/* Bad input, systematically (docs/bad-input.md is the table this backs).
 *
 * test_null_everywhere: every public function of include/cuscope/ headers (all
 * but fake.h), called with every pointer parameter NULL: the table below was
 * generated from the headers' prototypes. A function that returns a status
 * must return CUS_ERROR_INVALID_ARGUMENT (or its documented NULL meaning),
 * record it as the thread's last error and make no driver call; ref, unref
 * and the accessors are NULL-safe and give NULL / 0; none may crash.
 *
 * The other tests cover the rows that no earlier test file pinned: zero
 * sizes of copies and fills, context calls inside a host function, and a
 * stream waiting on an event of another context.
 *
 * Known library bugs are tests that skip unless CUS_TEST_KNOWN_BUGS=1. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/check.h"
#include "harness/env.h"

static cus_device dev0_ = {0};
static const cus_dim3 one3_ = {1, 1, 1};

static bool known_bugs_enabled(void)
{
    const char *v = getenv("CUS_TEST_KNOWN_BUGS");
    return v && strcmp(v, "1") == 0;
}

enum {
    E_STATUS = 1,    /* returns a status, recorded as the last error on failure */
    E_DRIVER = 2,    /* a driver call is the documented NULL meaning */
    E_KNOWN_BUG = 4, /* crashes today: run only with CUS_TEST_KNOWN_BUGS=1 */
    E_SKIP = 8,      /* not called (see the note) */
};

typedef struct null_entry {
    const char *header, *name;
    int (*call)(void);
    int want;
    unsigned flags;
    const char *note;
} null_entry;

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnonnull"
#endif
/* Generated from include/cuscope/ headers (all but fake.h): one entry per public
 * function, every pointer parameter NULL. */
static int nc_cus_context_create(void)
{
    return cus_context_create(dev0_, 1, NULL);
}
static int nc_cus_context_retain_primary(void)
{
    return cus_context_retain_primary(dev0_, NULL);
}
static int nc_cus_context_wrap(void)
{
    return cus_context_wrap(NULL, NULL);
}
static int nc_cus_context_ref(void)
{
    return cus_context_ref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_context_unref(void)
{
    return cus_context_unref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_context_handle(void)
{
    return cus_context_handle(NULL) == 0 ? 0 : -1;
}
static int nc_cus_context_device(void)
{
    return cus_context_device(NULL).handle == 0 ? 0 : -1;
}
static int nc_cus_context_get_kind(void)
{
    return cus_context_get_kind(NULL) == CUS_CONTEXT_FOREIGN ? 0 : -1;
}
static int nc_cus_context_poisoned(void)
{
    return cus_context_poisoned(NULL) == CUS_SUCCESS ? 0 : -1;
}
static int nc_cus_context_synchronize(void)
{
    return cus_context_synchronize(NULL);
}
static int nc_cus_context_api_version(void)
{
    return cus_context_api_version(NULL, NULL);
}
static int nc_cus_context_flags(void)
{
    return cus_context_flags(NULL, NULL);
}
static int nc_cus_context_get_limit(void)
{
    return cus_context_get_limit(NULL, 0, NULL);
}
static int nc_cus_context_set_limit(void)
{
    return cus_context_set_limit(NULL, 0, 1);
}
static int nc_cus_context_get_cache_config(void)
{
    return cus_context_get_cache_config(NULL, NULL);
}
static int nc_cus_context_set_cache_config(void)
{
    return cus_context_set_cache_config(NULL, 0);
}
static int nc_cus_context_get_shared_mem_config(void)
{
    return cus_context_get_shared_mem_config(NULL, NULL);
}
static int nc_cus_context_set_shared_mem_config(void)
{
    return cus_context_set_shared_mem_config(NULL, 0);
}
static int nc_cus_context_stream_priority_range(void)
{
    return cus_context_stream_priority_range(NULL, NULL, NULL);
}
static int nc_cus_context_push(void)
{
    return cus_context_push(NULL);
}
static int nc_cus_context_pop(void)
{
    return cus_context_pop(NULL);
}
static int nc_cus_context_set_current(void)
{
    return cus_context_set_current(NULL);
}
static int nc_cus_context_current(void)
{
    return cus_context_current() == 0 ? 0 : -1;
}
static int nc_cus_context_stack_depth(void)
{
    return cus_context_stack_depth() == 0 ? 0 : -1;
}
static int nc_cus_context_guard_enter(void)
{
    return cus_context_guard_enter(NULL).status;
}
static int nc_cus_context_guard_exit(void)
{
    cus_context_guard_exit(NULL);
    return 0;
}
static int nc_cus_device_count(void)
{
    return cus_device_count(NULL);
}
static int nc_cus_device_get(void)
{
    return cus_device_get(1, NULL);
}
static int nc_cus_device_name(void)
{
    return cus_device_name(dev0_, NULL, 1);
}
static int nc_cus_device_uuid(void)
{
    return cus_device_uuid(dev0_, NULL);
}
static int nc_cus_device_uuid_string(void)
{
    return cus_device_uuid_string(dev0_, NULL);
}
static int nc_cus_device_total_memory(void)
{
    return cus_device_total_memory(dev0_, NULL);
}
static int nc_cus_device_attribute(void)
{
    return cus_device_attribute(dev0_, 0, NULL);
}
static int nc_cus_device_compute_capability(void)
{
    return cus_device_compute_capability(dev0_, NULL, NULL);
}
static int nc_cus_init(void)
{
    return cus_init();
}
static int nc_cus_driver_version(void)
{
    return cus_driver_version(NULL);
}
/* cus_driver_install: documented: NULL goes back to libcuda (test_driver.c covers it) */
/* cus_driver_set_library: documented: NULL is the default path (test_driver.c covers it) */
static int nc_cus_context_set_name(void)
{
    return cus_context_set_name(NULL, NULL);
}
static int nc_cus_stream_set_name(void)
{
    return cus_stream_set_name(NULL, NULL);
}
static int nc_cus_event_set_name(void)
{
    return cus_event_set_name(NULL, NULL);
}
static int nc_cus_driver_proc(void)
{
    return cus_driver_proc(NULL, 3020, NULL);
}
static int nc_cus_driver_has(void)
{
    return cus_driver_has(NULL) == false ? 0 : -1;
}
static int nc_cus_event_create(void)
{
    return cus_event_create(NULL, 1, NULL);
}
static int nc_cus_event_ref(void)
{
    return cus_event_ref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_event_unref(void)
{
    return cus_event_unref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_event_handle(void)
{
    return cus_event_handle(NULL) == 0 ? 0 : -1;
}
static int nc_cus_event_context(void)
{
    return cus_event_context(NULL) == 0 ? 0 : -1;
}
static int nc_cus_event_record(void)
{
    return cus_event_record(NULL, NULL);
}
static int nc_cus_event_synchronize(void)
{
    return cus_event_synchronize(NULL);
}
static int nc_cus_event_query(void)
{
    return cus_event_query(NULL, NULL);
}
static int nc_cus_event_elapsed_ms(void)
{
    return cus_event_elapsed_ms(NULL, NULL, NULL);
}
static int nc_cus_function_ref(void)
{
    return cus_function_ref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_function_unref(void)
{
    return cus_function_unref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_function_handle(void)
{
    return cus_function_handle(NULL) == 0 ? 0 : -1;
}
static int nc_cus_function_name(void)
{
    const char *n = cus_function_name(NULL); /* "" for NULL */
    return n && !*n ? 0 : -1;
}
static int nc_cus_function_module(void)
{
    return cus_function_module(NULL) == 0 ? 0 : -1;
}
static int nc_cus_function_layout_known(void)
{
    return cus_function_layout_known(NULL) == false ? 0 : -1;
}
static int nc_cus_function_param_count(void)
{
    return cus_function_param_count(NULL) == 0 ? 0 : -1;
}
static int nc_cus_function_param_info(void)
{
    return cus_function_param_info(NULL, 1, NULL, NULL);
}
static int nc_cus_function_attribute(void)
{
    return cus_function_attribute(NULL, 0, NULL);
}
static int nc_cus_function_set_attribute(void)
{
    return cus_function_set_attribute(NULL, 0, 1);
}
static int nc_cus_function_set_max_dynamic_shared(void)
{
    return cus_function_set_max_dynamic_shared(NULL, 1);
}
static int nc_cus_function_set_cache_config(void)
{
    return cus_function_set_cache_config(NULL, 0);
}
static int nc_cus_function_set_shared_mem_config(void)
{
    return cus_function_set_shared_mem_config(NULL, 0);
}
static int nc_cus_function_max_potential_block(void)
{
    return cus_function_max_potential_block(NULL, 1, 1, NULL, NULL);
}
static int nc_cus_function_max_active_blocks(void)
{
    return cus_function_max_active_blocks(NULL, 1, 1, NULL);
}
static int nc_cus_capture_begin(void)
{
    return cus_capture_begin(NULL, 0).status;
}
static int nc_cus_capture_end(void)
{
    return cus_capture_end(NULL, NULL);
}
static int nc_cus_capture_abandon(void)
{
    cus_capture_abandon(NULL);
    return 0;
}
static int nc_cus_stream_is_capturing(void)
{
    return cus_stream_is_capturing(NULL, NULL);
}
static int nc_cus_graph_ref(void)
{
    return cus_graph_ref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_graph_unref(void)
{
    return cus_graph_unref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_graph_handle(void)
{
    return cus_graph_handle(NULL) == 0 ? 0 : -1;
}
static int nc_cus_graph_context(void)
{
    return cus_graph_context(NULL) == 0 ? 0 : -1;
}
static int nc_cus_graph_node_count(void)
{
    return cus_graph_node_count(NULL, NULL);
}
static int nc_cus_graph_kept_objects(void)
{
    return cus_graph_kept_objects(NULL) == 0 ? 0 : -1;
}
static int nc_cus_graph_instantiate(void)
{
    return cus_graph_instantiate(NULL, 1, NULL);
}
static int nc_cus_graph_exec_ref(void)
{
    return cus_graph_exec_ref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_graph_exec_unref(void)
{
    return cus_graph_exec_unref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_graph_exec_handle(void)
{
    return cus_graph_exec_handle(NULL) == 0 ? 0 : -1;
}
static int nc_cus_graph_exec_launch(void)
{
    return cus_graph_exec_launch(NULL, NULL);
}
static int nc_cus_graph_exec_upload(void)
{
    return cus_graph_exec_upload(NULL, NULL);
}
static int nc_cus_graph_exec_update(void)
{
    return cus_graph_exec_update(NULL, NULL, NULL);
}
static int nc_cus_function_launch(void)
{
    return cus_function_launch(NULL, one3_, one3_, 1, NULL, 1, NULL, NULL);
}
static int nc_cus_function_launch_ex(void)
{
    return cus_function_launch_ex(NULL, NULL, 1, NULL, NULL);
}
static int nc_cus_launch_site_(void)
{
    return cus_launch_site_(NULL, one3_, one3_, 1, NULL, 1, NULL, NULL);
}
static int nc_cus_launch_ex_site_(void)
{
    return cus_launch_ex_site_(NULL, NULL, 1, NULL, NULL);
}
static int nc_cus_buffer_arg_(void)
{
    return cus_buffer_arg_(NULL) == 0 ? 0 : -1;
}
static int nc_cus_buffer_alloc(void)
{
    return cus_buffer_alloc(NULL, 1, NULL);
}
static int nc_cus_buffer_alloc_array(void)
{
    return cus_buffer_alloc_array(NULL, 1, 1, NULL);
}
static int nc_cus_buffer_alloc_async(void)
{
    return cus_buffer_alloc_async(NULL, 1, NULL);
}
static int nc_cus_buffer_alloc_managed(void)
{
    return cus_buffer_alloc_managed(NULL, 1, 1, NULL);
}
static int nc_cus_buffer_ref(void)
{
    return cus_buffer_ref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_buffer_unref(void)
{
    return cus_buffer_unref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_buffer_ptr(void)
{
    return cus_buffer_ptr(NULL) == 0 ? 0 : -1;
}
static int nc_cus_buffer_size(void)
{
    return cus_buffer_size(NULL) == 0 ? 0 : -1;
}
static int nc_cus_buffer_get_kind(void)
{
    (void)cus_buffer_get_kind(NULL);
    return 0;
}
static int nc_cus_buffer_context(void)
{
    return cus_buffer_context(NULL) == 0 ? 0 : -1;
}
static int nc_cus_buffer_host_ptr(void)
{
    return cus_buffer_host_ptr(NULL) == 0 ? 0 : -1;
}
static int nc_cus_buffer_prefetch(void)
{
    return cus_buffer_prefetch(NULL, 0, NULL);
}
static int nc_cus_buffer_advise(void)
{
    return cus_buffer_advise(NULL, 0, 0);
}
static int nc_cus_host_buffer_alloc(void)
{
    return cus_host_buffer_alloc(NULL, 1, 1, NULL);
}
static int nc_cus_host_buffer_register(void)
{
    return cus_host_buffer_register(NULL, NULL, 1, 1, NULL);
}
static int nc_cus_host_buffer_ref(void)
{
    return cus_host_buffer_ref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_host_buffer_unref(void)
{
    return cus_host_buffer_unref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_host_buffer_data(void)
{
    return cus_host_buffer_data(NULL) == 0 ? 0 : -1;
}
static int nc_cus_host_buffer_size(void)
{
    return cus_host_buffer_size(NULL) == 0 ? 0 : -1;
}
static int nc_cus_host_buffer_is_registered(void)
{
    return cus_host_buffer_is_registered(NULL) == false ? 0 : -1;
}
static int nc_cus_copy_to_device(void)
{
    return cus_copy_to_device(NULL, 1, NULL, 1);
}
static int nc_cus_copy_to_host(void)
{
    return cus_copy_to_host(NULL, NULL, 1, 1);
}
static int nc_cus_copy_device(void)
{
    return cus_copy_device(NULL, 1, NULL, 1, 1);
}
static int nc_cus_copy_to_device_async(void)
{
    return cus_copy_to_device_async(NULL, 1, NULL, 1, NULL);
}
static int nc_cus_copy_to_host_async(void)
{
    return cus_copy_to_host_async(NULL, NULL, 1, 1, NULL);
}
static int nc_cus_copy_device_async(void)
{
    return cus_copy_device_async(NULL, 1, NULL, 1, 1, NULL);
}
static int nc_cus_buffer_fill_u8(void)
{
    return cus_buffer_fill_u8(NULL, 1, 0, 1);
}
static int nc_cus_buffer_fill_u16(void)
{
    return cus_buffer_fill_u16(NULL, 1, 0, 1);
}
static int nc_cus_buffer_fill_u32(void)
{
    return cus_buffer_fill_u32(NULL, 1, 0, 1);
}
static int nc_cus_buffer_fill_u8_async(void)
{
    return cus_buffer_fill_u8_async(NULL, 1, 0, 1, NULL);
}
static int nc_cus_buffer_fill_u16_async(void)
{
    return cus_buffer_fill_u16_async(NULL, 1, 0, 1, NULL);
}
static int nc_cus_buffer_fill_u32_async(void)
{
    return cus_buffer_fill_u32_async(NULL, 1, 0, 1, NULL);
}
static int nc_cus_memory_info(void)
{
    return cus_memory_info(NULL, NULL, NULL);
}
static int nc_cus_context_can_access_peer(void)
{
    return cus_context_can_access_peer(NULL, NULL, NULL);
}
static int nc_cus_context_enable_peer_access(void)
{
    return cus_context_enable_peer_access(NULL, NULL);
}
static int nc_cus_module_image_format(void)
{
    return cus_module_image_format(NULL, 1) == CUS_IMAGE_UNKNOWN ? 0 : -1;
}
static int nc_cus_image_format_name(void)
{
    return cus_image_format_name(0) != NULL ? 0 : -1;
}
static int nc_cus_module_load_data(void)
{
    return cus_module_load_data(NULL, NULL, 1, NULL, NULL);
}
static int nc_cus_module_load_file(void)
{
    return cus_module_load_file(NULL, NULL, NULL, NULL);
}
static int nc_cus_module_ref(void)
{
    return cus_module_ref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_module_unref(void)
{
    return cus_module_unref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_module_handle(void)
{
    return cus_module_handle(NULL) == 0 ? 0 : -1;
}
static int nc_cus_module_context(void)
{
    return cus_module_context(NULL) == 0 ? 0 : -1;
}
static int nc_cus_module_format(void)
{
    return cus_module_format(NULL) == CUS_IMAGE_UNKNOWN ? 0 : -1;
}
static int nc_cus_module_info_log(void)
{
    const char *l = cus_module_info_log(NULL); /* "" for NULL */
    return l && !*l ? 0 : -1;
}
static int nc_cus_module_get_function(void)
{
    return cus_module_get_function(NULL, NULL, NULL);
}
static int nc_cus_module_get_global(void)
{
    return cus_module_get_global(NULL, NULL, NULL, NULL);
}
static int nc_cus_module_copy_to_global(void)
{
    return cus_module_copy_to_global(NULL, NULL, 1, NULL, 1);
}
static int nc_cus_module_copy_from_global(void)
{
    return cus_module_copy_from_global(NULL, NULL, NULL, 1, 1);
}
static int nc_cus_module_function_count(void)
{
    return cus_module_function_count(NULL, NULL);
}
static int nc_cus_library_load_data(void)
{
    return cus_library_load_data(NULL, 1, NULL, NULL, NULL);
}

static int nc_cus_library_load_file(void)
{
    return cus_library_load_file(NULL, NULL, NULL);
}

static int nc_cus_library_get_kernel(void)
{
    return cus_library_get_kernel(NULL, NULL, NULL);
}

static int nc_cus_library_kernel_count(void)
{
    return cus_library_kernel_count(NULL, NULL);
}

static int nc_cus_library_kernel_names(void)
{
    return cus_library_kernel_names(NULL, NULL, 1, NULL);
}

static int nc_cus_library_get_global(void)
{
    return cus_library_get_global(NULL, NULL, NULL, NULL, NULL);
}

static int nc_cus_library_get_managed(void)
{
    return cus_library_get_managed(NULL, NULL, NULL, NULL);
}

static int nc_cus_library_get_unified_function(void)
{
    return cus_library_get_unified_function(NULL, NULL, NULL);
}

static int nc_cus_kernel_param_info(void)
{
    return cus_kernel_param_info(NULL, 0, NULL, NULL);
}

static int nc_cus_kernel_attribute(void)
{
    return cus_kernel_attribute(NULL, CU_FUNC_ATTRIBUTE_NUM_REGS, (cus_device){0}, NULL);
}

static int nc_cus_kernel_set_attribute(void)
{
    return cus_kernel_set_attribute(NULL, CU_FUNC_ATTRIBUTE_NUM_REGS, 0, (cus_device){0});
}

static int nc_cus_kernel_function(void)
{
    return cus_kernel_function(NULL, NULL, NULL);
}

static int nc_cus_kernel_launch(void)
{
    return cus_kernel_launch(NULL, CUS_DIM3(1, 1, 1), CUS_DIM3(1, 1, 1), 0, NULL, 0, NULL, NULL);
}

static int nc_cus_kernel_launch_ex(void)
{
    return cus_kernel_launch_ex(NULL, NULL, 0, NULL, NULL);
}

static int nc_cus_library_ref(void)
{
    return cus_library_ref(NULL) == NULL ? 0 : -1;
}

static int nc_cus_library_unref(void)
{
    return cus_library_unref(NULL) == NULL ? 0 : -1;
}

static int nc_cus_library_handle(void)
{
    return cus_library_handle(NULL) == NULL ? 0 : -1;
}

static int nc_cus_library_format(void)
{
    return cus_library_format(NULL) == CUS_IMAGE_UNKNOWN ? 0 : -1;
}

static int nc_cus_library_info_log(void)
{
    return cus_library_info_log(NULL)[0] == 0 ? 0 : -1;
}

static int nc_cus_kernel_ref(void)
{
    return cus_kernel_ref(NULL) == NULL ? 0 : -1;
}

static int nc_cus_kernel_unref(void)
{
    return cus_kernel_unref(NULL) == NULL ? 0 : -1;
}

static int nc_cus_kernel_handle(void)
{
    return cus_kernel_handle(NULL) == NULL ? 0 : -1;
}

static int nc_cus_kernel_name(void)
{
    return cus_kernel_name(NULL)[0] == 0 ? 0 : -1;
}

static int nc_cus_kernel_library(void)
{
    return cus_kernel_library(NULL) == NULL ? 0 : -1;
}

static int nc_cus_kernel_layout_known(void)
{
    return !cus_kernel_layout_known(NULL) ? 0 : -1;
}

static int nc_cus_kernel_param_count(void)
{
    return cus_kernel_param_count(NULL) == 0 ? 0 : -1;
}

static int nc_cus_module_function_names(void)
{
    return cus_module_function_names(NULL, NULL, 1, NULL);
}
static int nc_cus_debug_live_objects(void)
{
    return cus_debug_live_objects() == 0 ? 0 : -1;
}
static int nc_cus_release_deferred(void)
{
    return cus_release_deferred() == 0 ? 0 : -1;
}
static int nc_cus_in_host_fn(void)
{
    return cus_in_host_fn() == false ? 0 : -1;
}
static int nc_cus_status_name(void)
{
    return cus_status_name(CUS_SUCCESS) != NULL ? 0 : -1;
}
static int nc_cus_status_string(void)
{
    return cus_status_string(CUS_SUCCESS) != NULL ? 0 : -1;
}
static int nc_cus_status_is_sticky(void)
{
    return cus_status_is_sticky(CUS_SUCCESS) == false ? 0 : -1;
}
static int nc_cus_last_error(void)
{
    return cus_last_error() != NULL ? 0 : -1;
}
static int nc_cus_last_error_message(void)
{
    return cus_last_error_message() != NULL ? 0 : -1;
}
static int nc_cus_last_status(void)
{
    return cus_last_status() == CUS_SUCCESS ? 0 : -1; /* cleared before each entry */
}
static int nc_cus_clear_last_error(void)
{
    cus_clear_last_error();
    return 0;
}
static int nc_cus_set_destroy_error_handler(void)
{
    cus_set_destroy_error_handler(NULL, NULL);
    return 0;
}
static int nc_cus_destroy_error_count(void)
{
    (void)cus_destroy_error_count();
    return 0;
}
static int nc_cus_stream_create(void)
{
    return cus_stream_create(NULL, 1, 1, NULL);
}
static int nc_cus_stream_legacy(void)
{
    return cus_stream_legacy(NULL, NULL);
}
static int nc_cus_stream_per_thread(void)
{
    return cus_stream_per_thread(NULL, NULL);
}
static int nc_cus_stream_wrap(void)
{
    return cus_stream_wrap(NULL, NULL, NULL);
}
static int nc_cus_stream_ref(void)
{
    return cus_stream_ref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_stream_unref(void)
{
    return cus_stream_unref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_stream_handle(void)
{
    return cus_stream_handle(NULL) == 0 ? 0 : -1;
}
static int nc_cus_stream_context(void)
{
    return cus_stream_context(NULL) == 0 ? 0 : -1;
}
static int nc_cus_stream_get_kind(void)
{
    (void)cus_stream_get_kind(NULL);
    return 0;
}
static int nc_cus_stream_synchronize(void)
{
    return cus_stream_synchronize(NULL);
}
static int nc_cus_stream_query(void)
{
    return cus_stream_query(NULL, NULL);
}
static int nc_cus_stream_wait_event(void)
{
    return cus_stream_wait_event(NULL, NULL);
}
static int nc_cus_stream_launch_host_fn(void)
{
    return cus_stream_launch_host_fn(NULL, NULL, NULL);
}
static int nc_cus_stream_priority(void)
{
    return cus_stream_priority(NULL, NULL);
}
static int nc_cus_stream_flags(void)
{
    return cus_stream_flags(NULL, NULL);
}
static int nc_cus_buffer_ipc_export(void)
{
    return cus_buffer_ipc_export(NULL, NULL);
}
static int nc_cus_buffer_ipc_import(void)
{
    return cus_buffer_ipc_import(NULL, NULL, 0, 1, NULL);
}
static int nc_cus_event_ipc_export(void)
{
    return cus_event_ipc_export(NULL, NULL);
}
static int nc_cus_event_ipc_import(void)
{
    return cus_event_ipc_import(NULL, NULL, NULL);
}
static int nc_cus_version(void)
{
    (void)cus_version();
    return 0;
}
static int nc_cus_version_string(void)
{
    return cus_version_string() != NULL ? 0 : -1;
}

static int nc_cus_array_create(void)
{
    return cus_array_create(NULL, NULL, NULL);
}
static int nc_cus_array_descriptor(void)
{
    return cus_array_descriptor(NULL, NULL);
}
static int nc_cus_mipmapped_array_create(void)
{
    return cus_mipmapped_array_create(NULL, NULL, 1, NULL);
}
static int nc_cus_mipmapped_array_level(void)
{
    return cus_mipmapped_array_level(NULL, 0, NULL);
}
static int nc_cus_buffer_alloc_pitch(void)
{
    return cus_buffer_alloc_pitch(NULL, 1, 1, 4, NULL, NULL);
}
static int nc_cus_copy_2d(void)
{
    return cus_copy_2d(NULL);
}
static int nc_cus_copy_3d(void)
{
    return cus_copy_3d(NULL);
}
static int nc_cus_copy_2d_async(void)
{
    return cus_copy_2d_async(NULL, NULL);
}
static int nc_cus_copy_3d_async(void)
{
    return cus_copy_3d_async(NULL, NULL);
}
static int nc_cus_texture_create_array(void)
{
    return cus_texture_create_array(NULL, NULL, NULL, NULL);
}
static int nc_cus_texture_create_mipmapped(void)
{
    return cus_texture_create_mipmapped(NULL, NULL, NULL, NULL);
}
static int nc_cus_texture_create_linear(void)
{
    return cus_texture_create_linear(NULL, CU_AD_FORMAT_FLOAT, 1, NULL, NULL);
}
static int nc_cus_texture_create_pitch2d(void)
{
    return cus_texture_create_pitch2d(NULL, CU_AD_FORMAT_FLOAT, 1, 1, 1, NULL, NULL);
}
static int nc_cus_texture_resource_desc(void)
{
    return cus_texture_resource_desc(NULL, NULL);
}
static int nc_cus_surface_create(void)
{
    return cus_surface_create(NULL, NULL);
}
static int nc_cus_array_ref(void)
{
    return cus_array_ref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_array_unref(void)
{
    return cus_array_unref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_array_handle(void)
{
    return cus_array_handle(NULL) == 0 ? 0 : -1;
}
static int nc_cus_array_context(void)
{
    return cus_array_context(NULL) == 0 ? 0 : -1;
}
static int nc_cus_array_element_bytes(void)
{
    return cus_array_element_bytes(NULL) == 0 ? 0 : -1;
}
static int nc_cus_array_desc(void)
{
    return cus_array_desc(NULL).Width == 0 ? 0 : -1;
}
static int nc_cus_array_format_bytes(void)
{
    return cus_array_format_bytes((CUarray_format)0) == 0 ? 0 : -1;
}
static int nc_cus_mipmapped_array_ref(void)
{
    return cus_mipmapped_array_ref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_mipmapped_array_unref(void)
{
    return cus_mipmapped_array_unref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_mipmapped_array_handle(void)
{
    return cus_mipmapped_array_handle(NULL) == 0 ? 0 : -1;
}
static int nc_cus_mipmapped_array_levels(void)
{
    return cus_mipmapped_array_levels(NULL) == 0 ? 0 : -1;
}
static int nc_cus_buffer_pitch(void)
{
    return cus_buffer_pitch(NULL) == 0 ? 0 : -1;
}
static int nc_cus_buffer_height(void)
{
    return cus_buffer_height(NULL) == 0 ? 0 : -1;
}
static int nc_cus_texture_ref(void)
{
    return cus_texture_ref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_texture_unref(void)
{
    return cus_texture_unref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_texture_handle(void)
{
    return cus_texture_handle(NULL) == 0 ? 0 : -1;
}
static int nc_cus_texture_context(void)
{
    return cus_texture_context(NULL) == 0 ? 0 : -1;
}
static int nc_cus_surface_ref(void)
{
    return cus_surface_ref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_surface_unref(void)
{
    return cus_surface_unref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_surface_handle(void)
{
    return cus_surface_handle(NULL) == 0 ? 0 : -1;
}
static int nc_cus_texture_arg_(void)
{
    return cus_texture_arg_(NULL) == 0 ? 0 : -1;
}
/* pool.h */
static int nc_cus_pool_create(void)
{
    return cus_pool_create(NULL, NULL, NULL);
}
static int nc_cus_pool_default(void)
{
    return cus_pool_default(NULL, NULL);
}
static int nc_cus_pool_current(void)
{
    return cus_pool_current(NULL, NULL);
}
static int nc_cus_pool_set_current(void)
{
    return cus_pool_set_current(NULL);
}
static int nc_cus_pool_ref(void)
{
    return cus_pool_ref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_pool_unref(void)
{
    return cus_pool_unref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_pool_handle(void)
{
    return cus_pool_handle(NULL) == 0 ? 0 : -1;
}
static int nc_cus_pool_context(void)
{
    return cus_pool_context(NULL) == 0 ? 0 : -1;
}
static int nc_cus_pool_get_kind(void)
{
    return cus_pool_get_kind(NULL) == CUS_POOL_CREATED ? 0 : -1;
}
static int nc_cus_pool_handle_types(void)
{
    return cus_pool_handle_types(NULL) == CU_MEM_HANDLE_TYPE_NONE ? 0 : -1;
}
static int nc_cus_pool_set_release_threshold(void)
{
    return cus_pool_set_release_threshold(NULL, 0);
}
static int nc_cus_pool_get_release_threshold(void)
{
    return cus_pool_get_release_threshold(NULL, NULL);
}
static int nc_cus_pool_set_reuse(void)
{
    return cus_pool_set_reuse(NULL, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, true);
}
static int nc_cus_pool_get_reuse(void)
{
    return cus_pool_get_reuse(NULL, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, NULL);
}
static int nc_cus_pool_get_usage(void)
{
    return cus_pool_get_usage(NULL, NULL);
}
static int nc_cus_pool_reset_high_water(void)
{
    return cus_pool_reset_high_water(NULL);
}
static int nc_cus_pool_trim(void)
{
    return cus_pool_trim(NULL, 0);
}
static int nc_cus_pool_set_access(void)
{
    return cus_pool_set_access(NULL, dev0_, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
}
static int nc_cus_pool_get_access(void)
{
    return cus_pool_get_access(NULL, dev0_, NULL);
}
static int nc_cus_pool_alloc_async(void)
{
    return cus_pool_alloc_async(NULL, NULL, 1, NULL);
}
static int nc_cus_pool_export(void)
{
    return cus_pool_export(NULL, NULL);
}
static int nc_cus_pool_import(void)
{
    return cus_pool_import(NULL, 0, NULL);
}
static int nc_cus_pool_export_pointer(void)
{
    return cus_pool_export_pointer(NULL, NULL, NULL);
}
static int nc_cus_pool_import_pointer(void)
{
    return cus_pool_import_pointer(NULL, NULL, 1, NULL);
}
/* vmm.h, raw.h, and memory.h's cus_buffer_wrap */
static int nc_cus_physical_granularity(void)
{
    return cus_physical_granularity(NULL, false, NULL);
}
static int nc_cus_physical_create(void)
{
    return cus_physical_create(NULL, 1, 0, NULL);
}
static int nc_cus_physical_export_fd(void)
{
    return cus_physical_export_fd(NULL, NULL);
}
static int nc_cus_physical_import_fd(void)
{
    return cus_physical_import_fd(NULL, 0, 1, NULL);
}
static int nc_cus_physical_ref(void)
{
    return (cus_physical_ref(NULL), 0);
}
static int nc_cus_physical_unref(void)
{
    return (cus_physical_unref(NULL), 0);
}
static int nc_cus_physical_handle(void)
{
    return (int)cus_physical_handle(NULL);
}
static int nc_cus_physical_size(void)
{
    return (int)cus_physical_size(NULL);
}
static int nc_cus_physical_context(void)
{
    return (cus_physical_context(NULL), 0);
}
static int nc_cus_reservation_create(void)
{
    return cus_reservation_create(NULL, 1, 0, 0, NULL);
}
static int nc_cus_reservation_ref(void)
{
    return (cus_reservation_ref(NULL), 0);
}
static int nc_cus_reservation_unref(void)
{
    return (cus_reservation_unref(NULL), 0);
}
static int nc_cus_reservation_ptr(void)
{
    return (int)cus_reservation_ptr(NULL);
}
static int nc_cus_reservation_size(void)
{
    return (int)cus_reservation_size(NULL);
}
static int nc_cus_reservation_granularity(void)
{
    return (int)cus_reservation_granularity(NULL);
}
static int nc_cus_reservation_context(void)
{
    return (cus_reservation_context(NULL), 0);
}
static int nc_cus_reservation_mapped_bytes(void)
{
    return (int)cus_reservation_mapped_bytes(NULL);
}
static int nc_cus_reservation_map(void)
{
    return cus_reservation_map(NULL, 0, NULL, 0, 1);
}
static int nc_cus_reservation_unmap(void)
{
    return cus_reservation_unmap(NULL, 0, 1);
}
static int nc_cus_reservation_set_access(void)
{
    return cus_reservation_set_access(NULL, 0, 1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
}
static int nc_cus_reservation_get_access(void)
{
    return cus_reservation_get_access(NULL, 0, NULL);
}
static int nc_cus_reservation_buffer(void)
{
    return cus_reservation_buffer(NULL, 0, 1, NULL);
}
static int nc_cus_growable_reserve(void)
{
    return cus_growable_reserve(NULL, 1, NULL);
}
static int nc_cus_growable_grow(void)
{
    return cus_growable_grow(NULL, 1);
}
static int nc_cus_growable_buffer(void)
{
    return cus_growable_buffer(NULL, NULL);
}
static int nc_cus_growable_ref(void)
{
    return (cus_growable_ref(NULL), 0);
}
static int nc_cus_growable_unref(void)
{
    return (cus_growable_unref(NULL), 0);
}
static int nc_cus_growable_ptr(void)
{
    return (int)cus_growable_ptr(NULL);
}
static int nc_cus_growable_size(void)
{
    return (int)cus_growable_size(NULL);
}
static int nc_cus_growable_capacity(void)
{
    return (int)cus_growable_capacity(NULL);
}
static int nc_cus_growable_max(void)
{
    return (int)cus_growable_max(NULL);
}
static int nc_cus_growable_reservation(void)
{
    return (cus_growable_reservation(NULL), 0);
}
static int nc_cus_buffer_wrap(void)
{
    return cus_buffer_wrap(NULL, 1, 1, NULL);
}
/* graph_nodes.h */
static int nc_cus_graph_create(void)
{
    return cus_graph_create(NULL, NULL);
}
static int nc_cus_graph_nodes(void)
{
    return cus_graph_nodes(NULL, NULL, NULL);
}
static int nc_cus_graph_root_nodes(void)
{
    return cus_graph_root_nodes(NULL, NULL, NULL);
}
static int nc_cus_graph_add_dependencies(void)
{
    return cus_graph_add_dependencies(NULL, NULL, NULL, 1);
}
static int nc_cus_graph_add_kernel_node(void)
{
    return cus_graph_add_kernel_node(NULL, NULL, 1, NULL, NULL, one3_, one3_, 1, 1, NULL, NULL);
}
static int nc_cus_graph_add_library_kernel_node(void)
{
    return cus_graph_add_library_kernel_node(NULL, NULL, 1, NULL, NULL, one3_, one3_, 1, 1, NULL, NULL);
}
static int nc_cus_graph_add_kernel_node_ex(void)
{
    return cus_graph_add_kernel_node_ex(NULL, NULL, 1, NULL, NULL, NULL, 1, NULL, NULL);
}
static int nc_cus_graph_add_library_kernel_node_ex(void)
{
    return cus_graph_add_library_kernel_node_ex(NULL, NULL, 1, NULL, NULL, NULL, 1, NULL, NULL);
}
static int nc_cus_graph_add_kernel_ex_site_(void)
{
    return cus_graph_add_kernel_ex_site_(NULL, NULL, 1, NULL, NULL, NULL, 1, NULL, NULL);
}
static int nc_cus_graph_add_library_kernel_ex_site_(void)
{
    return cus_graph_add_library_kernel_ex_site_(NULL, NULL, 1, NULL, NULL, NULL, 1, NULL, NULL);
}
static int nc_cus_graph_kernel_node_attribute(void)
{
    return cus_graph_kernel_node_attribute((cus_graph_node){0}, CU_LAUNCH_ATTRIBUTE_PRIORITY, NULL);
}
static int nc_cus_graph_copy_kernel_attributes(void)
{
    return cus_graph_copy_kernel_attributes((cus_graph_node){0}, (cus_graph_node){0});
}
static int nc_cus_graph_event_node_event(void)
{
    return cus_graph_event_node_event((cus_graph_node){0}, NULL);
}
static int nc_cus_graph_child_graph(void)
{
    return cus_graph_child_graph((cus_graph_node){0}, NULL);
}
static int nc_cus_graph_host_node_fn(void)
{
    return cus_graph_host_node_fn((cus_graph_node){0}, NULL, NULL);
}
static int nc_cus_graph_add_edges(void)
{
    return cus_graph_add_edges(NULL, NULL, NULL, NULL, 1);
}
static int nc_cus_graph_remove_edges(void)
{
    return cus_graph_remove_edges(NULL, NULL, NULL, NULL, 1);
}
static int nc_cus_graph_node_dependencies_with_kinds(void)
{
    return cus_graph_node_dependencies_with_kinds((cus_graph_node){0}, NULL, NULL, NULL);
}
static int nc_cus_graph_node_dependents_with_kinds(void)
{
    return cus_graph_node_dependents_with_kinds((cus_graph_node){0}, NULL, NULL, NULL);
}
static int nc_cus_graph_edges_with_kinds(void)
{
    return cus_graph_edges_with_kinds(NULL, NULL, NULL, NULL, NULL);
}
static int nc_cus_graph_add_copy_to_device(void)
{
    return cus_graph_add_copy_to_device(NULL, NULL, 1, NULL, NULL, 1, NULL, 1);
}
static int nc_cus_graph_add_copy_to_host(void)
{
    return cus_graph_add_copy_to_host(NULL, NULL, 1, NULL, NULL, NULL, 1, 1);
}
static int nc_cus_graph_add_copy_device(void)
{
    return cus_graph_add_copy_device(NULL, NULL, 1, NULL, NULL, 1, NULL, 1, 1);
}
static int nc_cus_graph_add_fill_u8(void)
{
    return cus_graph_add_fill_u8(NULL, NULL, 1, NULL, NULL, 1, 1, 1);
}
static int nc_cus_graph_add_fill_u16(void)
{
    return cus_graph_add_fill_u16(NULL, NULL, 1, NULL, NULL, 1, 1, 1);
}
static int nc_cus_graph_add_fill_u32(void)
{
    return cus_graph_add_fill_u32(NULL, NULL, 1, NULL, NULL, 1, 1, 1);
}
static int nc_cus_graph_add_host_fn(void)
{
    return cus_graph_add_host_fn(NULL, NULL, 1, NULL, NULL, NULL);
}
static int nc_cus_graph_add_event_record(void)
{
    return cus_graph_add_event_record(NULL, NULL, 1, NULL, NULL);
}
static int nc_cus_graph_add_event_wait(void)
{
    return cus_graph_add_event_wait(NULL, NULL, 1, NULL, NULL);
}
static int nc_cus_graph_add_empty(void)
{
    return cus_graph_add_empty(NULL, NULL, 1, NULL);
}
static int nc_cus_graph_add_child(void)
{
    return cus_graph_add_child(NULL, NULL, 1, NULL, NULL);
}
static int nc_cus_graph_exec_set_kernel_node(void)
{
    return cus_graph_exec_set_kernel_node(NULL, (cus_graph_node){0}, NULL, one3_, one3_, 1, 1, NULL, NULL);
}
static int nc_cus_graph_exec_set_library_kernel_node(void)
{
    return cus_graph_exec_set_library_kernel_node(NULL, (cus_graph_node){0}, NULL, one3_, one3_, 1, 1, NULL, NULL);
}
static int nc_cus_graph_exec_set_copy_to_device(void)
{
    return cus_graph_exec_set_copy_to_device(NULL, (cus_graph_node){0}, NULL, 1, NULL, 1);
}
static int nc_cus_graph_exec_set_copy_to_host(void)
{
    return cus_graph_exec_set_copy_to_host(NULL, (cus_graph_node){0}, NULL, NULL, 1, 1);
}
static int nc_cus_graph_exec_set_fill_u32(void)
{
    return cus_graph_exec_set_fill_u32(NULL, (cus_graph_node){0}, NULL, 1, 1, 1);
}
static int nc_cus_graph_exec_set_node_enabled(void)
{
    return cus_graph_exec_set_node_enabled(NULL, (cus_graph_node){0}, true);
}
static int nc_cus_graph_add_kernel_site_(void)
{
    return cus_graph_add_kernel_site_(NULL, NULL, 1, NULL, NULL, one3_, one3_, 1, 1, NULL, NULL);
}
static int nc_cus_graph_add_library_kernel_site_(void)
{
    return cus_graph_add_library_kernel_site_(NULL, NULL, 1, NULL, NULL, one3_, one3_, 1, 1, NULL, NULL);
}
static int nc_cus_graph_exec_set_kernel_site_(void)
{
    return cus_graph_exec_set_kernel_site_(NULL, (cus_graph_node){0}, NULL, one3_, one3_, 1, 1, NULL, NULL);
}
static int nc_cus_graph_exec_set_library_kernel_site_(void)
{
    return cus_graph_exec_set_library_kernel_site_(NULL, (cus_graph_node){0}, NULL, one3_, one3_, 1, 1, NULL, NULL);
}
static int nc_cus_graph_buffer_arg_(void)
{
    return cus_graph_buffer_arg_(NULL) == 0 ? 0 : -1;
}
static int nc_cus_graph_texture_arg_(void)
{
    return cus_graph_texture_arg_(NULL) == 0 ? 0 : -1;
}
/* green.h */
static int nc_cus_device_sm_resource(void)
{
    return cus_device_sm_resource(dev0_, NULL);
}
static int nc_cus_sm_resource_count(void)
{
    return (int)cus_sm_resource_count(NULL);
}
static int nc_cus_sm_resource_split(void)
{
    return cus_sm_resource_split(NULL, 0, 0, NULL, NULL, NULL);
}
static int nc_cus_sm_resource_desc(void)
{
    return cus_sm_resource_desc(NULL, 1, NULL);
}
static int nc_cus_context_create_green(void)
{
    return cus_context_create_green(dev0_, NULL, 1, 0, NULL);
}
static int nc_cus_context_sm_resource(void)
{
    return cus_context_sm_resource(NULL, NULL);
}
static int nc_cus_context_sm_count(void)
{
    return cus_context_sm_count(NULL, NULL);
}
static int nc_cus_context_green_handle(void)
{
    return cus_context_green_handle(NULL) ? -1 : 0;
}
static int nc_cus_context_record_event(void)
{
    return cus_context_record_event(NULL, NULL);
}
static int nc_cus_context_wait_event(void)
{
    return cus_context_wait_event(NULL, NULL);
}
/* link.h */
static int nc_cus_linker_create(void)
{
    return cus_linker_create(NULL, NULL, NULL);
}
static int nc_cus_linker_ref(void)
{
    return (cus_linker_ref(NULL), 0);
}
static int nc_cus_linker_unref(void)
{
    return (cus_linker_unref(NULL), 0);
}
static int nc_cus_linker_add_data(void)
{
    return cus_linker_add_data(NULL, CUS_LINK_INPUT_PTX, NULL, 1, NULL);
}
static int nc_cus_linker_add_file(void)
{
    return cus_linker_add_file(NULL, CUS_LINK_INPUT_PTX, NULL);
}
static int nc_cus_linker_complete(void)
{
    return cus_linker_complete(NULL, NULL, NULL);
}
static int nc_cus_linker_load(void)
{
    return cus_linker_load(NULL, NULL, NULL);
}
static int nc_cus_linker_error_log(void)
{
    return (int)strlen(cus_linker_error_log(NULL));
}
static int nc_cus_linker_info_log(void)
{
    return (int)strlen(cus_linker_info_log(NULL));
}
static int nc_cus_linker_backend(void)
{
    return (int)cus_linker_backend(NULL);
}
static int nc_cus_linker_context(void)
{
    return (cus_linker_context(NULL), 0);
}
static int nc_cus_link_set_nvjitlink_library(void)
{
    return cus_link_set_nvjitlink_library(NULL);
}
static int nc_cus_link_nvjitlink_version(void)
{
    return cus_link_nvjitlink_version(NULL, NULL);
}
static int nc_cus_debug_fail_nvjitlink(void)
{
    return (cus_debug_fail_nvjitlink(NULL, 0), 0);
}
static int nc_cus_driver_mem_free(void)
{
    return cus_driver_mem_free(0);
}
static int nc_cus_driver_mem_release(void)
{
    return cus_driver_mem_release(0);
}
static int nc_cus_raw_mem_free(void)
{
    return (cus_raw_mem_free(0), 0);
}
static int nc_cus_raw_mem_release(void)
{
    return (cus_raw_mem_release(0), 0);
}
/* program.h */
static int nc_cus_program_create(void)
{
    return cus_program_create(NULL, NULL, NULL, 0, NULL);
}
static int nc_cus_program_ref(void)
{
    return cus_program_ref(NULL) == NULL ? 0 : -1;
}
static int nc_cus_program_unref(void)
{
    return cus_program_unref(NULL) == NULL ? 0 : -1;
}
static int nc_cus_program_compile(void)
{
    return cus_program_compile(NULL, NULL);
}
static int nc_cus_program_log(void)
{
    return cus_program_log(NULL)[0] == '\0' ? 0 : -1;
}
static int nc_cus_program_name(void)
{
    return cus_program_name(NULL) == NULL ? 0 : -1;
}
static int nc_cus_program_from_cache(void)
{
    return cus_program_from_cache(NULL) ? -1 : 0;
}
static int nc_cus_program_code(void)
{
    return cus_program_code(NULL, CUS_PROGRAM_PTX, NULL, NULL);
}
static int nc_cus_program_lowered_name(void)
{
    return cus_program_lowered_name(NULL, NULL, NULL);
}
static int nc_cus_program_load(void)
{
    return cus_program_load(NULL, NULL, NULL, NULL);
}
static int nc_cus_program_load_library(void)
{
    return cus_program_load_library(NULL, NULL, NULL);
}
static int nc_cus_program_get_function(void)
{
    return cus_program_get_function(NULL, NULL, NULL, NULL);
}
static int nc_cus_program_cache_get_stats(void)
{
    return (cus_program_cache_get_stats(NULL), 0);
}
static int nc_cus_nvrtc_version(void)
{
    return cus_nvrtc_version(NULL, NULL);
}

static int nc_cus_tensor_map_create_tiled(void)
{
    return cus_tensor_map_create_tiled(NULL, NULL, NULL);
}
static int nc_cus_tensor_map_create_im2col(void)
{
    return cus_tensor_map_create_im2col(NULL, NULL, NULL);
}
static int nc_cus_tensor_map_rebind(void)
{
    return cus_tensor_map_rebind(NULL, NULL, 0, NULL);
}
static int nc_cus_tensor_map_ref(void)
{
    return cus_tensor_map_ref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_tensor_map_unref(void)
{
    return cus_tensor_map_unref(NULL) == 0 ? 0 : -1;
}
static int nc_cus_tensor_map_get(void)
{
    return cus_tensor_map_get(NULL) == 0 ? 0 : -1;
}
static int nc_cus_tensor_map_buffer(void)
{
    return cus_tensor_map_buffer(NULL) == 0 ? 0 : -1;
}
static int nc_cus_tensor_map_params_of(void)
{
    return cus_tensor_map_params_of(NULL) == 0 ? 0 : -1;
}
static int nc_cus_tensor_map_arg_(void)
{
    CUtensorMap m = cus_tensor_map_arg_(NULL);
    for (size_t i = 0; i < CU_TENSOR_MAP_NUM_QWORDS; i++)
        if (m.opaque[i])
            return -1;
    return 0;
}
static int nc_cus_graph_conditional_create(void)
{
    return cus_graph_conditional_create(NULL, 1, true, NULL);
}
static int nc_cus_graph_add_conditional(void)
{
    return cus_graph_add_conditional(NULL, NULL, 1, NULL, 1, CU_GRAPH_COND_TYPE_WHILE, 1, NULL);
}

static int nc_cus_capture_begin_to_graph(void)
{
    return cus_capture_begin_to_graph(NULL, NULL, NULL, 1, 0).status;
}
static int nc_cus_capture_leaves(void)
{
    return cus_capture_leaves(NULL, NULL, NULL);
}
static int nc_cus_graph_add_copy_2d(void)
{
    return cus_graph_add_copy_2d(NULL, NULL, 1, NULL, NULL);
}
static int nc_cus_graph_add_copy_3d(void)
{
    return cus_graph_add_copy_3d(NULL, NULL, 1, NULL, NULL);
}
static int nc_cus_graph_exec_set_copy_2d(void)
{
    return cus_graph_exec_set_copy_2d(NULL, (cus_graph_node){0}, NULL);
}
static int nc_cus_graph_exec_set_copy_3d(void)
{
    return cus_graph_exec_set_copy_3d(NULL, (cus_graph_node){0}, NULL);
}
/* graph_inspect.h */
static const cus_graph_node no_node_ = {0};
static int nc_cus_graph_node_type(void)
{
    return cus_graph_node_type(no_node_, NULL);
}
static int nc_cus_graph_node_dependencies(void)
{
    return cus_graph_node_dependencies(no_node_, NULL, NULL);
}
static int nc_cus_graph_node_dependents(void)
{
    return cus_graph_node_dependents(no_node_, NULL, NULL);
}
static int nc_cus_graph_edges(void)
{
    return cus_graph_edges(NULL, NULL, NULL, NULL);
}
static int nc_cus_graph_node_enabled(void)
{
    return cus_graph_node_enabled(NULL, no_node_, NULL);
}
static int nc_cus_graph_exec_flags(void)
{
    return cus_graph_exec_flags(NULL, NULL);
}
static int nc_cus_graph_debug_dot(void)
{
    return cus_graph_debug_dot(NULL, NULL, 0);
}
static int nc_cus_graph_remove_dependencies(void)
{
    return cus_graph_remove_dependencies(NULL, NULL, NULL, 1);
}
static int nc_cus_graph_destroy_node(void)
{
    return cus_graph_destroy_node(no_node_);
}
static int nc_cus_graph_clone(void)
{
    return cus_graph_clone(NULL, NULL);
}
static int nc_cus_graph_node_in_clone(void)
{
    return cus_graph_node_in_clone(NULL, no_node_, NULL);
}
static int nc_cus_graph_exec_set_event_record(void)
{
    return cus_graph_exec_set_event_record(NULL, no_node_, NULL);
}
static int nc_cus_graph_exec_set_event_wait(void)
{
    return cus_graph_exec_set_event_wait(NULL, no_node_, NULL);
}
static int nc_cus_graph_exec_set_host_fn(void)
{
    return cus_graph_exec_set_host_fn(NULL, no_node_, NULL, NULL);
}
static int nc_cus_graph_exec_set_child(void)
{
    return cus_graph_exec_set_child(NULL, no_node_, NULL);
}
static int nc_cus_graph_set_kernel_node(void)
{
    return cus_graph_set_kernel_node(no_node_, NULL, one3_, one3_, 1, 1, NULL, NULL);
}
static int nc_cus_graph_set_library_kernel_node(void)
{
    return cus_graph_set_library_kernel_node(no_node_, NULL, one3_, one3_, 1, 1, NULL, NULL);
}
static int nc_cus_graph_set_kernel_site_(void)
{
    return cus_graph_set_kernel_site_(no_node_, NULL, one3_, one3_, 1, 1, NULL, NULL);
}
static int nc_cus_graph_set_library_kernel_site_(void)
{
    return cus_graph_set_library_kernel_site_(no_node_, NULL, one3_, one3_, 1, 1, NULL, NULL);
}
static int nc_cus_graph_set_event_record(void)
{
    return cus_graph_set_event_record(no_node_, NULL);
}
static int nc_cus_graph_set_event_wait(void)
{
    return cus_graph_set_event_wait(no_node_, NULL);
}
static int nc_cus_graph_set_host_fn(void)
{
    return cus_graph_set_host_fn(no_node_, NULL, NULL);
}
static int nc_cus_graph_set_fill_u32(void)
{
    return cus_graph_set_fill_u32(no_node_, NULL, 1, 1, 1);
}
static int nc_cus_graph_set_copy_to_device(void)
{
    return cus_graph_set_copy_to_device(no_node_, NULL, 1, NULL, 1);
}
static int nc_cus_graph_set_copy_to_host(void)
{
    return cus_graph_set_copy_to_host(no_node_, NULL, NULL, 1, 1);
}
static int nc_cus_graph_instantiate_with_params(void)
{
    return cus_graph_instantiate_with_params(NULL, 0, NULL, NULL, NULL);
}

/* graph_memory.h */
static int nc_cus_graph_add_alloc(void)
{
    return cus_graph_add_alloc(NULL, NULL, 1, NULL, 64, NULL);
}
static int nc_cus_graph_add_free(void)
{
    return cus_graph_add_free(NULL, NULL, 1, NULL, NULL);
}
static int nc_cus_graph_allocation_free(void)
{
    return cus_graph_allocation_free(NULL, NULL);
}
static int nc_cus_graph_alloc_node_params(void)
{
    return cus_graph_alloc_node_params((cus_graph_node){0}, NULL, NULL);
}
static int nc_cus_graph_free_node_ptr(void)
{
    return cus_graph_free_node_ptr((cus_graph_node){0}, NULL);
}
static int nc_cus_device_graph_mem_attribute(void)
{
    return cus_device_graph_mem_attribute(dev0_, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, NULL);
}

static const null_entry null_entries[] = {
    {"context.h", "cus_context_create", nc_cus_context_create, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"context.h", "cus_context_retain_primary", nc_cus_context_retain_primary, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"context.h", "cus_context_wrap", nc_cus_context_wrap, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"context.h", "cus_context_ref", nc_cus_context_ref, 0, 0, "returns NULL"},
    {"context.h", "cus_context_unref", nc_cus_context_unref, 0, 0, "returns NULL"},
    {"context.h", "cus_context_handle", nc_cus_context_handle, 0, 0, "returns NULL"},
    {"context.h", "cus_context_device", nc_cus_context_device, 0, 0, "returns device 0"},
    {"context.h", "cus_context_get_kind", nc_cus_context_get_kind, 0, 0, "returns CUS_CONTEXT_FOREIGN"},
    {"context.h", "cus_context_poisoned", nc_cus_context_poisoned, 0, 0, "returns CUS_SUCCESS"},
    {"context.h", "cus_context_synchronize", nc_cus_context_synchronize, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"context.h", "cus_context_api_version", nc_cus_context_api_version, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"context.h", "cus_context_flags", nc_cus_context_flags, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"context.h", "cus_context_get_limit", nc_cus_context_get_limit, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"context.h", "cus_context_set_limit", nc_cus_context_set_limit, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"context.h", "cus_context_get_cache_config", nc_cus_context_get_cache_config, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"context.h", "cus_context_set_cache_config", nc_cus_context_set_cache_config, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"context.h", "cus_context_get_shared_mem_config", nc_cus_context_get_shared_mem_config, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"context.h", "cus_context_set_shared_mem_config", nc_cus_context_set_shared_mem_config, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"context.h", "cus_context_stream_priority_range", nc_cus_context_stream_priority_range, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"context.h", "cus_context_push", nc_cus_context_push, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"context.h", "cus_context_pop", nc_cus_context_pop, CUS_ERROR_UNBALANCED_POP, E_STATUS, "documented: popped may be NULL; empty stack"},
    {"context.h", "cus_context_set_current", nc_cus_context_set_current, CUS_SUCCESS, E_STATUS | E_DRIVER, "documented: NULL pops the top (no-op when empty); one cuCtxSetCurrent"},
    {"context.h", "cus_context_current", nc_cus_context_current, 0, 0, "returns NULL"},
    {"context.h", "cus_context_stack_depth", nc_cus_context_stack_depth, 0, 0, "returns 0"},
    {"context.h", "cus_context_guard_enter", nc_cus_context_guard_enter, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, "the guard's status"},
    {"context.h", "cus_context_guard_exit", nc_cus_context_guard_exit, 0, 0, "ignores NULL (it once crashed)"},
    {"device.h", "cus_device_count", nc_cus_device_count, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"device.h", "cus_device_get", nc_cus_device_get, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"device.h", "cus_device_name", nc_cus_device_name, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"device.h", "cus_device_uuid", nc_cus_device_uuid, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"device.h", "cus_device_uuid_string", nc_cus_device_uuid_string, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"device.h", "cus_device_total_memory", nc_cus_device_total_memory, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"device.h", "cus_device_attribute", nc_cus_device_attribute, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"device.h", "cus_device_compute_capability", nc_cus_device_compute_capability, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"driver.h", "cus_init", nc_cus_init, CUS_SUCCESS, E_STATUS, "no pointer parameter (already loaded: no driver call)"},
    {"driver.h", "cus_driver_version", nc_cus_driver_version, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"driver.h", "cus_driver_install", NULL, 0, E_SKIP, "documented: NULL goes back to libcuda (test_driver.c covers it)"},
    {"driver.h", "cus_driver_set_library", NULL, 0, E_SKIP, "documented: NULL is the default path (test_driver.c covers it)"},
    {"driver.h", "cus_driver_has", nc_cus_driver_has, 0, 0, "returns false"},
    {"driver.h", "cus_driver_proc", nc_cus_driver_proc, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"context.h", "cus_context_set_name", nc_cus_context_set_name, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"stream.h", "cus_stream_set_name", nc_cus_stream_set_name, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"event.h", "cus_event_set_name", nc_cus_event_set_name, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"event.h", "cus_event_create", nc_cus_event_create, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"event.h", "cus_event_ref", nc_cus_event_ref, 0, 0, "returns NULL"},
    {"event.h", "cus_event_unref", nc_cus_event_unref, 0, 0, "returns NULL"},
    {"event.h", "cus_event_handle", nc_cus_event_handle, 0, 0, "returns NULL"},
    {"event.h", "cus_event_context", nc_cus_event_context, 0, 0, "returns NULL"},
    {"event.h", "cus_event_record", nc_cus_event_record, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"event.h", "cus_event_synchronize", nc_cus_event_synchronize, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"event.h", "cus_event_query", nc_cus_event_query, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"event.h", "cus_event_elapsed_ms", nc_cus_event_elapsed_ms, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"function.h", "cus_function_ref", nc_cus_function_ref, 0, 0, "returns NULL"},
    {"function.h", "cus_function_unref", nc_cus_function_unref, 0, 0, "returns NULL"},
    {"function.h", "cus_function_handle", nc_cus_function_handle, 0, 0, "returns NULL"},
    {"function.h", "cus_function_name", nc_cus_function_name, 0, 0, "returns \"\""},
    {"function.h", "cus_function_module", nc_cus_function_module, 0, 0, "returns NULL"},
    {"function.h", "cus_function_layout_known", nc_cus_function_layout_known, 0, 0, "returns false"},
    {"function.h", "cus_function_param_count", nc_cus_function_param_count, 0, 0, "returns 0"},
    {"function.h", "cus_function_param_info", nc_cus_function_param_info, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"function.h", "cus_function_attribute", nc_cus_function_attribute, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"function.h", "cus_function_set_attribute", nc_cus_function_set_attribute, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"function.h", "cus_function_set_max_dynamic_shared", nc_cus_function_set_max_dynamic_shared, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"function.h", "cus_function_set_cache_config", nc_cus_function_set_cache_config, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"function.h", "cus_function_set_shared_mem_config", nc_cus_function_set_shared_mem_config, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"function.h", "cus_function_max_potential_block", nc_cus_function_max_potential_block, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"function.h", "cus_function_max_active_blocks", nc_cus_function_max_active_blocks, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph.h", "cus_capture_begin", nc_cus_capture_begin, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, "the guard's status"},
    {"graph.h", "cus_capture_end", nc_cus_capture_end, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph.h", "cus_capture_abandon", nc_cus_capture_abandon, 0, 0, "ignores NULL"},
    {"graph.h", "cus_stream_is_capturing", nc_cus_stream_is_capturing, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph.h", "cus_graph_ref", nc_cus_graph_ref, 0, 0, "returns NULL"},
    {"graph.h", "cus_graph_unref", nc_cus_graph_unref, 0, 0, "returns NULL"},
    {"graph.h", "cus_graph_handle", nc_cus_graph_handle, 0, 0, "returns NULL"},
    {"graph.h", "cus_graph_context", nc_cus_graph_context, 0, 0, "returns NULL"},
    {"graph.h", "cus_graph_node_count", nc_cus_graph_node_count, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph.h", "cus_graph_kept_objects", nc_cus_graph_kept_objects, 0, 0, "returns 0"},
    {"graph.h", "cus_graph_instantiate", nc_cus_graph_instantiate, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph.h", "cus_graph_exec_ref", nc_cus_graph_exec_ref, 0, 0, "returns NULL"},
    {"graph.h", "cus_graph_exec_unref", nc_cus_graph_exec_unref, 0, 0, "returns NULL"},
    {"graph.h", "cus_graph_exec_handle", nc_cus_graph_exec_handle, 0, 0, "returns NULL"},
    {"graph.h", "cus_graph_exec_launch", nc_cus_graph_exec_launch, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph.h", "cus_graph_exec_upload", nc_cus_graph_exec_upload, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph.h", "cus_graph_exec_update", nc_cus_graph_exec_update, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"launch.h", "cus_function_launch", nc_cus_function_launch, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"launch.h", "cus_function_launch_ex", nc_cus_function_launch_ex, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"launch.h", "cus_launch_site_", nc_cus_launch_site_, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"launch.h", "cus_launch_ex_site_", nc_cus_launch_ex_site_, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"launch.h", "cus_buffer_arg_", nc_cus_buffer_arg_, 0, 0, "returns 0"},
    {"memory.h", "cus_buffer_alloc", nc_cus_buffer_alloc, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_buffer_alloc_array", nc_cus_buffer_alloc_array, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_buffer_alloc_async", nc_cus_buffer_alloc_async, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_buffer_alloc_managed", nc_cus_buffer_alloc_managed, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_buffer_ref", nc_cus_buffer_ref, 0, 0, "returns NULL"},
    {"memory.h", "cus_buffer_unref", nc_cus_buffer_unref, 0, 0, "returns NULL"},
    {"memory.h", "cus_buffer_ptr", nc_cus_buffer_ptr, 0, 0, "returns 0"},
    {"memory.h", "cus_buffer_size", nc_cus_buffer_size, 0, 0, "returns 0"},
    {"memory.h", "cus_buffer_get_kind", nc_cus_buffer_get_kind, 0, 0, "no crash"},
    {"memory.h", "cus_buffer_context", nc_cus_buffer_context, 0, 0, "returns NULL"},
    {"memory.h", "cus_buffer_host_ptr", nc_cus_buffer_host_ptr, 0, 0, "returns NULL"},
    {"memory.h", "cus_buffer_prefetch", nc_cus_buffer_prefetch, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_buffer_advise", nc_cus_buffer_advise, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_host_buffer_alloc", nc_cus_host_buffer_alloc, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_host_buffer_register", nc_cus_host_buffer_register, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_host_buffer_ref", nc_cus_host_buffer_ref, 0, 0, "returns NULL"},
    {"memory.h", "cus_host_buffer_unref", nc_cus_host_buffer_unref, 0, 0, "returns NULL"},
    {"memory.h", "cus_host_buffer_data", nc_cus_host_buffer_data, 0, 0, "returns NULL"},
    {"memory.h", "cus_host_buffer_size", nc_cus_host_buffer_size, 0, 0, "returns 0"},
    {"memory.h", "cus_host_buffer_is_registered", nc_cus_host_buffer_is_registered, 0, 0, "returns false"},
    {"memory.h", "cus_copy_to_device", nc_cus_copy_to_device, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_copy_to_host", nc_cus_copy_to_host, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_copy_device", nc_cus_copy_device, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_copy_to_device_async", nc_cus_copy_to_device_async, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_copy_to_host_async", nc_cus_copy_to_host_async, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_copy_device_async", nc_cus_copy_device_async, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_buffer_fill_u8", nc_cus_buffer_fill_u8, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_buffer_fill_u16", nc_cus_buffer_fill_u16, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_buffer_fill_u32", nc_cus_buffer_fill_u32, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_buffer_fill_u8_async", nc_cus_buffer_fill_u8_async, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_buffer_fill_u16_async", nc_cus_buffer_fill_u16_async, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_buffer_fill_u32_async", nc_cus_buffer_fill_u32_async, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_memory_info", nc_cus_memory_info, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_context_can_access_peer", nc_cus_context_can_access_peer, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"memory.h", "cus_context_enable_peer_access", nc_cus_context_enable_peer_access, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"pool.h", "cus_pool_create", nc_cus_pool_create, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"pool.h", "cus_pool_default", nc_cus_pool_default, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"pool.h", "cus_pool_current", nc_cus_pool_current, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"pool.h", "cus_pool_set_current", nc_cus_pool_set_current, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"pool.h", "cus_pool_ref", nc_cus_pool_ref, 0, 0, "returns NULL"},
    {"pool.h", "cus_pool_unref", nc_cus_pool_unref, 0, 0, "returns NULL"},
    {"pool.h", "cus_pool_handle", nc_cus_pool_handle, 0, 0, "returns NULL"},
    {"pool.h", "cus_pool_context", nc_cus_pool_context, 0, 0, "returns NULL"},
    {"pool.h", "cus_pool_get_kind", nc_cus_pool_get_kind, 0, 0, "returns CUS_POOL_CREATED"},
    {"pool.h", "cus_pool_handle_types", nc_cus_pool_handle_types, 0, 0, "returns CU_MEM_HANDLE_TYPE_NONE"},
    {"pool.h", "cus_pool_set_release_threshold", nc_cus_pool_set_release_threshold, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"pool.h", "cus_pool_get_release_threshold", nc_cus_pool_get_release_threshold, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"pool.h", "cus_pool_set_reuse", nc_cus_pool_set_reuse, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"pool.h", "cus_pool_get_reuse", nc_cus_pool_get_reuse, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"pool.h", "cus_pool_get_usage", nc_cus_pool_get_usage, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"pool.h", "cus_pool_reset_high_water", nc_cus_pool_reset_high_water, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"pool.h", "cus_pool_trim", nc_cus_pool_trim, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"pool.h", "cus_pool_set_access", nc_cus_pool_set_access, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"pool.h", "cus_pool_get_access", nc_cus_pool_get_access, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"pool.h", "cus_pool_alloc_async", nc_cus_pool_alloc_async, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"pool.h", "cus_pool_export", nc_cus_pool_export, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"pool.h", "cus_pool_import", nc_cus_pool_import, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"pool.h", "cus_pool_export_pointer", nc_cus_pool_export_pointer, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"pool.h", "cus_pool_import_pointer", nc_cus_pool_import_pointer, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"module.h", "cus_module_image_format", nc_cus_module_image_format, 0, 0, "returns CUS_IMAGE_UNKNOWN"},
    {"module.h", "cus_image_format_name", nc_cus_image_format_name, 0, 0, "never NULL"},
    {"module.h", "cus_module_load_data", nc_cus_module_load_data, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"module.h", "cus_module_load_file", nc_cus_module_load_file, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"module.h", "cus_module_ref", nc_cus_module_ref, 0, 0, "returns NULL"},
    {"module.h", "cus_module_unref", nc_cus_module_unref, 0, 0, "returns NULL"},
    {"module.h", "cus_module_handle", nc_cus_module_handle, 0, 0, "returns NULL"},
    {"module.h", "cus_module_context", nc_cus_module_context, 0, 0, "returns NULL"},
    {"module.h", "cus_module_format", nc_cus_module_format, 0, 0, "returns CUS_IMAGE_UNKNOWN"},
    {"module.h", "cus_module_info_log", nc_cus_module_info_log, 0, 0, "returns \"\""},
    {"module.h", "cus_module_get_function", nc_cus_module_get_function, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"module.h", "cus_module_get_global", nc_cus_module_get_global, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"module.h", "cus_module_copy_to_global", nc_cus_module_copy_to_global, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"module.h", "cus_module_copy_from_global", nc_cus_module_copy_from_global, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"module.h", "cus_module_function_count", nc_cus_module_function_count, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"module.h", "cus_module_function_names", nc_cus_module_function_names, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"library.h", "cus_library_load_data", nc_cus_library_load_data, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"library.h", "cus_library_load_file", nc_cus_library_load_file, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"library.h", "cus_library_ref", nc_cus_library_ref, 0, 0, "returns NULL"},
    {"library.h", "cus_library_unref", nc_cus_library_unref, 0, 0, "returns NULL"},
    {"library.h", "cus_library_handle", nc_cus_library_handle, 0, 0, "returns NULL"},
    {"library.h", "cus_library_format", nc_cus_library_format, 0, 0, "returns CUS_IMAGE_UNKNOWN"},
    {"library.h", "cus_library_info_log", nc_cus_library_info_log, 0, 0, "returns \"\""},
    {"library.h", "cus_library_get_kernel", nc_cus_library_get_kernel, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"library.h", "cus_library_kernel_count", nc_cus_library_kernel_count, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"library.h", "cus_library_kernel_names", nc_cus_library_kernel_names, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"library.h", "cus_library_get_global", nc_cus_library_get_global, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"library.h", "cus_library_get_managed", nc_cus_library_get_managed, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"library.h", "cus_library_get_unified_function", nc_cus_library_get_unified_function, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"library.h", "cus_kernel_ref", nc_cus_kernel_ref, 0, 0, "returns NULL"},
    {"library.h", "cus_kernel_unref", nc_cus_kernel_unref, 0, 0, "returns NULL"},
    {"library.h", "cus_kernel_handle", nc_cus_kernel_handle, 0, 0, "returns NULL"},
    {"library.h", "cus_kernel_name", nc_cus_kernel_name, 0, 0, "returns \"\""},
    {"library.h", "cus_kernel_library", nc_cus_kernel_library, 0, 0, "returns NULL"},
    {"library.h", "cus_kernel_layout_known", nc_cus_kernel_layout_known, 0, 0, "returns false"},
    {"library.h", "cus_kernel_param_count", nc_cus_kernel_param_count, 0, 0, "returns 0"},
    {"library.h", "cus_kernel_param_info", nc_cus_kernel_param_info, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"library.h", "cus_kernel_attribute", nc_cus_kernel_attribute, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"library.h", "cus_kernel_set_attribute", nc_cus_kernel_set_attribute, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"library.h", "cus_kernel_function", nc_cus_kernel_function, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"launch.h", "cus_kernel_launch", nc_cus_kernel_launch, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"launch.h", "cus_kernel_launch_ex", nc_cus_kernel_launch_ex, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"object.h", "cus_debug_live_objects", nc_cus_debug_live_objects, 0, 0, "returns 0"},
    {"object.h", "cus_release_deferred", nc_cus_release_deferred, 0, 0, "returns 0"},
    {"object.h", "cus_in_host_fn", nc_cus_in_host_fn, 0, 0, "returns false"},
    {"status.h", "cus_status_name", nc_cus_status_name, 0, 0, "never NULL"},
    {"status.h", "cus_status_string", nc_cus_status_string, 0, 0, "never NULL"},
    {"status.h", "cus_status_is_sticky", nc_cus_status_is_sticky, 0, 0, "returns false"},
    {"status.h", "cus_last_error", nc_cus_last_error, 0, 0, "never NULL"},
    {"status.h", "cus_last_error_message", nc_cus_last_error_message, 0, 0, "never NULL"},
    {"status.h", "cus_last_status", nc_cus_last_status, 0, 0, "no pointer parameter"},
    {"status.h", "cus_clear_last_error", nc_cus_clear_last_error, 0, 0, "ignores NULL"},
    {"status.h", "cus_set_destroy_error_handler", nc_cus_set_destroy_error_handler, 0, 0, "ignores NULL"},
    {"status.h", "cus_destroy_error_count", nc_cus_destroy_error_count, 0, 0, "no pointer parameter"},
    {"stream.h", "cus_stream_create", nc_cus_stream_create, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"stream.h", "cus_stream_legacy", nc_cus_stream_legacy, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"stream.h", "cus_stream_per_thread", nc_cus_stream_per_thread, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"stream.h", "cus_stream_wrap", nc_cus_stream_wrap, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"stream.h", "cus_stream_ref", nc_cus_stream_ref, 0, 0, "returns NULL"},
    {"stream.h", "cus_stream_unref", nc_cus_stream_unref, 0, 0, "returns NULL"},
    {"stream.h", "cus_stream_handle", nc_cus_stream_handle, 0, 0, "returns NULL"},
    {"stream.h", "cus_stream_context", nc_cus_stream_context, 0, 0, "returns NULL"},
    {"stream.h", "cus_stream_get_kind", nc_cus_stream_get_kind, 0, 0, "no crash"},
    {"stream.h", "cus_stream_synchronize", nc_cus_stream_synchronize, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"stream.h", "cus_stream_query", nc_cus_stream_query, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"stream.h", "cus_stream_wait_event", nc_cus_stream_wait_event, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"stream.h", "cus_stream_launch_host_fn", nc_cus_stream_launch_host_fn, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"stream.h", "cus_stream_priority", nc_cus_stream_priority, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"stream.h", "cus_stream_flags", nc_cus_stream_flags, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"ipc.h", "cus_buffer_ipc_export", nc_cus_buffer_ipc_export, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"ipc.h", "cus_buffer_ipc_import", nc_cus_buffer_ipc_import, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"ipc.h", "cus_event_ipc_export", nc_cus_event_ipc_export, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"ipc.h", "cus_event_ipc_import", nc_cus_event_ipc_import, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"version.h", "cus_version", nc_cus_version, 0, 0, "no pointer parameter"},
    {"version.h", "cus_version_string", nc_cus_version_string, 0, 0, "never NULL"},
    {"array.h", "cus_array_create", nc_cus_array_create, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"array.h", "cus_array_descriptor", nc_cus_array_descriptor, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"array.h", "cus_mipmapped_array_create", nc_cus_mipmapped_array_create, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"array.h", "cus_mipmapped_array_level", nc_cus_mipmapped_array_level, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"array.h", "cus_buffer_alloc_pitch", nc_cus_buffer_alloc_pitch, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"array.h", "cus_copy_2d", nc_cus_copy_2d, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"array.h", "cus_copy_3d", nc_cus_copy_3d, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"array.h", "cus_copy_2d_async", nc_cus_copy_2d_async, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"array.h", "cus_copy_3d_async", nc_cus_copy_3d_async, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"array.h", "cus_texture_create_array", nc_cus_texture_create_array, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"array.h", "cus_texture_create_mipmapped", nc_cus_texture_create_mipmapped, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"array.h", "cus_texture_create_linear", nc_cus_texture_create_linear, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"array.h", "cus_texture_create_pitch2d", nc_cus_texture_create_pitch2d, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"array.h", "cus_texture_resource_desc", nc_cus_texture_resource_desc, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"array.h", "cus_surface_create", nc_cus_surface_create, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"array.h", "cus_array_ref", nc_cus_array_ref, 0, 0, "returns NULL"},
    {"array.h", "cus_array_unref", nc_cus_array_unref, 0, 0, "returns NULL"},
    {"array.h", "cus_array_handle", nc_cus_array_handle, 0, 0, "NULL"},
    {"array.h", "cus_array_context", nc_cus_array_context, 0, 0, "NULL"},
    {"array.h", "cus_array_element_bytes", nc_cus_array_element_bytes, 0, 0, "0"},
    {"array.h", "cus_array_desc", nc_cus_array_desc, 0, 0, "a zeroed descriptor"},
    {"array.h", "cus_array_format_bytes", nc_cus_array_format_bytes, 0, 0, "no pointer: 0 for an unknown format"},
    {"array.h", "cus_mipmapped_array_ref", nc_cus_mipmapped_array_ref, 0, 0, "returns NULL"},
    {"array.h", "cus_mipmapped_array_unref", nc_cus_mipmapped_array_unref, 0, 0, "returns NULL"},
    {"array.h", "cus_mipmapped_array_handle", nc_cus_mipmapped_array_handle, 0, 0, "NULL"},
    {"array.h", "cus_mipmapped_array_levels", nc_cus_mipmapped_array_levels, 0, 0, "0"},
    {"array.h", "cus_buffer_pitch", nc_cus_buffer_pitch, 0, 0, "0"},
    {"array.h", "cus_buffer_height", nc_cus_buffer_height, 0, 0, "0"},
    {"array.h", "cus_texture_ref", nc_cus_texture_ref, 0, 0, "returns NULL"},
    {"array.h", "cus_texture_unref", nc_cus_texture_unref, 0, 0, "returns NULL"},
    {"array.h", "cus_texture_handle", nc_cus_texture_handle, 0, 0, "0"},
    {"array.h", "cus_texture_context", nc_cus_texture_context, 0, 0, "NULL"},
    {"array.h", "cus_surface_ref", nc_cus_surface_ref, 0, 0, "returns NULL"},
    {"array.h", "cus_surface_unref", nc_cus_surface_unref, 0, 0, "returns NULL"},
    {"array.h", "cus_surface_handle", nc_cus_surface_handle, 0, 0, "0"},
    {"launch.h", "cus_texture_arg_", nc_cus_texture_arg_, 0, 0, "0"},
    {"vmm.h", "cus_physical_granularity", nc_cus_physical_granularity, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"vmm.h", "cus_physical_create", nc_cus_physical_create, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"vmm.h", "cus_physical_export_fd", nc_cus_physical_export_fd, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"vmm.h", "cus_physical_import_fd", nc_cus_physical_import_fd, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"vmm.h", "cus_physical_ref", nc_cus_physical_ref, 0, 0, "returns NULL"},
    {"vmm.h", "cus_physical_unref", nc_cus_physical_unref, 0, 0, "returns NULL"},
    {"vmm.h", "cus_physical_handle", nc_cus_physical_handle, 0, 0, "returns 0"},
    {"vmm.h", "cus_physical_size", nc_cus_physical_size, 0, 0, "returns 0"},
    {"vmm.h", "cus_physical_context", nc_cus_physical_context, 0, 0, "returns NULL"},
    {"vmm.h", "cus_reservation_create", nc_cus_reservation_create, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"vmm.h", "cus_reservation_ref", nc_cus_reservation_ref, 0, 0, "returns NULL"},
    {"vmm.h", "cus_reservation_unref", nc_cus_reservation_unref, 0, 0, "returns NULL"},
    {"vmm.h", "cus_reservation_ptr", nc_cus_reservation_ptr, 0, 0, "returns 0"},
    {"vmm.h", "cus_reservation_size", nc_cus_reservation_size, 0, 0, "returns 0"},
    {"vmm.h", "cus_reservation_granularity", nc_cus_reservation_granularity, 0, 0, "returns 0"},
    {"vmm.h", "cus_reservation_context", nc_cus_reservation_context, 0, 0, "returns NULL"},
    {"vmm.h", "cus_reservation_mapped_bytes", nc_cus_reservation_mapped_bytes, 0, 0, "returns 0"},
    {"vmm.h", "cus_reservation_map", nc_cus_reservation_map, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"vmm.h", "cus_reservation_unmap", nc_cus_reservation_unmap, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"vmm.h", "cus_reservation_set_access", nc_cus_reservation_set_access, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"vmm.h", "cus_reservation_get_access", nc_cus_reservation_get_access, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"vmm.h", "cus_reservation_buffer", nc_cus_reservation_buffer, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"vmm.h", "cus_growable_reserve", nc_cus_growable_reserve, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"vmm.h", "cus_growable_grow", nc_cus_growable_grow, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"vmm.h", "cus_growable_buffer", nc_cus_growable_buffer, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"vmm.h", "cus_growable_ref", nc_cus_growable_ref, 0, 0, "returns NULL"},
    {"vmm.h", "cus_growable_unref", nc_cus_growable_unref, 0, 0, "returns NULL"},
    {"vmm.h", "cus_growable_ptr", nc_cus_growable_ptr, 0, 0, "returns 0"},
    {"vmm.h", "cus_growable_size", nc_cus_growable_size, 0, 0, "returns 0"},
    {"vmm.h", "cus_growable_capacity", nc_cus_growable_capacity, 0, 0, "returns 0"},
    {"vmm.h", "cus_growable_max", nc_cus_growable_max, 0, 0, "returns 0"},
    {"vmm.h", "cus_growable_reservation", nc_cus_growable_reservation, 0, 0, "returns NULL"},
    {"memory.h", "cus_buffer_wrap", nc_cus_buffer_wrap, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_create", nc_cus_graph_create, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_nodes", nc_cus_graph_nodes, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_root_nodes", nc_cus_graph_root_nodes, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_dependencies", nc_cus_graph_add_dependencies, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_kernel_node", nc_cus_graph_add_kernel_node, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_library_kernel_node", nc_cus_graph_add_library_kernel_node, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_kernel_node_ex", nc_cus_graph_add_kernel_node_ex, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_library_kernel_node_ex", nc_cus_graph_add_library_kernel_node_ex, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_kernel_ex_site_", nc_cus_graph_add_kernel_ex_site_, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_library_kernel_ex_site_", nc_cus_graph_add_library_kernel_ex_site_, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_kernel_node_attribute", nc_cus_graph_kernel_node_attribute, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_copy_kernel_attributes", nc_cus_graph_copy_kernel_attributes, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_event_node_event", nc_cus_graph_event_node_event, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_child_graph", nc_cus_graph_child_graph, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_host_node_fn", nc_cus_graph_host_node_fn, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_add_edges", nc_cus_graph_add_edges, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_remove_edges", nc_cus_graph_remove_edges, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_node_dependencies_with_kinds", nc_cus_graph_node_dependencies_with_kinds, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_node_dependents_with_kinds", nc_cus_graph_node_dependents_with_kinds, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_edges_with_kinds", nc_cus_graph_edges_with_kinds, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_copy_to_device", nc_cus_graph_add_copy_to_device, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_copy_to_host", nc_cus_graph_add_copy_to_host, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_copy_device", nc_cus_graph_add_copy_device, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_fill_u8", nc_cus_graph_add_fill_u8, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_fill_u16", nc_cus_graph_add_fill_u16, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_fill_u32", nc_cus_graph_add_fill_u32, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_host_fn", nc_cus_graph_add_host_fn, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_event_record", nc_cus_graph_add_event_record, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_event_wait", nc_cus_graph_add_event_wait, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_empty", nc_cus_graph_add_empty, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_child", nc_cus_graph_add_child, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_exec_set_kernel_node", nc_cus_graph_exec_set_kernel_node, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_exec_set_library_kernel_node", nc_cus_graph_exec_set_library_kernel_node, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_exec_set_copy_to_device", nc_cus_graph_exec_set_copy_to_device, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_exec_set_copy_to_host", nc_cus_graph_exec_set_copy_to_host, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_exec_set_fill_u32", nc_cus_graph_exec_set_fill_u32, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_exec_set_node_enabled", nc_cus_graph_exec_set_node_enabled, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_kernel_site_", nc_cus_graph_add_kernel_site_, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_library_kernel_site_", nc_cus_graph_add_library_kernel_site_, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_exec_set_kernel_site_", nc_cus_graph_exec_set_kernel_site_, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_exec_set_library_kernel_site_", nc_cus_graph_exec_set_library_kernel_site_, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_buffer_arg_", nc_cus_graph_buffer_arg_, 0, 0, "returns 0"},
    {"graph_nodes.h", "cus_graph_texture_arg_", nc_cus_graph_texture_arg_, 0, 0, "returns 0"},
    {"link.h", "cus_linker_create", nc_cus_linker_create, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"link.h", "cus_linker_ref", nc_cus_linker_ref, 0, 0, "returns NULL"},
    {"link.h", "cus_linker_unref", nc_cus_linker_unref, 0, 0, "returns NULL"},
    {"link.h", "cus_linker_add_data", nc_cus_linker_add_data, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"link.h", "cus_linker_add_file", nc_cus_linker_add_file, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"link.h", "cus_linker_complete", nc_cus_linker_complete, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"link.h", "cus_linker_load", nc_cus_linker_load, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"link.h", "cus_linker_error_log", nc_cus_linker_error_log, 0, 0, "returns \"\""},
    {"link.h", "cus_linker_info_log", nc_cus_linker_info_log, 0, 0, "returns \"\""},
    {"link.h", "cus_linker_backend", nc_cus_linker_backend, 0, 0, "returns CUS_LINK_BACKEND_AUTO"},
    {"link.h", "cus_linker_context", nc_cus_linker_context, 0, 0, "returns NULL"},
    {"link.h", "cus_link_set_nvjitlink_library", nc_cus_link_set_nvjitlink_library, 0, 0, "NULL: back to CUSCOPE_LIBNVJITLINK, then the soname"},
    {"link.h", "cus_link_nvjitlink_version", nc_cus_link_nvjitlink_version, 0, E_SKIP, "both may be NULL; the outcome depends on nvJitLink being installed (test_link.c)"},
    {"link.h", "cus_debug_fail_nvjitlink", nc_cus_debug_fail_nvjitlink, 0, 0, "NULL disarms"},
    {"green.h", "cus_device_sm_resource", nc_cus_device_sm_resource, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"green.h", "cus_sm_resource_count", nc_cus_sm_resource_count, 0, 0, "returns 0"},
    {"green.h", "cus_sm_resource_split", nc_cus_sm_resource_split, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"green.h", "cus_sm_resource_desc", nc_cus_sm_resource_desc, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"green.h", "cus_context_create_green", nc_cus_context_create_green, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"green.h", "cus_context_sm_resource", nc_cus_context_sm_resource, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"green.h", "cus_context_sm_count", nc_cus_context_sm_count, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"green.h", "cus_context_green_handle", nc_cus_context_green_handle, 0, 0, "returns NULL"},
    {"green.h", "cus_context_record_event", nc_cus_context_record_event, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"green.h", "cus_context_wait_event", nc_cus_context_wait_event, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"raw.h", "cus_driver_mem_free", nc_cus_driver_mem_free, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"raw.h", "cus_driver_mem_release", nc_cus_driver_mem_release, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"raw.h", "cus_raw_mem_free", nc_cus_raw_mem_free, 0, 0, "ignores 0"},
    {"raw.h", "cus_raw_mem_release", nc_cus_raw_mem_release, 0, 0, "ignores 0"},
    {"program.h", "cus_program_create", nc_cus_program_create, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"program.h", "cus_program_ref", nc_cus_program_ref, 0, 0, "returns NULL"},
    {"program.h", "cus_program_unref", nc_cus_program_unref, 0, 0, "returns NULL"},
    {"program.h", "cus_program_compile", nc_cus_program_compile, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"program.h", "cus_program_log", nc_cus_program_log, 0, 0, "returns \"\""},
    {"program.h", "cus_program_name", nc_cus_program_name, 0, 0, "returns NULL"},
    {"program.h", "cus_program_from_cache", nc_cus_program_from_cache, 0, 0, "returns false"},
    {"program.h", "cus_program_code", nc_cus_program_code, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"program.h", "cus_program_lowered_name", nc_cus_program_lowered_name, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"program.h", "cus_program_load", nc_cus_program_load, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"program.h", "cus_program_load_library", nc_cus_program_load_library, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"program.h", "cus_program_get_function", nc_cus_program_get_function, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"program.h", "cus_program_cache_get_stats", nc_cus_program_cache_get_stats, 0, 0, "ignores NULL"},
    {"program.h", "cus_program_cache_clear", NULL, 0, E_SKIP, "no pointer parameter"},
    {"program.h", "cus_program_cache_set_enabled", NULL, 0, E_SKIP, "no pointer parameter"},
    {"program.h", "cus_nvrtc_set_library", NULL, 0, E_SKIP, "documented: NULL is the default (test_program.c covers it)"},
    {"program.h", "cus_nvrtc_version", nc_cus_nvrtc_version, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"program.h", "cus_nvrtc_library", NULL, 0, E_SKIP, "no pointer parameter"},
    {"program.h", "cus_debug_nvrtc_fail", NULL, 0, E_SKIP, "documented: NULL disarms (test_program.c covers it)"},
    {"program.h", "cus_debug_nvrtc_faults", NULL, 0, E_SKIP, "no pointer parameter"},
    {"tensor_map.h", "cus_tensor_map_create_tiled", nc_cus_tensor_map_create_tiled, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"tensor_map.h", "cus_tensor_map_create_im2col", nc_cus_tensor_map_create_im2col, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"tensor_map.h", "cus_tensor_map_rebind", nc_cus_tensor_map_rebind, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"tensor_map.h", "cus_tensor_map_ref", nc_cus_tensor_map_ref, 0, 0, "returns NULL"},
    {"tensor_map.h", "cus_tensor_map_unref", nc_cus_tensor_map_unref, 0, 0, "returns NULL"},
    {"tensor_map.h", "cus_tensor_map_get", nc_cus_tensor_map_get, 0, 0, "returns NULL"},
    {"tensor_map.h", "cus_tensor_map_buffer", nc_cus_tensor_map_buffer, 0, 0, "returns NULL"},
    {"tensor_map.h", "cus_tensor_map_params_of", nc_cus_tensor_map_params_of, 0, 0, "returns NULL"},
    {"tensor_map.h", "cus_tensor_map_element_bits", NULL, 0, E_SKIP, "no pointer parameter"},
    {"launch.h", "cus_tensor_map_arg_", nc_cus_tensor_map_arg_, 0, 0, "zeros"},
    {"graph_conditional.h", "cus_graph_conditional_create", nc_cus_graph_conditional_create, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_conditional.h", "cus_graph_add_conditional", nc_cus_graph_add_conditional, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},    {"graph_inspect.h", "cus_graph_node_type", nc_cus_graph_node_type, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_node_dependencies", nc_cus_graph_node_dependencies, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_node_dependents", nc_cus_graph_node_dependents, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_edges", nc_cus_graph_edges, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_node_enabled", nc_cus_graph_node_enabled, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_exec_flags", nc_cus_graph_exec_flags, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_debug_dot", nc_cus_graph_debug_dot, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_remove_dependencies", nc_cus_graph_remove_dependencies, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_destroy_node", nc_cus_graph_destroy_node, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_clone", nc_cus_graph_clone, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_node_in_clone", nc_cus_graph_node_in_clone, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_exec_set_event_record", nc_cus_graph_exec_set_event_record, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_exec_set_event_wait", nc_cus_graph_exec_set_event_wait, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_exec_set_host_fn", nc_cus_graph_exec_set_host_fn, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_set_kernel_node", nc_cus_graph_set_kernel_node, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_set_library_kernel_node", nc_cus_graph_set_library_kernel_node, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_set_kernel_site_", nc_cus_graph_set_kernel_site_, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_set_library_kernel_site_", nc_cus_graph_set_library_kernel_site_, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_set_event_record", nc_cus_graph_set_event_record, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_set_event_wait", nc_cus_graph_set_event_wait, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_set_host_fn", nc_cus_graph_set_host_fn, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_set_fill_u32", nc_cus_graph_set_fill_u32, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_set_copy_to_device", nc_cus_graph_set_copy_to_device, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_set_copy_to_host", nc_cus_graph_set_copy_to_host, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_exec_set_child", nc_cus_graph_exec_set_child, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_inspect.h", "cus_graph_instantiate_with_params", nc_cus_graph_instantiate_with_params, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_capture.h", "cus_capture_begin_to_graph", nc_cus_capture_begin_to_graph, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, "the guard's status"},
    {"graph_capture.h", "cus_capture_leaves", nc_cus_capture_leaves, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_copy_2d", nc_cus_graph_add_copy_2d, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_add_copy_3d", nc_cus_graph_add_copy_3d, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_exec_set_copy_2d", nc_cus_graph_exec_set_copy_2d, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_nodes.h", "cus_graph_exec_set_copy_3d", nc_cus_graph_exec_set_copy_3d, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_memory.h", "cus_graph_add_alloc", nc_cus_graph_add_alloc, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_memory.h", "cus_graph_add_free", nc_cus_graph_add_free, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_memory.h", "cus_graph_allocation_free", nc_cus_graph_allocation_free, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_memory.h", "cus_graph_alloc_node_params", nc_cus_graph_alloc_node_params, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_memory.h", "cus_graph_free_node_ptr", nc_cus_graph_free_node_ptr, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_memory.h", "cus_device_graph_mem_attribute", nc_cus_device_graph_mem_attribute, CUS_ERROR_INVALID_ARGUMENT, E_STATUS, ""},
    {"graph_memory.h", "cus_device_graph_mem_trim", NULL, 0, E_SKIP, "no pointer parameter"},
    {"graph_memory.h", "cus_device_graph_mem_reset_high", NULL, 0, E_SKIP, "no pointer parameter"},
};

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

static void test_null_everywhere(void **state)
{
    (void)state;
    assert_ok(cus_init()); /* loaded: the calls below must not need a driver call */
    size_t n = sizeof null_entries / sizeof null_entries[0];
    unsigned failures = 0, called = 0, skipped = 0;
    for (size_t i = 0; i < n; i++) {
        const null_entry *e = &null_entries[i];
        if ((e->flags & E_SKIP) || ((e->flags & E_KNOWN_BUG) && !known_bugs_enabled())) {
            skipped++;
            if (e->flags & E_KNOWN_BUG)
                print_message("KNOWN BUG (skipped; CUS_TEST_KNOWN_BUGS=1 runs it): %s(NULL): %s\n",
                              e->name, e->note);
            continue;
        }
        called++;
        cus_clear_last_error();
        unsigned long calls = cus_fake_call_count();
        int got = e->call();
        unsigned long made = cus_fake_call_count() - calls;
        bool bad = got != e->want;
        if (!bad && (e->flags & E_STATUS) && e->want != CUS_SUCCESS &&
            cus_last_status() != e->want)
            bad = true;
        if (!(e->flags & E_DRIVER) && made)
            bad = true;
        if (bad) {
            failures++;
            print_error("%s: %s with NULLs -> %d (%s), want %d (%s); last status %s; %lu driver "
                        "call(s)\n",
                        e->header, e->name, got, cus_status_name(got), e->want,
                        cus_status_name(e->want), cus_status_name(cus_last_status()), made);
        }
    }
    print_message("null-everywhere: %zu public functions, %u called, %u not called\n", n, called,
                  skipped);
    assert_int_equal(failures, 0);
    assert_int_equal(cus_fake_thread_stack_depth(), 0);
}

/* Regression: cus_context_guard_exit(NULL) once read guard->ctx (a
 * segfault); like cus_capture_abandon(NULL) it returns. */
static void test_guard_exit_null_is_ignored(void **state)
{
    (void)state;
    unsigned long calls = cus_fake_call_count();
    cus_context_guard_exit(NULL);
    assert_int_equal(cus_fake_call_count(), calls);
}

/* --- zero sizes ------------------------------------------------------------ */

static void test_zero_sizes(void **state)
{
    (void)state;
    cus_autoptr(cus_context) ctx = NULL;
    assert_ok(cus_context_create(dev0_, CUS_CTX_NO_PUSH, &ctx));
    cus_autoptr(cus_buffer) buf = NULL;
    assert_ok(cus_buffer_alloc(ctx, 64, &buf));
    cus_autoptr(cus_stream) s = NULL;
    assert_ok(cus_stream_create(ctx, 0, 0, &s));
    char host[64] = {0};
    cus_buffer *b = (cus_buffer *)host;
    /* allocations of 0 bytes or 0 elements: invalid, no driver call */
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_buffer_alloc(ctx, 0, &b), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_buffer_alloc_array(ctx, 0, 4, &b), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_buffer_alloc_array(ctx, 4, 0, &b), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_buffer_alloc_managed(ctx, 0, CU_MEM_ATTACH_GLOBAL, &b),
                  CUS_ERROR_INVALID_ARGUMENT);
    cus_host_buffer *hb = (cus_host_buffer *)host;
    assert_status(cus_host_buffer_alloc(ctx, 0, 0, &hb), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_host_buffer_register(ctx, host, 0, 0, &hb), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_buffer_alloc_async(s, 0, &b), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_ptr_equal(b, (cus_buffer *)host);
    assert_ptr_equal(hb, (cus_host_buffer *)host);
    /* copies and fills of 0 bytes inside the buffer: nothing to do */
    calls = cus_fake_call_count();
    assert_ok(cus_copy_to_device(buf, 0, host, 0));
    assert_ok(cus_copy_to_host(host, buf, 64, 0));
    assert_ok(cus_copy_device(buf, 0, buf, 0, 0));
    assert_ok(cus_buffer_fill_u8(buf, 0, 0, 0));
    assert_ok(cus_buffer_fill_u32(buf, 0, 0, 0));
    assert_ok(cus_copy_to_device_async(buf, 0, host, 0, s));
    assert_ok(cus_buffer_fill_u16_async(buf, 0, 0, 0, s));
    /* with no bytes, the host pointer may be NULL */
    assert_ok(cus_copy_to_device(buf, 0, NULL, 0));
    assert_ok(cus_copy_to_host(NULL, buf, 0, 0));
    assert_ok(cus_copy_to_device_async(buf, 0, NULL, 0, s));
    assert_ok(cus_copy_to_host_async(NULL, buf, 0, 0, s));
    assert_status(cus_copy_to_device(buf, 0, NULL, 1), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_copy_to_host(NULL, buf, 0, 1), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_copy_to_device_async(buf, 0, NULL, 1, s), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_copy_to_host_async(NULL, buf, 0, 1, s), CUS_ERROR_INVALID_ARGUMENT);
    print_message("zero-byte copies and fills made %lu driver call(s)\n",
                  cus_fake_call_count() - calls);
    /* memory info: either figure alone, not neither */
    size_t free_b = 0, total_b = 0;
    assert_ok(cus_memory_info(ctx, &free_b, NULL));
    assert_ok(cus_memory_info(ctx, NULL, &total_b));
    assert_true(free_b > 0 && total_b >= free_b);
    assert_status(cus_memory_info(ctx, NULL, NULL), CUS_ERROR_INVALID_ARGUMENT);
    /* a 0-byte range that starts past the end is still out of range */
    assert_status(cus_copy_to_device(buf, 65, host, 0), CUS_ERROR_OUT_OF_RANGE);
    assert_ok(cus_stream_synchronize(s));
}

/* --- context calls inside a host function ------------------------------------- */

typedef struct in_host {
    cus_context *ctx;
    cus_status create, push, pop, set, set_null, sync, guard;
    unsigned int depth;
    unsigned long calls;
} in_host;

static void host_fn_context_calls(void *p)
{
    in_host *h = p;
    unsigned long calls = cus_fake_call_count();
    cus_context *c = NULL;
    h->create = cus_context_create(dev0_, 0, &c);
    h->push = cus_context_push(h->ctx);
    h->pop = cus_context_pop(NULL);
    h->set = cus_context_set_current(h->ctx);
    h->set_null = cus_context_set_current(NULL);
    h->sync = cus_context_synchronize(h->ctx);
    cus_context_guard g = cus_context_guard_enter(h->ctx);
    h->guard = g.status;
    cus_context_guard_cleanup_(&g);
    h->depth = cus_context_stack_depth();
    h->calls = cus_fake_call_count() - calls;
}

static void test_context_calls_in_a_host_function(void **state)
{
    (void)state;
    cus_autoptr(cus_context) ctx = NULL;
    assert_ok(cus_context_create(dev0_, CUS_CTX_NO_PUSH, &ctx));
    cus_autoptr(cus_stream) s = NULL;
    assert_ok(cus_stream_create(ctx, 0, 0, &s));
    in_host h = {.ctx = ctx};
    assert_ok(cus_stream_launch_host_fn(s, host_fn_context_calls, &h));
    assert_ok(cus_stream_synchronize(s));
    assert_int_equal(h.create, CUS_ERROR_IN_HOST_FUNCTION);
    assert_int_equal(h.push, CUS_ERROR_IN_HOST_FUNCTION);
    assert_int_equal(h.pop, CUS_ERROR_IN_HOST_FUNCTION);
    assert_int_equal(h.set, CUS_ERROR_IN_HOST_FUNCTION);
    assert_int_equal(h.set_null, CUS_ERROR_IN_HOST_FUNCTION);
    assert_int_equal(h.sync, CUS_ERROR_IN_HOST_FUNCTION);
    assert_int_equal(h.guard, CUS_ERROR_IN_HOST_FUNCTION);
    assert_int_equal(h.depth, 0);
    assert_int_equal(h.calls, 0);
    assert_int_equal(cus_fake_misuse_count(), 0);
}

/* --- objects of another context --------------------------------------------- */

static void test_stream_waits_on_an_event_of_another_context(void **state)
{
    (void)state;
    cus_autoptr(cus_context) a = NULL;
    cus_autoptr(cus_context) b = NULL;
    assert_ok(cus_context_create(dev0_, CUS_CTX_NO_PUSH, &a));
    assert_ok(cus_context_create(dev0_, CUS_CTX_NO_PUSH, &b));
    cus_autoptr(cus_stream) sa = NULL;
    cus_autoptr(cus_stream) sb = NULL;
    assert_ok(cus_stream_create(a, 0, 0, &sa));
    assert_ok(cus_stream_create(b, 0, 0, &sb));
    cus_autoptr(cus_event) eb = NULL;
    assert_ok(cus_event_create(b, 0, &eb));
    assert_ok(cus_event_record(eb, sb));
    /* The driver allows a cross-context wait (it is how peer work is
     * ordered): cuscope passes it through, switching to the stream's context. */
    cus_status st = cus_stream_wait_event(sa, eb);
    print_message("cus_stream_wait_event across contexts -> %s\n", cus_status_name(st));
    assert_int_equal(st, CUS_SUCCESS);
    assert_int_equal(cus_context_stack_depth(), 0);
    assert_ok(cus_stream_synchronize(sa));
    assert_ok(cus_stream_synchronize(sb));
}

/* --- legacy IPC (ipc.h) ------------------------------------------------------ */

/* What IPC refuses before any driver call: a NULL handle (each pointer
 * alone), a zero size, an event without CU_EVENT_INTERPROCESS |
 * CU_EVENT_DISABLE_TIMING, a buffer that is not cus_buffer_alloc's. */
static void test_ipc_refusals(void **state)
{
    (void)state;
    cus_autoptr(cus_context) ctx = NULL;
    assert_ok(cus_context_create(dev0_, CUS_CTX_NO_PUSH, &ctx));
    cus_autoptr(cus_buffer) buf = NULL;
    assert_ok(cus_buffer_alloc(ctx, 64, &buf));
    cus_autoptr(cus_buffer) managed = NULL;
    assert_ok(cus_buffer_alloc_managed(ctx, 64, 0, &managed));
    cus_autoptr(cus_event) plain = NULL;
    assert_ok(cus_event_create(ctx, CU_EVENT_DISABLE_TIMING, &plain));
    cus_autoptr(cus_event) ipc = NULL;
    assert_ok(cus_event_create(ctx, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING, &ipc));
    CUipcMemHandle h;
    CUipcEventHandle eh;
    memset(&h, 0, sizeof h);
    memset(&eh, 0, sizeof eh);
    char host[64];
    cus_buffer *b = (cus_buffer *)host;
    cus_event *e = (cus_event *)host;
    unsigned long calls = cus_fake_call_count();
    assert_status(cus_buffer_ipc_export(buf, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_buffer_ipc_import(ctx, NULL, 0, 64, &b), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_buffer_ipc_import(ctx, &h, 0, 64, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_buffer_ipc_import(ctx, &h, 0, 0, &b), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_buffer_ipc_export(managed, &h), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_event_ipc_export(ipc, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_event_ipc_export(plain, &eh), CUS_ERROR_INVALID_ARGUMENT);
    assert_contains(cus_last_error_message(), "CU_EVENT_INTERPROCESS");
    assert_status(cus_event_ipc_import(ctx, NULL, &e), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_event_ipc_import(ctx, &eh, NULL), CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_ptr_equal(b, (cus_buffer *)host);
    assert_ptr_equal(e, (cus_event *)host);
}

/* --- memory pools ------------------------------------------------------------
 * Zero sizes, a stream of another context than the pool's, export and
 * pointer export of a pool without a handle type (or of a buffer of another
 * pool), an unsupported handle type, a negative descriptor, imports into a
 * pool that is not imported, allocation from (or making current) an imported
 * pool, a reuse call on another attribute: each refused before any driver
 * call, nothing made. */
static void test_pool_bad_input(void **state)
{
    (void)state;
    cus_autoptr(cus_context) ctx = NULL;
    cus_autoptr(cus_context) other = NULL;
    assert_ok(cus_context_create(dev0_, CUS_CTX_NO_PUSH, &ctx));
    assert_ok(cus_context_create(dev0_, CUS_CTX_NO_PUSH, &other));
    cus_autoptr(cus_stream) s = NULL;
    cus_autoptr(cus_stream) s_other = NULL;
    assert_ok(cus_stream_create(ctx, 0, 0, &s));
    assert_ok(cus_stream_create(other, 0, 0, &s_other));
    cus_autoptr(cus_pool) plain = NULL;
    cus_autoptr(cus_pool) ipc = NULL;
    cus_pool_options o = {.handle_types = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR};
    assert_ok(cus_pool_create(ctx, NULL, &plain));
    assert_ok(cus_pool_create(ctx, &o, &ipc));
    cus_autoptr(cus_buffer) of_plain = NULL;
    assert_ok(cus_pool_alloc_async(plain, s, 64, &of_plain));
    int fd = -1;
    assert_ok(cus_pool_export(ipc, &fd));
    cus_autoptr(cus_pool) imported = NULL;
    assert_ok(cus_pool_import(ctx, fd, &imported));
    close(fd);
    CUmemPoolPtrExportData data;
    memset(&data, 0, sizeof data);

    unsigned long calls = cus_fake_call_count();
    size_t objects = cus_debug_live_objects();
    cus_buffer *b = NULL;
    cus_pool *p = NULL;
    int out_fd = -1;
    bool on = false;
    assert_status(cus_pool_alloc_async(plain, s, 0, &b), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_import_pointer(imported, &data, 0, &b), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_alloc_async(plain, s_other, 64, &b), CUS_ERROR_CONTEXT_MISMATCH);
    assert_status(cus_pool_export(plain, &out_fd), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_export_pointer(plain, of_plain, &data), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_export_pointer(ipc, of_plain, &data), CUS_ERROR_INVALID_ARGUMENT);
    o.handle_types = CU_MEM_HANDLE_TYPE_FABRIC;
    assert_status(cus_pool_create(ctx, &o, &p), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_import(ctx, -1, &p), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_import_pointer(ipc, &data, 64, &b), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_alloc_async(imported, s, 64, &b), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_set_current(imported), CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_set_reuse(plain, CU_MEMPOOL_ATTR_USED_MEM_HIGH, true),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_status(cus_pool_get_reuse(plain, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &on),
                  CUS_ERROR_INVALID_ARGUMENT);
    assert_int_equal(cus_fake_call_count(), calls);
    assert_int_equal(cus_debug_live_objects(), objects);
    assert_null(b);
    assert_null(p);
    assert_int_equal(out_fd, -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        ENV_TEST(test_null_everywhere),
        ENV_TEST(test_guard_exit_null_is_ignored),
        ENV_TEST(test_zero_sizes),
        ENV_TEST(test_context_calls_in_a_host_function),
        ENV_TEST(test_stream_waits_on_an_event_of_another_context),
        ENV_TEST(test_ipc_refusals),
        ENV_TEST(test_pool_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
