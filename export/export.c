/* orthros export (export.h): the model is loaded on the cpu backend (fp32, one rank), its weights read back under
 * their Hugging Face names (orthros_model_weights: the fused q/k/v and gate/up split back, adapters merged, a GGUF
 * dequantised) and written with config.json and the tokenizer's files into a temporary folder beside DIR, which
 * then takes DIR's place by a rename. */
#define _GNU_SOURCE
#include "export.h"

#include "options.h"
#include "orthros.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    orthros_model_opts mo;
    const char *out, *dtype;
    int force;
} export_opts;

/* ---- the output folder ---- */

/* What DIR holds now: 0 (missing or empty), 1 (only regular files, which --force may replace); an error when it is
 * not a folder, or holds anything but regular files (never replaced, even with --force). */
static int out_state(const char *dir, int *nonempty)
{
    struct stat sb;
    *nonempty = 0;
    if (lstat(dir, &sb) != 0) return errno == ENOENT ? 0 : orthros_error(ORTHROS_EIO, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) return orthros_error(ORTHROS_EIO, "%s: exists and is not a folder", dir);
    DIR *d = opendir(dir);
    if (!d) return orthros_error(ORTHROS_EIO, "%s: cannot read the folder: %s", dir, strerror(errno));
    struct dirent *e;
    int rc = 0;
    char path[PATH_MAX];
    while (!rc && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        *nonempty = 1;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
            rc = orthros_error(ORTHROS_EIO, "%s: holds %s, which is not a regular file: not replaced, even with --force",
                               dir, e->d_name);
    }
    closedir(d);
    return rc;
}

/* Removes a folder of regular files (a temporary export, or the export it replaced). */
static void remove_files_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[PATH_MAX];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(dir);
}

static void sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* A fresh folder beside `out` (same file system, so that it can be renamed into place): PARENT/.NAME.WHAT-XXXXXX. */
static char *sibling_dir(const char *out, const char *what)
{
    char *a = strdup(out), *b = strdup(out), *p = NULL;
    if (a && b && asprintf(&p, "%s/.%s.%s-XXXXXX", dirname(a), basename(b), what) >= 0) {
        if (mkdtemp(p)) {
            /* mkdtemp makes it 0700; the export is as readable as any folder the user makes. */
            mode_t um = umask(0);
            umask(um);
            chmod(p, 0777 & ~um);
        } else {
            free(p);
            p = NULL;
        }
    }
    free(a);
    free(b);
    return p;
}

/* tmp takes out's place; an earlier export there (regular files only, checked) is removed after the rename. */
static int move_into_place(const char *tmp, const char *out)
{
    int nonempty = 0, rc = out_state(out, &nonempty);
    if (rc) return rc;
    struct stat sb;
    char *old = NULL;
    if (lstat(out, &sb) == 0) {
        if (!(old = sibling_dir(out, "old")))
            return orthros_error(ORTHROS_EIO, "%s: cannot make a folder beside it: %s", out, strerror(errno));
        if (rename(out, old) != 0) { /* onto the empty folder just made */
            rc = orthros_error(ORTHROS_EIO, "%s: cannot move it aside: %s", out, strerror(errno));
            rmdir(old);
            free(old);
            return rc;
        }
    }
    if (rename(tmp, out) != 0) {
        rc = orthros_error(ORTHROS_EIO, "%s: cannot rename the export into place: %s", out, strerror(errno));
        if (old && rename(old, out) != 0) fprintf(stderr, "orthros export: the old %s is at %s\n", out, old);
        free(old);
        return rc;
    }
    char *parent = strdup(out);
    if (parent) sync_dir(dirname(parent));
    free(parent);
    if (old) remove_files_dir(old);
    free(old);
    return 0;
}

/* ---- model.safetensors ---- */

static size_t info_numel(const orthros_weight_info *w)
{
    size_t n = 1;
    for (int i = 0; i < w->ndim; i++) n *= (size_t)w->shape[i];
    return n;
}

/* The weights, in load order, F32 or BF16 (rounded to nearest even), the header padded to 8 bytes as the
 * safetensors library writes it. Written tensor by tensor: one tensor in host memory at a time. */
