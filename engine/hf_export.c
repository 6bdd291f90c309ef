/* The engine's side of `orthros export` (docs/converted-models.md#export): a loaded model's config.json as
 * transformers writes a Llama config, and a model's tokenizer as Hugging Face files (a directory's own, copied;
 * a GGUF's tokenizer.ggml.* metadata written as tokenizer.json and tokenizer_config.json). The weights come from
 * orthros_model_weights / orthros_model_weight_read (model.c). */
#define _GNU_SOURCE
#include "adapter.h"
#include "gguf.h"
#include "json.h"
#include "tokenizer.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The shortest decimal that reads back as f, as a double (so that cJSON prints 1e-05, not 9.99999974737875e-06). */
static double shortest(float f)
{
    char buf[32];
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, (double)f);
        if ((float)strtod(buf, NULL) == f) return strtod(buf, NULL);
    }
    return (double)f;
}

static cJSON *id_or_null(int id) { return id >= 0 ? cJSON_CreateNumber(id) : cJSON_CreateNull(); }

int orthros_model_hf_config(const orthros_model *m, int bos, const char *dtype, char **json)
{
    const orthros_model_config *c = orthros_model_get_config(m);
    *json = NULL;
    /* The file must give the engine (and transformers) the RoPE frequencies the model runs with: a GGUF's linear
     * scaling or rope_freqs factors have no field here. */
    float inv[ORTHROS_MAX_HEAD_DIM / 2];
    orthros_rope_inv_freq(inv, c);
    if (memcmp(inv, orthros_model_rope_inv_freq(m), sizeof(float) * (size_t)(c->head_dim / 2)))
        return orthros_error(ORTHROS_EUNSUPPORTED,
                             "the model's RoPE frequencies (a GGUF's linear scaling or rope_freqs factors) are not those "
                             "of a Llama config.json: not exported");
    cJSON *o = cJSON_CreateObject(), *rp = NULL;
    if (!o) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    cJSON_AddItemToObject(o, "architectures", cJSON_CreateStringArray((const char *[]){"LlamaForCausalLM"}, 1));
    cJSON_AddFalseToObject(o, "attention_bias");
    cJSON_AddNumberToObject(o, "attention_dropout", 0.0);
    cJSON_AddItemToObject(o, "bos_token_id", id_or_null(bos));
    cJSON_AddStringToObject(o, "dtype", dtype);
    if (c->n_eos == 1) {
        cJSON_AddNumberToObject(o, "eos_token_id", c->eos[0]);
    } else if (c->n_eos > 1) {
        cJSON_AddItemToObject(o, "eos_token_id", cJSON_CreateIntArray(c->eos, c->n_eos));
    } else {
        cJSON_AddNullToObject(o, "eos_token_id");
    }
    cJSON_AddNumberToObject(o, "head_dim", c->head_dim);
    cJSON_AddStringToObject(o, "hidden_act", "silu");
    cJSON_AddNumberToObject(o, "hidden_size", c->d_model);
    cJSON_AddNumberToObject(o, "initializer_range", 0.02);
    cJSON_AddNumberToObject(o, "intermediate_size", c->ffn);
    cJSON_AddNumberToObject(o, "max_position_embeddings", c->max_pos);
    cJSON_AddFalseToObject(o, "mlp_bias");
    cJSON_AddStringToObject(o, "model_type", "llama");
    cJSON_AddNumberToObject(o, "num_attention_heads", c->n_heads);
    cJSON_AddNumberToObject(o, "num_hidden_layers", c->n_layers);
    cJSON_AddNumberToObject(o, "num_key_value_heads", c->n_kv_heads);
    cJSON_AddNullToObject(o, "pad_token_id");
    cJSON_AddNumberToObject(o, "pretraining_tp", 1);
    cJSON_AddNumberToObject(o, "rms_norm_eps", shortest(c->norm_eps));
    rp = cJSON_AddObjectToObject(o, "rope_parameters");
    if (c->rope_llama3) {
        cJSON_AddNumberToObject(rp, "factor", c->rope_factor);
        cJSON_AddNumberToObject(rp, "high_freq_factor", c->rope_high_freq_factor);
        cJSON_AddNumberToObject(rp, "low_freq_factor", c->rope_low_freq_factor);
        cJSON_AddNumberToObject(rp, "original_max_position_embeddings", c->rope_orig_max_pos);
    }
    cJSON_AddNumberToObject(rp, "rope_theta", c->rope_theta);
    cJSON_AddStringToObject(rp, "rope_type", c->rope_llama3 ? "llama3" : "default");
    cJSON_AddBoolToObject(o, "tie_word_embeddings", c->tie_embeddings);
    cJSON_AddTrueToObject(o, "use_cache");
    cJSON_AddNumberToObject(o, "vocab_size", c->vocab);
    int rc = 0;
    const char *oj = orthros_model_orthros_json(m);
    if (oj) {
        cJSON *sched = NULL;
        if ((rc = orthros_json_parse(&sched, oj, strlen(oj)))) goto done;
        cJSON_AddItemToObject(o, "orthros", sched);
    }
    if (!(*json = cJSON_Print(o))) rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
done:
    cJSON_Delete(o);
    return rc;
}

