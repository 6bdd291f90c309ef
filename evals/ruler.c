/* placeholder while building */
#include "text_eval.h"
int orthros_cmd_eval_ruler(int argc, char **argv) { return orthros_error(ORTHROS_EUNSUPPORTED, "not yet"); }
