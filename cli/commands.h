/* The model-running commands of the orthros binary that are not a harness of their own (cli/run.c). */
#ifndef ORTHROS_CLI_COMMANDS_H
#define ORTHROS_CLI_COMMANDS_H

/* orthros logits: the logits of every prompt position to a float32 file. */
int orthros_cmd_logits(int argc, char **argv);
/* orthros generate: greedy generation, JSON on the last stdout line. */
int orthros_cmd_generate(int argc, char **argv);

#endif