/* ---- tokenizers ---- */

/* Valid UTF-8 without NUL: what a JSON string holds. */
static int utf8_ok(const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        if (!len || c == 0 || i + len > n) return 0;
        uint32_t v = len == 1 ? c : c & (0xff >> (len + 1));
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return 0;
            v = v << 6 | (s[i + k] & 0x3f);
        }
        if ((len == 3 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) || (len == 4 && (v < 0x10000 || v > 0x10ffff)))
            return 0;
        i += len;
    }
    return 1;
}

static cJSON *gstr(const orthros_gguf_str *s)
{
    char *z = strndup(s->p, s->len);
    cJSON *j = z ? cJSON_CreateString(z) : NULL;
    free(z);
    return j;
}

typedef struct {
    const orthros_gguf_str *s;
    int32_t id;
} tok_ref;

static int tok_ref_cmp(const void *a, const void *b)
{
    const orthros_gguf_str *x = ((const tok_ref *)a)->s, *y = ((const tok_ref *)b)->s;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->p, y->p, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static int32_t gguf_type(const orthros_gguf_kv *types, int64_t i)
{
    if (!types) return 1;
    const uint8_t *d = types->data + 4 * i;
    return (int32_t)((uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24);
}

/* The TemplateProcessing post-processor of a tokenizer that adds prefix / suffix tokens around a text. */
static cJSON *template_post(const orthros_gguf_kv *toks, int32_t bos, int add_bos, int32_t eos, int add_eos)
{
    cJSON *pp = cJSON_CreateObject(), *single = cJSON_CreateArray(), *pair = cJSON_CreateArray(),
          *specials = cJSON_CreateObject();
    cJSON_AddStringToObject(pp, "type", "TemplateProcessing");
    for (int which = 0; which < 2; which++) {
        cJSON *list = which ? pair : single;
        for (int part = 0; part < 1 + which; part++) {
            const char *seq = part ? "B" : "A";
            int32_t ids[2] = {add_bos ? bos : -1, add_eos ? eos : -1};
            for (int k = 0; k < 3; k++) {
                cJSON *e = cJSON_CreateObject();
                if (k == 1) {
                    cJSON *sq = cJSON_AddObjectToObject(e, "Sequence");
                    cJSON_AddStringToObject(sq, "id", seq);
                    cJSON_AddNumberToObject(sq, "type_id", part);
                } else if (ids[k / 2] >= 0) {
                    cJSON *st = cJSON_AddObjectToObject(e, "SpecialToken");
                    cJSON_AddItemToObject(st, "id", gstr(&toks->strs[ids[k / 2]]));
                    cJSON_AddNumberToObject(st, "type_id", part);
                } else {
                    cJSON_Delete(e);
                    continue;
                }
                cJSON_AddItemToArray(list, e);
            }
        }
    }
    int32_t both[2] = {add_bos ? bos : -1, add_eos ? eos : -1};
    for (int k = 0; k < 2; k++) {
        if (both[k] < 0) continue;
        char *name = strndup(toks->strs[both[k]].p, toks->strs[both[k]].len);
        if (name && !cJSON_GetObjectItemCaseSensitive(specials, name)) {
            cJSON *e = cJSON_AddObjectToObject(specials, name);
            cJSON_AddStringToObject(e, "id", name);
            cJSON_AddItemToObject(e, "ids", cJSON_CreateIntArray(&both[k], 1));
            cJSON_AddItemToObject(e, "tokens", cJSON_CreateStringArray((const char *[]){name}, 1));
        }
        free(name);
    }
    cJSON_AddItemToObject(pp, "single", single);
    cJSON_AddItemToObject(pp, "pair", pair);
    cJSON_AddItemToObject(pp, "special_tokens", specials);
    return pp;
}

static cJSON *bytelevel(int add_prefix_space, int trim_offsets)
{
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "type", "ByteLevel");
    cJSON_AddBoolToObject(b, "add_prefix_space", add_prefix_space);
    cJSON_AddBoolToObject(b, "trim_offsets", trim_offsets);
    cJSON_AddTrueToObject(b, "use_regex");
    return b;
}

/* tokenizer.json and tokenizer_config.json from a GGUF's metadata, for the tokenizer the engine reads from it
 * (byte-level BPE, gpt2 or smollm split, control tokens special, user-defined ones added, unknown bytes dropped). */
static int gguf_tokenizer_files(const orthros_gguf *g, int max_pos, char **tok_json, char **tok_cfg)
{
    orthros_tokenizer *t = NULL;
    int rc = orthros_tokenizer_from_gguf(&t, g);
    if (rc) return rc;
    const orthros_gguf_kv *toks = orthros_gguf_find(g, "tokenizer.ggml.tokens");
    const orthros_gguf_kv *types = orthros_gguf_find(g, "tokenizer.ggml.token_type");
    const orthros_gguf_kv *merges = orthros_gguf_find(g, "tokenizer.ggml.merges");
    int64_t n = (int64_t)toks->n;
    tok_ref *refs = malloc(sizeof *refs * (size_t)n);
    cJSON *root = cJSON_CreateObject(), *cfg = cJSON_CreateObject();
    if (!refs || !root || !cfg) {
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
        goto done;
    }
    /* A vocabulary is a JSON object of strings: every token valid UTF-8, each string once. */
    for (int64_t i = 0; i < n; i++) {
        if (!utf8_ok(toks->strs[i].p, toks->strs[i].len)) {
            rc = orthros_error(ORTHROS_EUNSUPPORTED, "token %lld is not valid UTF-8 text: a tokenizer.json cannot hold it",
                               (long long)i);
            goto done;
        }
        refs[i] = (tok_ref){&toks->strs[i], (int32_t)i};
    }
    qsort(refs, (size_t)n, sizeof *refs, tok_ref_cmp);
    for (int64_t i = 1; i < n; i++)
        if (!tok_ref_cmp(&refs[i - 1], &refs[i])) {
            rc = orthros_error(ORTHROS_EUNSUPPORTED, "tokens %d and %d are the same string: a tokenizer.json cannot hold both",
                               refs[i - 1].id < refs[i].id ? refs[i - 1].id : refs[i].id,
                               refs[i - 1].id < refs[i].id ? refs[i].id : refs[i - 1].id);
            goto done;
        }
    for (uint64_t i = 0; i < merges->n; i++)
        if (!utf8_ok(merges->strs[i].p, merges->strs[i].len)) {
            rc = orthros_error(ORTHROS_EUNSUPPORTED, "merge %llu is not valid UTF-8 text", (unsigned long long)i);
            goto done;
        }
    cJSON_AddStringToObject(root, "version", "1.0");
    cJSON_AddNullToObject(root, "truncation");
    cJSON_AddNullToObject(root, "padding");
    cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
    for (int64_t i = 0; i < n; i++) {
        int32_t ty = gguf_type(types, i);
        if ((ty != 3 && ty != 4) || toks->strs[i].len == 0) continue;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "id", (double)i);
        cJSON_AddItemToObject(e, "content", gstr(&toks->strs[i]));
        cJSON_AddFalseToObject(e, "single_word");
        cJSON_AddFalseToObject(e, "lstrip");
        cJSON_AddFalseToObject(e, "rstrip");
        cJSON_AddFalseToObject(e, "normalized");
        cJSON_AddBoolToObject(e, "special", ty == 3);
        cJSON_AddItemToArray(added, e);
    }
    cJSON_AddNullToObject(root, "normalizer");
    cJSON *pre = bytelevel(0, 1);
    if (!strcmp(orthros_tokenizer_pre(t), "smollm")) {
        cJSON *seq = cJSON_CreateObject(), *list = cJSON_CreateArray(), *digits = cJSON_CreateObject();
        cJSON_AddStringToObject(seq, "type", "Sequence");
        cJSON_AddStringToObject(digits, "type", "Digits");
        cJSON_AddTrueToObject(digits, "individual_digits");
        cJSON_AddItemToArray(list, digits);
        cJSON_AddItemToArray(list, pre);
        cJSON_AddItemToObject(seq, "pretokenizers", list);
        pre = seq;
    }
    cJSON_AddItemToObject(root, "pre_tokenizer", pre);
    int add_bos = 0, add_eos = 0;
    orthros_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &add_bos); /* checked by orthros_tokenizer_from_gguf */
    orthros_gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &add_eos);
    int32_t bos = orthros_tokenizer_bos(t), eos = orthros_tokenizer_eos(t);
    add_bos = add_bos && bos >= 0;
    add_eos = add_eos && eos >= 0;
    cJSON_AddItemToObject(root, "post_processor", add_bos || add_eos ? template_post(toks, bos, add_bos, eos, add_eos)
                                                                     : bytelevel(1, 0));
    cJSON_AddItemToObject(root, "decoder", bytelevel(1, 1));
    cJSON *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddNullToObject(model, "dropout");
    cJSON_AddNullToObject(model, "unk_token"); /* the engine drops bytes without a token, as HF does without one */
    cJSON_AddNullToObject(model, "continuing_subword_prefix");
    cJSON_AddNullToObject(model, "end_of_word_suffix");
    cJSON_AddFalseToObject(model, "fuse_unk");
    cJSON_AddFalseToObject(model, "byte_fallback");
    cJSON_AddFalseToObject(model, "ignore_merges");
    cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
    for (int64_t i = 0; i < n; i++) {
        char *name = strndup(toks->strs[i].p, toks->strs[i].len);
        if (!name) {
            rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
            goto done;
        }
        cJSON_AddNumberToObject(vocab, name, (double)i);
        free(name);
    }
    cJSON *ml = cJSON_AddArrayToObject(model, "merges");
    for (uint64_t i = 0; i < merges->n; i++) {
        const orthros_gguf_str *s = &merges->strs[i];
        const char *sp = memchr(s->p, ' ', s->len); /* orthros_tokenizer_from_gguf checked every merge has one */
        orthros_gguf_str a = {s->p, (size_t)(sp - s->p)}, b = {sp + 1, s->len - (size_t)(sp - s->p) - 1};
        cJSON *pairj = cJSON_CreateArray();
        cJSON_AddItemToArray(pairj, gstr(&a));
        cJSON_AddItemToArray(pairj, gstr(&b));
        cJSON_AddItemToArray(ml, pairj);
    }
    /* tokenizer_config.json: the special tokens by their text, the chat template. */
    cJSON_AddStringToObject(cfg, "tokenizer_class", "PreTrainedTokenizerFast");
    static const char *const keys[] = {"bos_token", "eos_token", "unk_token", "pad_token"};
    int32_t ids[] = {bos, eos, orthros_tokenizer_unk(t), orthros_tokenizer_pad(t)};
    for (int k = 0; k < 4; k++)
        if (ids[k] >= 0) cJSON_AddItemToObject(cfg, keys[k], gstr(&toks->strs[ids[k]]));
    cJSON_AddBoolToObject(cfg, "add_bos_token", add_bos);
    cJSON_AddBoolToObject(cfg, "add_eos_token", add_eos);
    if (orthros_tokenizer_chat_template(t)) cJSON_AddStringToObject(cfg, "chat_template", orthros_tokenizer_chat_template(t));
    cJSON_AddFalseToObject(cfg, "clean_up_tokenization_spaces");
    cJSON_AddNumberToObject(cfg, "model_max_length", max_pos);
    if (!(*tok_json = cJSON_PrintUnformatted(root)) || !(*tok_cfg = cJSON_Print(cfg))) {
        free(*tok_json);
        *tok_json = NULL;
        rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
    }
