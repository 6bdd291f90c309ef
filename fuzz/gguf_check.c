/* The GGUF loader's whole path over one buffer, for the fuzz target `gguf` (result_targets.c) and the tests of
 * engine/tests/test_gguf.c: parse, model config, tokenizer (when the metadata has one) with a sample encode and
 * decode, dequantisation of every tensor of a supported type, and the RoPE adjustments. */
#include "targets.h"

#include "gguf.h"
#include "tokenizer.h"

#include <stdlib.h>

int orthros_fuzz_gguf_check_buffer(const void *data, size_t size)
{
    orthros_gguf *g = NULL;
    orthros_tokenizer *tok = NULL;
    orthros_model_config cfg;
    float *buf = NULL;
    int rc = orthros_gguf_parse_buffer(&g, data, size, "fuzz");
    if (rc) return rc;
    int rc_cfg = orthros_gguf_model_config(&cfg, g);
    if (orthros_gguf_find(g, "tokenizer.ggml.model")) {
        if (!orthros_tokenizer_from_gguf(&tok, g)) {
            int32_t *ids = NULL;
            int n = 0;
            static const char sample[] = "Hello, world! 12345 \xe4\xbd\xa0\xe5\xa5\xbd \xff<|im_end|>  \n\t x";
            if (!orthros_tokenizer_encode(tok, sample, sizeof sample - 1, ORTHROS_TOK_ADD_SPECIAL, &ids, &n)) {
                char *text = NULL;
                size_t len = 0;
                if (!orthros_tokenizer_decode(tok, ids, n, 0, &text, &len)) free(text);
                free(ids);
            }
            orthros_tokenizer_free(tok);
        }
    }
    for (int64_t i = 0; i < g->n_tensors; i++) {
        const orthros_gguf_tensor *t = &g->tensors[i];
        if (!orthros_ggml_type_supported(t->type)) continue;
        float *nb = realloc(buf, orthros_gguf_numel(t) * sizeof *buf);
        if (!nb) {
            rc = orthros_error(ORTHROS_ENOMEM, "out of memory");
            break;
        }
        buf = nb;
        orthros_gguf_dequantize(buf, t);
    }
    if (!rc && !rc_cfg) {
        float inv[ORTHROS_MAX_HEAD_DIM / 2] = {0};
        orthros_rope_inv_freq(inv, &cfg);
        rc_cfg = orthros_gguf_rope_adjust(inv, cfg.head_dim / 2, g);
    }
    free(buf);
    orthros_gguf_free(g);
    return rc ? rc : rc_cfg;
}
