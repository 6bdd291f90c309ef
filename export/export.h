/* orthros export: any model the engine loads (a Hugging Face directory, a GGUF, a preset, an adapter) written as a
 * Hugging Face directory of the weights the cpu backend runs (docs/converted-models.md#export). */
#ifndef ORTHROS_EXPORT_H
#define ORTHROS_EXPORT_H

/* orthros export --model M --out DIR [--dtype f32|bf16] [--force] [--adapter FILE] [schedule options] */
int orthros_cmd_export(int argc, char **argv);

#endif