static int write_weights(const char *path, orthros_model *m, const orthros_weight_info *w, int n, int bf16)
{
    size_t esz = bf16 ? 2 : 4, off = 0;
    cJSON *hdr = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(hdr, "__metadata__");
    cJSON_AddStringToObject(meta, "format", "pt");
    for (int i = 0; i < n; i++) {
        cJSON *e = cJSON_AddObjectToObject(hdr, w[i].name);
        cJSON_AddStringToObject(e, "dtype", bf16 ? "BF16" : "F32");
        cJSON *shape = cJSON_AddArrayToObject(e, "shape");
        for (int k = 0; k < w[i].ndim; k++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)w[i].shape[k]));
        size_t bytes = info_numel(&w[i]) * esz;
        cJSON *offs = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(off + bytes)));
        off += bytes;
    }
    char *text = cJSON_PrintUnformatted(hdr);
    cJSON_Delete(hdr);
    if (!text) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    size_t hlen = strlen(text), padded = (hlen + 7) / 8 * 8;
    int rc = 0, fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    float *x = NULL;
    uint16_t *h = NULL;
    if (fd < 0) {
        free(text);
        return orthros_error(ORTHROS_EIO, "%s: cannot create: %s", path, strerror(errno));
    }
    uint8_t len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    if (orthros_write_all(fd, len8, 8) || orthros_write_all(fd, text, hlen) || orthros_write_all(fd, "        ", padded - hlen))
        rc = orthros_error(ORTHROS_EIO, "%s: write failed: %s", path, strerror(errno));
    for (int i = 0; !rc && i < n; i++) {
        size_t numel = info_numel(&w[i]);
        float *nx = realloc(x, numel * sizeof *x);
        uint16_t *nh = bf16 ? realloc(h, numel * sizeof *h) : h;
        if (nx) x = nx;
        if (nh) h = nh;
        if (!nx || (bf16 && !nh)) {
            rc = orthros_error(ORTHROS_ENOMEM, "out of host memory for %s", w[i].name);
            break;
        }
        if ((rc = orthros_model_weight_read(m, w[i].name, x))) break;
        if (bf16)
            for (size_t k = 0; k < numel; k++) h[k] = orthros_f32_to_bf16(x[k]);
        if (orthros_write_all(fd, bf16 ? (const void *)h : (const void *)x, numel * esz))
            rc = orthros_error(ORTHROS_EIO, "%s: write failed: %s", path, strerror(errno));
    }
    if (!rc && fsync(fd) != 0) rc = orthros_error(ORTHROS_EIO, "%s: write failed: %s", path, strerror(errno));
    if (close(fd) != 0 && !rc) rc = orthros_error(ORTHROS_EIO, "%s: write failed: %s", path, strerror(errno));
    free(x);
    free(h);
    free(text);
    return rc;
}

/* ---- config.json and the tokenizer ---- */

/* The exported tokenizer must be, for the engine, the model's own: same tokens (bytes and special flags), special
 * ids, chat template, and the same ids for a sample text (what it adds around a text included). */
static int check_tokenizer(const char *model, const char *dir)
{
    orthros_tokenizer *a = NULL, *b = NULL;
    int32_t *ia = NULL, *ib = NULL;
    int na = 0, nb = 0;
    int rc = orthros_tokenizer_load(&a, model);
    if (!rc && (rc = orthros_tokenizer_load(&b, dir))) rc = orthros_error_prefix(rc, "the exported tokenizer");
    const char *why = NULL;
    if (!rc) {
        int V = orthros_tokenizer_vocab_size(a);
        if (V != orthros_tokenizer_vocab_size(b)) why = "the vocabulary size";
        for (int32_t i = 0; !why && i < V; i++) {
            size_t la = 0, lb = 0;
            const char *pa = orthros_tokenizer_token_bytes(a, i, &la), *pb = orthros_tokenizer_token_bytes(b, i, &lb);
            if (la != lb || memcmp(pa, pb, la) || orthros_tokenizer_is_special(a, i) != orthros_tokenizer_is_special(b, i))
                why = "a token";
        }
        if (!why && (orthros_tokenizer_bos(a) != orthros_tokenizer_bos(b) || orthros_tokenizer_eos(a) != orthros_tokenizer_eos(b) ||
                     orthros_tokenizer_unk(a) != orthros_tokenizer_unk(b) || orthros_tokenizer_pad(a) != orthros_tokenizer_pad(b)))
            why = "a special token id";
        const char *ta = orthros_tokenizer_chat_template(a), *tb = orthros_tokenizer_chat_template(b);
        if (!why && ((ta == NULL) != (tb == NULL) || (ta && strcmp(ta, tb)))) why = "the chat template";
        static const char sample[] = "Hello, world! 12345 \xe4\xbd\xa0\xe5\xa5\xbd  \n\t x's <|im_end|>";
        if (!why && !(rc = orthros_tokenizer_encode(a, sample, sizeof sample - 1, ORTHROS_TOK_ADD_SPECIAL, &ia, &na)) &&
            !(rc = orthros_tokenizer_encode(b, sample, sizeof sample - 1, ORTHROS_TOK_ADD_SPECIAL, &ib, &nb)) &&
            (na != nb || memcmp(ia, ib, (size_t)na * sizeof *ia)))
            why = "the ids of a sample text";
    }
    if (!rc && why) rc = orthros_error(ORTHROS_EFORMAT, "the exported tokenizer differs from the model's in %s", why);
    free(ia);
    free(ib);
    orthros_tokenizer_free(a);
    orthros_tokenizer_free(b);
    return rc;
}

