/* Eval result files: the typed cells, their one reader (with validation) and one writer. */
#define _GNU_SOURCE
#include "result_eval.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *orthros_eval_x_name(const char *task) { return strcmp(task, "niah") ? "pairs" : "depth"; }

void orthros_eval_file_init(orthros_eval_file *f)
{
    memset(f, 0, sizeof *f);
    f->cfg.chunk = f->cfg.tail = f->cfg.window = f->cfg.hybrid_every = f->cfg.feature_dim = -1;
    f->cfg.eps = -1;
}

void orthros_eval_config_free(orthros_eval_config *c)
{
    free(c->model);
    free(c->archs);
    free(c->ctxs);
    free(c->xs);
    cJSON_Delete(c->analytic_recall);
    c->model = c->archs = c->ctxs = c->xs = NULL;
    c->analytic_recall = NULL;
}

void orthros_eval_file_free(orthros_eval_file *f)
{
    for (size_t i = 0; i < f->n_cells; i++) cJSON_Delete(f->cells[i].records);
    free(f->cells);
    cJSON_Delete(f->header);
    orthros_eval_config_free(&f->cfg);
    orthros_eval_file_init(f);
}

int orthros_eval_file_add(orthros_eval_file *f, orthros_eval_cell *c)
{
    if (f->n_cells == f->cap_cells) {
        size_t cap = f->cap_cells ? 2 * f->cap_cells : 32;
        orthros_eval_cell *p = realloc(f->cells, cap * sizeof *p);
        if (!p) return orthros_error(ORTHROS_ENOMEM, "out of memory adding a cell");
        f->cells = p, f->cap_cells = cap;
    }
    f->cells[f->n_cells++] = *c;
    c->records = NULL;
    return 0;
}

const orthros_eval_cell *orthros_eval_file_find(const orthros_eval_file *f, const char *arch, int ctx, int x)
{
    for (size_t i = 0; i < f->n_cells; i++)
        if (!strcmp(f->cells[i].arch, arch) && f->cells[i].ctx == ctx && f->cells[i].x == x) return &f->cells[i];
    return NULL;
}

int orthros_eval_config_check_same(const orthros_eval_config *a, const char *a_name, const orthros_eval_config *b,
                                   const char *b_name)
{
    int rc;
    if ((rc = orthros_result_same_str(a_name, b_name, "the task", a->task, b->task)) ||
        (rc = orthros_result_same_str(a_name, b_name, "the variant", a->variant, b->variant)) ||
        (rc = orthros_result_same_str(a_name, b_name, "the model", a->model, b->model)) ||
        (rc = orthros_result_same_str(a_name, b_name, "the device", a->device, b->device)) ||
        (rc = orthros_result_same_str(a_name, b_name, "--feature-map", a->feature_map, b->feature_map)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--samples", a->samples, b->samples)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--seed", a->seed, b->seed)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--chunk", a->chunk, b->chunk)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--tail", a->tail, b->tail)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--window", a->window, b->window)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--hybrid-every", a->hybrid_every, b->hybrid_every)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--feature-dim", a->feature_dim, b->feature_dim)) ||
        (rc = orthros_result_same_num(a_name, b_name, "--eps", a->eps, b->eps)))
        return rc;
    return 0;
}

/* ---- reading ---- */

