/* The process-wide count of live cuscope objects (diagnostics, and the guard
 * that keeps cus_driver_install() from swapping the driver under them). */
#include "internal.h"

atomic_size_t cus_live_objects_;

CUS_API size_t cus_debug_live_objects(void)
{
    return atomic_load_explicit(&cus_live_objects_, memory_order_relaxed);
}
