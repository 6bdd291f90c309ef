/* SmolLM2-135M-Instruct (the GGUF that ci/fetch-model.sh fetches) against Hugging Face transformers loading the
 * same file (data/text/smollm2-parity.json, made by data/make_text_refs.py parity): the file's facts, the prompts'
 * ids from our tokenizer, the top-16 logits of every prompt position on the cpu backend within 1e-3 of the row's
 * scale, and the greedy continuation (ids and decoded text) equal.
 * usage: test_text_model MODEL.gguf PARITY.json
 * A missing model fails the test under CI=true and skips it (exit 77) elsewhere. */
#define _GNU_SOURCE
#include "gguf.h"
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TOL 1e-3

static void check_facts(const char *path)
{
    orthros_gguf *g = NULL;
    int rc = orthros_gguf_open(&g, path);
    CHECK(rc == 0, "%s", orthros_last_error());
    if (rc) return;
    orthros_model_config c;
    rc = orthros_gguf_model_config(&c, g);
    CHECK(rc == 0, "config: %s", orthros_last_error());
    CHECK(c.n_layers == 30 && c.d_model == 576 && c.n_heads == 9 && c.n_kv_heads == 3 && c.head_dim == 64 &&
              c.vocab == 49152 && c.ffn == 1536 && c.tie_embeddings && c.rope_theta == 100000.0 && c.max_pos == 8192 &&
              fabsf(c.norm_eps - 1e-5f) < 1e-9f && c.n_eos == 1 && c.eos[0] == 2,
          "SmolLM2's config: %d layers, D %d, %d/%d heads, d %d, V %d, F %d, tied %d, theta %g, ctx %d", c.n_layers,
          c.d_model, c.n_heads, c.n_kv_heads, c.head_dim, c.vocab, c.ffn, c.tie_embeddings, c.rope_theta, c.max_pos);
    int q41 = 0, f32 = 0, other = 0;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        const orthros_gguf_tensor *t = &g->tensors[i];
        if (t->type == ORTHROS_GGML_Q4_1 && t->ndim == 2) q41++;
        else if (t->type == ORTHROS_GGML_F32 && t->ndim == 1 && strstr(t->name, "norm")) f32++;
        else if (!(t->type == ORTHROS_GGML_Q8_0 && !strcmp(t->name, "token_embd.weight"))) other++;
    }
    CHECK(g->version == 3 && g->n_tensors == 272 && q41 == 210 && f32 == 61 && other == 0 &&
              orthros_gguf_find_tensor(g, "token_embd.weight")->type == ORTHROS_GGML_Q8_0,
          "tensor types: v%u, %lld tensors, %d Q4_1 matrices, %d F32 norms, %d others", g->version,
          (long long)g->n_tensors, q41, f32, other);
    printf("facts: GGUF v%u, %lld tensors (%d Q4_1 matrices, Q8_0 token_embd, %d F32 norms), %d layers, hidden %d, "
           "%d/%d heads of %d, vocab %d, tied, theta %g, context %d\n",
           g->version, (long long)g->n_tensors, q41, f32, c.n_layers, c.d_model, c.n_heads, c.n_kv_heads, c.head_dim,
           c.vocab, c.rope_theta, c.max_pos);
    orthros_gguf_free(g);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_text_model MODEL.gguf PARITY.json\n");
        return 2;
    }
    struct stat sb;
    if (stat(argv[1], &sb) != 0) {
        if (tu_under_ci()) {
            fprintf(stderr, "FAIL: %s is missing under CI (ci/test.sh runs ci/fetch-model.sh first)\n", argv[1]);
            return 1;
        }
        printf("SKIP: %s is missing (run ci/fetch-model.sh)\n", argv[1]);
        return 77;
    }
    check_facts(argv[1]);
    cJSON *ref = tu_load_json(argv[2]);
    CHECK(ref != NULL, "cannot read %s", argv[2]);
    if (!ref) return tu_finish();
    orthros_backend *be = NULL;
    orthros_model *m = NULL;
    orthros_tokenizer *tok = NULL;
    orthros_arch_opts ao;
    orthros_arch_opts_default(&ao);
    orthros_backend_cpu_create(&be);
    int rc = orthros_model_load(&m, be, argv[1], &ao, 0);
    CHECK(rc == 0, "load: %s", orthros_last_error());
    rc = rc ? rc : orthros_tokenizer_load(&tok, argv[1]);
    CHECK(rc == 0, "tokenizer: %s", orthros_last_error());
    int topk = cJSON_GetObjectItem(ref, "topk")->valueint, max_new = cJSON_GetObjectItem(ref, "max_new")->valueint;
    const cJSON *p;
    double worst = 0;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(ref, "prompts"))
    {
        if (rc) break;
        const char *text = cJSON_GetObjectItem(p, "text")->valuestring;
        int n_want = 0;
        int32_t *want_ids = tu_json_ints(cJSON_GetObjectItem(p, "ids"), &n_want);
        int32_t *ids = NULL, *gen = NULL;
        int n = 0;
        CHECK(orthros_tokenizer_encode(tok, text, strlen(text), ORTHROS_TOK_ADD_SPECIAL, &ids, &n) == 0, "encode");
        int same = want_ids && n == n_want;
        for (int i = 0; same && i < n; i++) same = ids[i] == want_ids[i];
        CHECK(same, "\"%.30s\": our %d ids differ from HF's %d", text, n, n_want);
        free(want_ids);
        const int V = 49152;
        float *logits = malloc((size_t)n * V * sizeof *logits);
        gen = malloc((size_t)max_new * sizeof *gen);
        orthros_session *s = NULL;
        rc = orthros_session_init(&s, m, 1, n + max_new, 0);
        CHECK(rc == 0, "session: %s", orthros_last_error());
        if (!rc) rc = orthros_prefill(s, 0, ids, n, logits, NULL);
        CHECK(rc == 0, "prefill: %s", orthros_last_error());
        double prompt_worst = 0;
        for (int pos = 0; !rc && pos < n; pos++) {
            int nk = 0, nl = 0;
            int32_t *tid = tu_json_ints(cJSON_GetArrayItem(cJSON_GetObjectItem(p, "top_ids"), pos), &nk);
            double *tl = tu_json_nums(cJSON_GetArrayItem(cJSON_GetObjectItem(p, "top_logits"), pos), &nl);
            CHECK(tid && tl && nk == topk && nl == topk, "\"%.30s\", position %d: not %d top ids and logits", text, pos,
                  topk);
            double scale = 1.0;
            for (int k = 0; tl && k < nl; k++) scale = fmax(scale, fabs(tl[k]));
            for (int k = 0; tid && tl && k < nk && k < nl; k++) {
                double err = fabs(logits[(size_t)pos * V + tid[k]] - tl[k]) / scale;
                prompt_worst = fmax(prompt_worst, err);
            }
            free(tid), free(tl);
        }
        CHECK(prompt_worst <= TOL, "\"%.30s\": top-%d logits differ from transformers by %.2e of the row's scale (> %g)",
              text, topk, prompt_worst, TOL);
        worst = fmax(worst, prompt_worst);
        if (!rc) orthros_session_reset(s);
        int count = rc ? 0 : orthros_generate(s, ids, n, max_new, gen);
        int n_gen = 0;
        int32_t *want_gen = tu_json_ints(cJSON_GetObjectItem(p, "generated"), &n_gen);
        same = want_gen && count == n_gen;
        for (int i = 0; same && i < count; i++) same = gen[i] == want_gen[i];
        CHECK(same, "\"%.30s\": greedy continuation differs from transformers' (%d vs %d tokens)", text, count, n_gen);
        free(want_gen);
        char *out = NULL;
        size_t olen = 0;
        if (count > 0 && !orthros_tokenizer_decode(tok, gen, count, ORTHROS_TOK_SKIP_SPECIAL | ORTHROS_TOK_LOSSY, &out, &olen))
            CHECK(!strcmp(out, cJSON_GetObjectItem(p, "generated_text")->valuestring),
                  "\"%.30s\": decoded continuation \"%s\" differs", text, out);
        printf("%3d tokens, top-%d logits within %.2e, greedy: \"%s\"\n", n, topk, prompt_worst, out ? out : "");
        free(out);
        orthros_session_free(s);
        free(logits);
        free(gen);
        free(ids);
    }
    printf("worst logit difference %.2e of the row's scale (tolerance %g)\n", worst, TOL);
    orthros_tokenizer_free(tok);
    orthros_model_free(m);
    orthros_backend_free(be);
    cJSON_Delete(ref);
    return tu_finish();
}
