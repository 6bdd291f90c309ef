#include "text_eval.h"
int orthros_cmd_eval_recall(int argc, char **argv) { return orthros_error(ORTHROS_EUNSUPPORTED, "not yet"); }