/* config.json: the engine's Llama fields and `orthros` object, with the schedule options given here written into
 * that object (so that the export loads under the schedule it was exported with). */
static int config_text(char **out, orthros_model *m, const export_opts *o, int bos)
{
    char *text = NULL;
    int rc = orthros_model_hf_config(m, bos, strcmp(o->dtype, "bf16") ? "float32" : "bfloat16", &text);
    if (rc) return rc;
    const orthros_model_opts *mo = &o->mo;
    int given = mo->arch || mo->feature_map || mo->feature_dim != -1 || mo->tail != -1 || mo->window != -1 ||
                mo->hybrid_every != -1 || mo->eps != -1.0;
    if (!given) {
        *out = text;
        return 0;
    }
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    cJSON *sched = cJSON_GetObjectItemCaseSensitive(root, "orthros");
    if (!sched) sched = cJSON_AddObjectToObject(root, "orthros");
#define SET(key, item)                                                                                                 \
    do {                                                                                                               \
        cJSON_DeleteItemFromObjectCaseSensitive(sched, key);                                                           \
        cJSON_AddItemToObject(sched, key, item);                                                                       \
    } while (0)
    if (mo->arch) SET("architecture", cJSON_CreateString(mo->arch));
    if (mo->feature_map) SET("feature_map", cJSON_CreateString(mo->feature_map));
    if (mo->feature_dim != -1) SET("feature_dim", cJSON_CreateNumber(mo->feature_dim));
    if (mo->tail != -1) SET("tail", cJSON_CreateNumber(mo->tail));
    if (mo->window != -1) SET("window", cJSON_CreateNumber(mo->window));
    if (mo->hybrid_every != -1) SET("hybrid_every", cJSON_CreateNumber(mo->hybrid_every));
    if (mo->eps != -1.0) SET("eps", cJSON_CreateNumber(mo->eps));
#undef SET
    *out = cJSON_Print(root);
    cJSON_Delete(root);
    return *out ? 0 : orthros_error(ORTHROS_ENOMEM, "out of memory");
}

static int write_text(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return orthros_error(ORTHROS_EINVAL, "%s: the path is too long", dir);
    return orthros_write_file_atomic(path, text, strlen(text));
}

/* ---- the command ---- */

static int export_model(const export_opts *o, const orthros_arch_opts *ao, const char *tmp)
{
    orthros_backend *be = NULL;
    orthros_model *m = NULL;
    orthros_weight_info *w = NULL;
    char *tok_json = NULL, *tok_cfg = NULL, *cfg = NULL, path[PATH_MAX];
    int n = 0, bos = -1, generated = 0, rc;
    if ((rc = orthros_backend_create(&be, "cpu")) || (rc = orthros_model_load(&m, be, o->mo.model, ao, (uint64_t)o->mo.seed)) ||
        (rc = orthros_model_weights(m, &w, &n)))
        goto done;
    if ((rc = orthros_tokenizer_hf_files(o->mo.model, orthros_model_get_config(m)->max_pos, &tok_json, &tok_cfg,
                                         &generated)))
        goto done;
    if (tok_json) {
        /* Files written from a GGUF's metadata are checked against the GGUF's tokenizer; a directory's are copied
         * as they are (even a tokenizer the engine cannot read: then config.json has no bos_token_id). */
        if ((rc = write_text(tmp, "tokenizer.json", tok_json)) ||
            (tok_cfg && (rc = write_text(tmp, "tokenizer_config.json", tok_cfg))) ||
            (generated && (rc = check_tokenizer(o->mo.model, tmp))))
            goto done;
        orthros_tokenizer *t = NULL;
        if (!orthros_tokenizer_load(&t, tmp)) bos = orthros_tokenizer_bos(t);
        orthros_tokenizer_free(t);
    }
    if ((rc = config_text(&cfg, m, o, bos)) || (rc = write_text(tmp, "config.json", cfg))) goto done;
    snprintf(path, sizeof path, "%s/model.safetensors", tmp);
    rc = write_weights(path, m, w, n, !strcmp(o->dtype, "bf16"));
    if (!rc) {
        sync_dir(tmp);
        fprintf(stderr, "orthros export: %d tensors (%s) of %s%s%s, %stokenizer -> %s\n", n, o->dtype, o->mo.model,
                o->mo.adapter ? " + " : "", o->mo.adapter ? o->mo.adapter : "", tok_json ? "" : "no ", o->out);
    }
done:
    free(tok_json);
    free(tok_cfg);
    free(cfg);
    free(w);
    orthros_model_free(m);
    orthros_backend_free(be);
    return rc;
}

