/* logits and generate: a batch-1 session on the shared model options. */
#include "commands.h"
#include "options.h"
#include "text.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Backend, model and a batch-1 session for `ctx` tokens, from the shared options. */
typedef struct {
    orthros_backend *be;
    orthros_model *m;
    orthros_session *s;
} runner;

static void runner_free(runner *r)
{
    orthros_session_free(r->s);
    orthros_model_free(r->m);
    orthros_backend_free(r->be);
    memset(r, 0, sizeof *r);
}

static int runner_open(runner *r, const orthros_model_opts *mo, const orthros_arch_opts *ao, int ctx)
{
    int rc;
    memset(r, 0, sizeof *r);
    if ((rc = orthros_backend_create(&r->be, mo->device))) return rc;
    if ((rc = orthros_model_load(&r->m, r->be, mo->model, ao, (uint64_t)mo->seed))) goto fail;
    if ((rc = orthros_session_init(&r->s, r->m, 1, ctx, mo->chunk))) goto fail;
    return 0;
fail:
    runner_free(r);
    return rc;
}

/* The prompt: token ids (--tokens, --tokens-file) or text encoded with the model's tokenizer (--prompt,
 * --prompt-file); exactly one. */
typedef struct {
    const char *list, *file, *text, *text_file;
} prompt_opts;

/* The resolved model options and the prompt's token ids. Returns an exit status, or -1 to go on. */
static int prompt_tokens(int32_t **tokens, int *n, orthros_arch_opts *ao, const orthros_cmd *c,
                         const orthros_model_opts *mo, const prompt_opts *p)
{
    if (orthros_model_opts_resolve(ao, mo)) return orthros_cmd_fail_usage(c->name, ORTHROS_EINVAL);
    if ((p->list != NULL) + (p->file != NULL) + (p->text != NULL) + (p->text_file != NULL) != 1)
        return orthros_cmd_usage(c, "give the prompt as one of --tokens, --tokens-file, --prompt, --prompt-file (see --help)");
    if (p->text || p->text_file) {
        int rc = orthros_cli_text_tokens(tokens, n, mo->model, p->text, p->text_file);
        return rc ? orthros_cmd_fail(c->name, rc) : -1;
    }
    int rc = p->list ? orthros_opt_parse_tokens(tokens, n, p->list) : orthros_opt_read_tokens(tokens, n, p->file);
    return rc ? orthros_cmd_fail_usage(c->name, rc) : -1;
}

static void add_prompt_opts(orthros_cmd *c, prompt_opts *p)
{
    orthros_cmd_add(c, "tokens", ORTHROS_OPT_STR, &p->list, "LIST", "prompt token ids, comma-separated");
    orthros_cmd_add(c, "tokens-file", ORTHROS_OPT_STR, &p->file, "FILE",
                    "prompt token ids from a file, separated by commas or white space (long prompts)");
    orthros_cmd_add(c, "prompt", ORTHROS_OPT_STR, &p->text, "TEXT", "prompt text, encoded with the model's tokenizer");
    orthros_cmd_add(c, "prompt-file", ORTHROS_OPT_STR, &p->text_file, "FILE",
                    "prompt text from a file (its bytes), encoded with the model's tokenizer");
}

int orthros_cmd_logits(int argc, char **argv)
{
    const char *cmd = "logits", *out_path = NULL;
    prompt_opts po = {0};
    orthros_model_opts mo;
    orthros_model_opts_default(&mo);
    orthros_cmd c;
    orthros_cmd_init(&c, cmd,
                     "Runs the prompt through the model and writes the logits of every prompt position, each computed as "
                     "its attention kind prescribes (under orthros, positions before the tail are linear-phase outputs).",
                     0);
    orthros_model_opts_add(&c, &mo);
    orthros_model_opts_add_adapter(&c, &mo);
    add_prompt_opts(&c, &po);
    orthros_cmd_add(&c, "out", ORTHROS_OPT_STR, &out_path, "FILE",
                    "write float32 little-endian logits [position][vocab] of every prompt position (required)");
    int pr = orthros_cmd_parse(&c, argc, argv);
    if (pr >= 0) return pr;
    if (!out_path) return orthros_cmd_usage(&c, "--out is required (see --help)");
    int32_t *tokens = NULL;
    int nt = 0, rc = 0, status = 1;
    float *logits = NULL;
    runner r = {0};
    orthros_arch_opts ao;
    if ((pr = prompt_tokens(&tokens, &nt, &ao, &c, &mo, &po)) >= 0) return pr;
    if ((rc = runner_open(&r, &mo, &ao, nt))) goto fail;
    int V = orthros_model_get_config(r.m)->vocab;
    size_t bytes = (size_t)nt * (size_t)V * sizeof(float);
    if (!(logits = malloc(bytes))) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of host memory for %d x %d logits", nt, V);
        goto fail;
    }
    if ((rc = orthros_prefill(r.s, 0, tokens, nt, logits, NULL)) || (rc = orthros_write_file_atomic(out_path, logits, bytes)))
        goto fail;
    fprintf(stderr, "orthros logits: %d positions x %d vocab, arch %s, device %s -> %s\n", nt, V,
            orthros_model_get_arch(r.m)->name, orthros_backend_name(r.be), out_path);
    status = 0;
