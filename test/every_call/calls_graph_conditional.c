/* The table of every_call.h for graph_conditional.h: conditional handles
 * and nodes, each in a graph of its own. */
#include <cuscope/graph_conditional.h>

#include "every_call.h"

static cus_status c_graph_conditional_create(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    CUgraphConditionalHandle h = 0;
    EC_RETURN_OUT(cus_graph_conditional_create(g, 1, true, &h), h != 0);
}

static cus_status c_graph_add_conditional(world *w)
{
    cus_autoptr(cus_graph) g = NULL;
    CUS_TRY(cus_graph_create(w->ctx, &g));
    CUgraphConditionalHandle h = 0;
    CUS_TRY(cus_graph_conditional_create(g, 0, true, &h));
    cus_autoptr(cus_graph) body = NULL;
    cus_graph_node node = {0};
    EC_RETURN_OUT(
        cus_graph_add_conditional(g, NULL, 0, &node, h, CU_GRAPH_COND_TYPE_WHILE, 1, &body),
        body != NULL && node.handle != NULL);
}

const every_call every_calls_graph_conditional[] = {
    {"cus_graph_conditional_create", c_graph_conditional_create, 0, NULL, NULL},
    {"cus_graph_add_conditional", c_graph_add_conditional, EC_RELEASE_LEAVES_2,
     "a graph whose cuGraphDestroy fails keeps its conditional node's body graph (two fake "
     "handles)",
     NULL},
    {NULL, NULL, 0, NULL, NULL},
};