int orthros_cmd_export(int argc, char **argv)
{
    const char *cmd = "export";
    export_opts o = {.dtype = "f32"};
    orthros_model_opts_default(&o.mo);
    o.mo.model = NULL;
    o.mo.device = "cpu";
    orthros_model_opts *mo = &o.mo;
    orthros_cmd c;
    orthros_cmd_init(&c, cmd,
                     "Writes a Hugging Face directory (config.json with the orthros object when the model has one, "
                     "model.safetensors of the weights the cpu backend runs, tokenizer.json and tokenizer_config.json "
                     "when the model has a tokenizer) from any model the engine loads: a directory, a GGUF "
                     "(dequantised), a preset, an adapter. See docs/converted-models.md#export.",
                     0);
    orthros_cmd_add(&c, "model", ORTHROS_OPT_STR, &mo->model, "DIR|FILE.gguf|preset:NAME",
                    "the model to export (required); an adapter directory exports its base with the adapter merged");
    orthros_model_opts_add_adapter(&c, mo);
    orthros_cmd_add(&c, "out", ORTHROS_OPT_STR, &o.out, "DIR", "the folder to write (required; made atomically)");
    orthros_cmd_add(&c, "dtype", ORTHROS_OPT_STR, &o.dtype, "f32|bf16",
                    "dtype of model.safetensors (default f32: the cpu backend's weights bit for bit)");
    orthros_cmd_add(&c, "force", ORTHROS_OPT_FLAG, &o.force, NULL,
                    "replace a DIR that is not empty (one of regular files only, as an earlier export)");
    orthros_cmd_add_num(&c, "seed", ORTHROS_OPT_INT, &mo->seed, 0, INT_MAX, "S", "seed of preset weights (default 1)");
    orthros_cmd_add(&c, "arch", ORTHROS_OPT_STR, &mo->arch, "ARCH",
                    "schedule written into the orthros object: transformer|orthros|linear|swa|hybrid");
    orthros_cmd_add(&c, "feature-map", ORTHROS_OPT_STR, &mo->feature_map, "FM", "elu1|relu|hedgehog (into the orthros object)");
    orthros_cmd_add_num(&c, "feature-dim", ORTHROS_OPT_INT, &mo->feature_dim, 1, ORTHROS_MAX_HEAD_DIM, "N",
                        "hedgehog feature dim per sign (into the orthros object)");
    orthros_cmd_add_num(&c, "tail", ORTHROS_OPT_INT, &mo->tail, 1, INT_MAX, "T", "orthros tail (into the orthros object)");
    orthros_cmd_add_num(&c, "window", ORTHROS_OPT_INT, &mo->window, 1, INT_MAX, "W", "swa window (into the orthros object)");
    orthros_cmd_add_num(&c, "hybrid-every", ORTHROS_OPT_INT, &mo->hybrid_every, 1, ORTHROS_MAX_LAYERS, "K",
                        "hybrid: every K-th layer full (into the orthros object)");
    orthros_cmd_add_num(&c, "eps", ORTHROS_OPT_DOUBLE, &mo->eps, 1e-30, 1.0, "E",
                        "linear attention epsilon (into the orthros object)");
    int pr = orthros_cmd_parse(&c, argc, argv);
    if (pr >= 0) return pr;
    if (!mo->model || !o.out) return orthros_cmd_usage(&c, "--model and --out are required (see --help)");
    if (strcmp(o.dtype, "f32") && strcmp(o.dtype, "bf16"))
        return orthros_cmd_usage(&c, "--dtype %s: f32 or bf16", o.dtype);
    if (!o.out[0] || strlen(o.out) > PATH_MAX / 2) return orthros_cmd_usage(&c, "--out: a folder name is needed");
    orthros_arch_opts ao;
    if (orthros_model_opts_resolve(&ao, mo)) return orthros_cmd_fail_usage(cmd, ORTHROS_EINVAL);
    /* Refused before any work: a folder that is not empty (without --force) or holds more than files. */
    int nonempty = 0, rc = out_state(o.out, &nonempty);
    if (!rc && nonempty && !o.force)
        rc = orthros_error(ORTHROS_EIO, "%s is not empty: --force replaces it", o.out);
    if (rc) return orthros_cmd_fail(cmd, rc);
    char *tmp = sibling_dir(o.out, "tmp");
    if (!tmp) return orthros_cmd_fail(cmd, orthros_error(ORTHROS_EIO, "%s: cannot make a folder beside it: %s", o.out, strerror(errno)));
    rc = export_model(&o, &ao, tmp);
    if (!rc) rc = move_into_place(tmp, o.out);
    if (rc) remove_files_dir(tmp);
    free(tmp);
    return rc ? orthros_cmd_fail(cmd, rc) : 0;
}