static int read_config(orthros_eval_config *c, orthros_jr *j, const cJSON *o)
{
    int rc;
    const cJSON *ar;
    int64_t v;
    struct {
        const char *key;
        int *dst;
        int64_t lo;
    } ints[] = {{"samples", &c->samples, 1},  {"seed", &c->seed, 0},
                {"chunk", &c->chunk, -1},     {"tail", &c->tail, -1},
                {"window", &c->window, -1},   {"hybrid_every", &c->hybrid_every, -1},
                {"feature_dim", &c->feature_dim, -1}};
    if ((rc = orthros_jr_string(c->task, sizeof c->task, j, o, "task", ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_string(c->variant, sizeof c->variant, j, o, "variant", 0)) ||
        (rc = orthros_jr_strdup(&c->model, j, o, "model", ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_strdup(&c->archs, j, o, "arch", 0)) || (rc = orthros_jr_strdup(&c->ctxs, j, o, "ctx", 0)) ||
        (rc = orthros_jr_strdup(&c->xs, j, o, strcmp(c->task, "niah") ? "pairs" : "depths", 0)) ||
        (rc = orthros_jr_string(c->device, sizeof c->device, j, o, "device", 0)) ||
        (rc = orthros_jr_string(c->feature_map, sizeof c->feature_map, j, o, "feature_map", 0)) ||
        (rc = orthros_jr_string(c->scoring, sizeof c->scoring, j, o, "scoring", 0)) ||
        (rc = orthros_jr_num(&c->eps, j, o, "eps", -1, 1, 0)) || (rc = orthros_jr_object(&ar, j, o, "analytic_recall", 0)))
        return rc;
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        v = *ints[i].dst;
        /* samples has no default: a file without it cannot say what its cells measured. */
        if ((rc = orthros_jr_int(&v, j, o, ints[i].key, ints[i].lo, INT_MAX, i == 0 ? ORTHROS_JR_REQUIRED : 0))) return rc;
        *ints[i].dst = (int)v;
    }
    if (ar && !(c->analytic_recall = cJSON_Duplicate(ar, 1))) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    return 0;
}

static int read_cell(orthros_eval_cell *c, orthros_jr *j, const cJSON *o)
{
    int rc;
    int64_t ctx = 0, x = 0, samples = 0, sc = 0;
    const cJSON *rec, *r;
    memset(c, 0, sizeof *c);
    c->elapsed_s = NAN;
    if (!cJSON_IsObject(o)) return orthros_jr_fail(j, NULL, "not an object");
    if ((rc = orthros_jr_string(c->task, sizeof c->task, j, o, "task", ORTHROS_JR_REQUIRED))) return rc;
    if (strcmp(c->task, "niah") && strcmp(c->task, "mqar"))
        return orthros_jr_fail(j, "task", "\"%s\" is not niah or mqar", c->task);
    int64_t xmax = strcmp(c->task, "niah") ? INT_MAX : 100, xmin = strcmp(c->task, "niah") ? 1 : 0;
    if ((rc = orthros_jr_string(c->variant, sizeof c->variant, j, o, "variant", 0)) ||
        (rc = orthros_jr_string(c->arch, sizeof c->arch, j, o, "arch", ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_int(&ctx, j, o, "ctx", 1, INT_MAX, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_int(&x, j, o, orthros_eval_x_name(c->task), xmin, xmax, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_int(&samples, j, o, "samples", 1, INT_MAX, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_int(&sc, j, o, "samples_correct", 0, samples, 0)) ||
        (rc = orthros_jr_int(&c->n, j, o, "n", 1, INT64_MAX / 2, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_int(&c->correct, j, o, "correct", 0, c->n, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_num(&c->accuracy, j, o, "accuracy", 0, 1, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_num(&c->ci_lo, j, o, "ci95_lo", 0, 1, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_num(&c->ci_hi, j, o, "ci95_hi", 0, 1, ORTHROS_JR_REQUIRED)) ||
        (rc = orthros_jr_num(&c->elapsed_s, j, o, "elapsed_s", 0, 1e300, ORTHROS_JR_NULL_NAN)) ||
        (rc = orthros_jr_array(&rec, j, o, "records", 0)))
        return rc;
    if (!c->arch[0]) return orthros_jr_fail(j, "arch", "empty");
    if (fabs(c->accuracy - (double)c->correct / (double)c->n) > 1e-9)
        return orthros_jr_fail(j, "accuracy", "is not correct / n");
    if (c->ci_lo > c->accuracy + 1e-12 || c->ci_hi < c->accuracy - 1e-12)
        return orthros_jr_fail(j, "ci95_lo", "the interval does not hold the accuracy");
    int i = 0;
    cJSON_ArrayForEach(r, rec)
    {
        if (!cJSON_IsObject(r)) return orthros_jr_fail(j, "records", "item %d is not an object", i);
        i++;
    }
    c->ctx = (int)ctx, c->x = (int)x, c->samples = (int)samples, c->samples_correct = (int)sc;
    if (rec && !(c->records = cJSON_Duplicate(rec, 1))) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    return 0;
}

static int from_json(orthros_eval_file *f, const cJSON *root, const char *name)
{
    orthros_jr j;
    orthros_jr_init(&j, name);
    int rc;
    const cJSON *run, *cfg, *cells, *e;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(root, "kind");
    if (cJSON_IsString(kind) && strcmp(kind->valuestring, "eval"))
        return orthros_error(ORTHROS_EFORMAT, "%s is a \"%.32s\" result file, not an eval result file", name,
                             kind->valuestring);
    if ((rc = orthros_result_header_read(&f->hdr, root, name))) return rc;
    if (f->hdr.kind != ORTHROS_RESULT_EVAL)
        return orthros_error(ORTHROS_EFORMAT, "%s is not an eval result file", name);
    if (!(f->header = orthros_result_header_keep(root))) return orthros_error(ORTHROS_ENOMEM, "out of memory");
    if ((rc = orthros_jr_object(&run, &j, root, "run", ORTHROS_JR_REQUIRED))) return rc;
    size_t at = orthros_jr_push_key(&j, "run");
    if ((rc = orthros_jr_object(&cfg, &j, run, "config", ORTHROS_JR_REQUIRED))) return rc;
    orthros_jr_push_key(&j, "config");
    if ((rc = read_config(&f->cfg, &j, cfg))) return rc;
    orthros_jr_pop(&j, at);
    if ((rc = orthros_jr_array(&cells, &j, root, "cells", ORTHROS_JR_REQUIRED))) return rc;
    orthros_jr_push_key(&j, "cells");
    int i = 0;
    cJSON_ArrayForEach(e, cells)
    {
        orthros_eval_cell c;
        size_t at2 = orthros_jr_push_index(&j, i++);
        if ((rc = read_cell(&c, &j, e))) return rc;
        if (orthros_eval_file_find(f, c.arch, c.ctx, c.x) && !strcmp(c.task, f->cfg.task)) {
            cJSON_Delete(c.records);
            return orthros_jr_fail(&j, NULL, "the cell %s ctx %d %s %d appears twice", c.arch, c.ctx,
                                   orthros_eval_x_name(c.task), c.x);
        }
        if ((rc = orthros_eval_file_add(f, &c))) {
            cJSON_Delete(c.records);
            return rc;
        }
        orthros_jr_pop(&j, at2);
    }
    return 0;
}

int orthros_eval_file_from_json(orthros_eval_file *f, const cJSON *root, const char *name)
{
    orthros_eval_file_init(f);
    int rc = from_json(f, root, name);
    if (rc) orthros_eval_file_free(f);
    return rc;
}

static int from_json_any(void *f, const cJSON *root, const char *name)
{
    return orthros_eval_file_from_json(f, root, name);
}

int orthros_eval_file_read(orthros_eval_file *f, const char *path, int missing_ok, int *exists)
{
    orthros_eval_file_init(f);
    return orthros_result_read_typed(f, from_json_any, path, missing_ok, exists);
}

/* ---- writing ---- */

static cJSON *config_json(const orthros_eval_config *c)
{
    cJSON *o = cJSON_CreateObject();
    int niah = !strcmp(c->task, "niah");
    cJSON_AddStringToObject(o, "task", c->task);
    cJSON_AddStringToObject(o, "variant", c->variant);
    cJSON_AddStringToObject(o, "model", c->model ? c->model : "");
    cJSON_AddStringToObject(o, "arch", c->archs ? c->archs : "");
    cJSON_AddStringToObject(o, "ctx", c->ctxs ? c->ctxs : "");
    cJSON_AddStringToObject(o, niah ? "depths" : "pairs", c->xs ? c->xs : "");
    cJSON_AddNumberToObject(o, "samples", c->samples);
    cJSON_AddNumberToObject(o, "seed", c->seed);
    cJSON_AddStringToObject(o, "device", c->device);
    cJSON_AddNumberToObject(o, "chunk", c->chunk);
    cJSON_AddNumberToObject(o, "tail", c->tail);
    cJSON_AddNumberToObject(o, "window", c->window);
    cJSON_AddNumberToObject(o, "hybrid_every", c->hybrid_every);
    cJSON_AddNumberToObject(o, "feature_dim", c->feature_dim);
    cJSON_AddNumberToObject(o, "eps", c->eps);
    cJSON_AddStringToObject(o, "feature_map", c->feature_map);
    cJSON_AddStringToObject(o, "scoring", c->scoring);
    if (c->analytic_recall) cJSON_AddItemToObject(o, "analytic_recall", cJSON_Duplicate(c->analytic_recall, 1));
    return o;
}

static cJSON *cell_json(const orthros_eval_cell *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "task", c->task);
    cJSON_AddStringToObject(o, "variant", c->variant);
    cJSON_AddStringToObject(o, "arch", c->arch);
    cJSON_AddNumberToObject(o, "ctx", c->ctx);
    cJSON_AddNumberToObject(o, orthros_eval_x_name(c->task), c->x);
    cJSON_AddNumberToObject(o, "samples", c->samples);
    cJSON_AddNumberToObject(o, "samples_correct", c->samples_correct);
    cJSON_AddNumberToObject(o, "n", (double)c->n);
    cJSON_AddNumberToObject(o, "correct", (double)c->correct);
    cJSON_AddNumberToObject(o, "accuracy", c->accuracy);
    cJSON_AddNumberToObject(o, "ci95_lo", c->ci_lo);
    cJSON_AddNumberToObject(o, "ci95_hi", c->ci_hi);
    if (isfinite(c->elapsed_s)) cJSON_AddNumberToObject(o, "elapsed_s", c->elapsed_s);
    cJSON_AddItemToObject(o, "records", c->records ? cJSON_Duplicate(c->records, 1) : cJSON_CreateArray());
    return o;
}

cJSON *orthros_eval_file_to_json(const orthros_eval_file *f)
{
    cJSON *root = orthros_result_header_emit(f->header, "eval", config_json(&f->cfg));
    if (!root) return NULL;
    cJSON *cells = cJSON_AddArrayToObject(root, "cells");
    for (size_t i = 0; i < f->n_cells; i++) cJSON_AddItemToArray(cells, cell_json(&f->cells[i]));
    return root;
}

int orthros_eval_file_write(const orthros_eval_file *f, const char *path)
{
    cJSON *root = orthros_eval_file_to_json(f);
    if (!root) return orthros_error(ORTHROS_ENOMEM, "out of memory writing %s", path);
    int rc = orthros_result_write(path, root);
    cJSON_Delete(root);
    return rc;
}