fail:
    if (status) orthros_cmd_fail(cmd, rc);
    free(logits);
    free(tokens);
    runner_free(&r);
    return status;
}

int orthros_cmd_generate(int argc, char **argv)
{
    const char *cmd = "generate";
    prompt_opts po = {0};
    int max_new = 16;
    orthros_model_opts mo;
    orthros_model_opts_default(&mo);
    orthros_cmd c;
    orthros_cmd_init(&c, cmd,
                     "Greedy generation. The last stdout line is a JSON object {\"generated\": [ids...]}, with \"text\" "
                     "(the decoded continuation, special tokens left out) when the model has a tokenizer, and \"timing\": "
                     "the prefill and the decode, their tokens, seconds and tokens/s (also on stderr).",
                     0);
    orthros_model_opts_add(&c, &mo);
    orthros_model_opts_add_adapter(&c, &mo);
    add_prompt_opts(&c, &po);
    orthros_cmd_add_num(&c, "max-new", ORTHROS_OPT_INT, &max_new, 1, 1 << 24, "N",
                        "tokens to generate greedily (default 16; stops early after an end-of-sequence token)");
    int pr = orthros_cmd_parse(&c, argc, argv);
    if (pr >= 0) return pr;
    int32_t *tokens = NULL, *gen = NULL;
    int nt = 0, rc = 0, status = 1;
    runner r = {0};
    orthros_arch_opts ao;
    if ((pr = prompt_tokens(&tokens, &nt, &ao, &c, &mo, &po)) >= 0) return pr;
    if (nt > INT_MAX - max_new) {
        free(tokens);
        return orthros_cmd_usage(&c, "a %d-token prompt plus --max-new %d is past the longest context", nt, max_new);
    }
    if (!(gen = malloc((size_t)max_new * sizeof *gen))) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        goto fail;
    }
    if ((rc = runner_open(&r, &mo, &ao, nt + max_new))) goto fail;
    double pre_s = 0, dec_s = 0;
    int count = orthros_generate_timed(r.s, tokens, nt, max_new, gen, &pre_s, &dec_s);
    if (count < 0) {
        rc = count;
        goto fail;
    }
    /* How the decode steps ran: the session's decode mode (ORTHROS_DECODE_GRAPHS / ORTHROS_DECODE_FUSED;
     * docs/kernels.md). */
    unsigned modes = orthros_session_decode(r.s);
    orthros_decode_stats ds;
    orthros_session_decode_stats(r.s, &ds);
    char how[160];
    const char *fused = modes & ORTHROS_DECODE_FUSED ? "fused ops, " : "";
    if ((modes & ORTHROS_DECODE_GRAPHS) && (ds.captures || ds.capture_failures))
        snprintf(how, sizeof how, "%sgraphs: %d captured, %ld replays%s", fused, ds.graphs, ds.replays,
                 ds.capture_failures ? ", a capture failed" : "");
    else if (modes & ORTHROS_DECODE_GRAPHS)
        snprintf(how, sizeof how, "%sthe step's inputs in backend memory, uncaptured", fused);
    else snprintf(how, sizeof how, "%s", modes & ORTHROS_DECODE_FUSED ? "fused ops" : "plain step");
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(o, "generated");
    for (int i = 0; i < count; i++) cJSON_AddItemToArray(arr, cJSON_CreateNumber(gen[i]));
    size_t decoded_len = 0;
    char *decoded = orthros_cli_decode_text(mo.model, gen, count, &decoded_len);
    if (decoded) orthros_cli_json_add_text(o, "text", decoded, decoded_len);
    free(decoded);
    /* seconds to the microsecond, rates to a tenth */
    cJSON *tm = cJSON_AddObjectToObject(o, "timing");
    cJSON_AddNumberToObject(tm, "prefill_tokens", nt);
    cJSON_AddNumberToObject(tm, "prefill_s", round(pre_s * 1e6) / 1e6);
    orthros_json_add_num(tm, "prefill_tokens_per_s", pre_s > 0 ? round(nt / pre_s * 10) / 10 : NAN);
    cJSON_AddNumberToObject(tm, "decode_tokens", count - 1);
    cJSON_AddNumberToObject(tm, "decode_s", round(dec_s * 1e6) / 1e6);
    orthros_json_add_num(tm, "decode_tokens_per_s", count > 1 && dec_s > 0 ? round((count - 1) / dec_s * 10) / 10 : NAN);
    fprintf(stderr, "orthros generate: prefill %d tokens in %.3f s (%.1f tokens/s), decode %d tokens in %.3f s", nt, pre_s,
            pre_s > 0 ? nt / pre_s : 0.0, count - 1, dec_s);
    if (count > 1 && dec_s > 0) fprintf(stderr, " (%.1f tokens/s)", (count - 1) / dec_s);
    fprintf(stderr, "; arch %s, %s, device %s\n", orthros_model_get_arch(r.m)->name, how, orthros_backend_name(r.be));
    char *text = cJSON_PrintUnformatted(o);
    printf("%s\n", text ? text : "{}");
    free(text);
    cJSON_Delete(o);
    status = 0;
fail:
    if (status) orthros_cmd_fail(cmd, rc);
    free(gen);
    free(tokens);
    runner_free(&r);
    return status;
}