done:
    free(refs);
    cJSON_Delete(root);
    cJSON_Delete(cfg);
    orthros_tokenizer_free(t);
    return rc;
}

/* A file of a model directory read whole when it exists (*text NULL when it does not). */
static int read_optional(char **text, const char *dir, const char *name)
{
    char path[4400];
    struct stat sb;
    *text = NULL;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return orthros_error(ORTHROS_EINVAL, "%.64s...: the path is too long", dir);
    if (stat(path, &sb) != 0) return 0;
    return orthros_read_text_file(text, path, 256u << 20);
}

int orthros_tokenizer_hf_files(const char *spec, int max_pos, char **tok_json, char **tok_cfg, int *generated)
{
    *tok_json = *tok_cfg = NULL;
    *generated = 0;
    if (!strncmp(spec, "preset:", 7)) return 0;
    char *base = NULL;
    int rc = orthros_adapter_dir_base(spec, &base);
    if (rc) return rc;
    if (base) spec = base;
    struct stat sb;
    if (stat(spec, &sb) != 0) {
        rc = orthros_error(ORTHROS_EIO, "%s: no such file or directory", spec);
    } else if (S_ISDIR(sb.st_mode)) {
        /* A directory's own files, as they are: what the engine and transformers read from it. */
        if (!(rc = read_optional(tok_json, spec, "tokenizer.json")) && *tok_json)
            rc = read_optional(tok_cfg, spec, "tokenizer_config.json");
    } else {
        orthros_gguf *g = NULL;
        if (!(rc = orthros_gguf_open(&g, spec)) && orthros_gguf_find(g, "tokenizer.ggml.model")) {
            rc = gguf_tokenizer_files(g, max_pos, tok_json, tok_cfg);
            if (rc) rc = orthros_error_prefix(rc, spec);
            *generated = 1;
        }
        orthros_gguf_free(g);
    }
    if (rc) {
        free(*tok_json);
        free(*tok_cfg);
        *tok_json = *tok_cfg = NULL;
    }
    free(base);
    return rc;
}
