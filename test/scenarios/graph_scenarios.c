/* Scenarios of stream capture and graphs. */
#include "scenarios.h"

const scenario graph_scenarios[] = {{NULL, NULL}};
