/* Scenarios with the kernels of kernels/: modules, functions, launches.
 * On the fake driver the kernels run as their host twins (harness/twins.c). */
#include "scenarios.h"

const scenario module_scenarios[] = {{NULL, NULL}};
