/* The run shared by every eval task (driver.h). */
#define _GNU_SOURCE
#include "driver.h"
#include "tables.h"
#include "axes.h"
#include "stats.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void orthros_eval_common_default(eval_common *o, const char *task)
{
    memset(o, 0, sizeof *o);
    orthros_model_opts_default(&o->mo);
    o->mo.model = NULL;
    o->task = task;
    o->archs = "transformer,orthros,linear,swa,hybrid";
    o->samples = 4;
    o->format = "text";
}

void orthros_eval_common_add(orthros_cmd *c, eval_common *o, const char *json_default, const char *prompts_help)
{
    static char json_help[160];
    orthros_opt *arch = orthros_cmd_opt(c, "arch");
    arch->dst = &o->archs;
    arch->metavar = "LIST";
    arch->help = "architectures, comma-separated (default transformer,orthros,linear,swa,hybrid)";
    snprintf(json_help, sizeof json_help, "result file, rewritten after every cell (default %s)", json_default);
    orthros_cmd_add(c, "json", ORTHROS_OPT_STR, &o->json, "FILE", json_help);
    orthros_cmd_add(c, "resume", ORTHROS_OPT_FLAG, &o->resume, NULL,
                    "keep the cells already in --json (same configuration) and run only the rest");
    orthros_cmd_add(c, "force", ORTHROS_OPT_FLAG, &o->force, NULL,
                    "replace --json at the start (without it, an existing file is replaced only once a cell is done)");
    orthros_cmd_add(c, "wait", ORTHROS_OPT_FLAG, &o->wait, NULL,
                    "when another run is writing --json, wait for it to finish (default: refuse)");
    if (prompts_help) orthros_cmd_add(c, "save-prompts", ORTHROS_OPT_STR, &o->save_prompts, "FILE", prompts_help);
    orthros_cmd_add_num(c, "limit", ORTHROS_OPT_INT, &o->limit, 0, INT_MAX, "N",
                        !strcmp(o->task, "ppl") ? "the first N windows of each length only (default all)"
                        : !strcmp(o->task, "recall") || !strcmp(o->task, "mc") ? "the first N questions only (default all)"
                                                                             : "at most N samples a cell (default --samples)");
    orthros_cmd_add(c, "o", ORTHROS_OPT_STR, &o->format, "FMT", "table format on stdout: text|md|csv|jsonl|json (default text)");
    orthros_cmd_add(c, "table-out", ORTHROS_OPT_STR, &o->table_out, "FILE", "write the table to FILE instead of stdout");
    orthros_cmd_add(c, "quiet", ORTHROS_OPT_FLAG, &o->quiet, NULL, "no progress lines on stderr");
}

int orthros_eval_common_check(orthros_cmd *c, eval_common *o, const char *json_default)
{
    if (o->resume && o->force) return orthros_cmd_usage(c, "--resume keeps the file's cells, --force replaces them: not both");
    if (!strcmp(o->json ? o->json : "", "-")) return orthros_cmd_usage(c, "--json needs a file (results are rewritten as cells finish)");
    if (!o->json) o->json = json_default;
    /* The generated tasks' samples: the first --limit of --samples (the same seeds as --samples N). */
    int generated = !strcmp(o->task, "niah") || !strcmp(o->task, "mqar") || orthros_eval_is_ruler(o->task);
    if (generated && o->limit > 0 && o->limit < o->samples) o->samples = o->limit;
    return -1;
}

const char *orthros_eval_command_name(const char *task)
{
    static char buf[40];
    snprintf(buf, sizeof buf, "eval %s", orthros_eval_is_ruler(task) ? "ruler" : task);
    return buf;
}

void orthros_eval_progress_text(char *out, size_t n, const char *text, size_t chars)
{
    size_t j = 0, used = 0;
    const unsigned char *p = (const unsigned char *)(text ? text : "");
    for (; *p && j + 8 < n; p++) {
        /* a UTF-8 character whole or not at all */
        size_t len = *p < 0x80 ? 1 : (*p >> 5) == 6 ? 2 : (*p >> 4) == 14 ? 3 : (*p >> 3) == 30 ? 4 : 1;
        if (used + len > chars) break;
        if (*p == '\n') j += (size_t)snprintf(out + j, n - j, "\\n");
        else if (*p == '\t') j += (size_t)snprintf(out + j, n - j, "\\t");
        else if (*p == '\r') j += (size_t)snprintf(out + j, n - j, "\\r");
        else if (*p == '\\') j += (size_t)snprintf(out + j, n - j, "\\\\");
        else if (*p < 0x20 || *p == 0x7f) j += (size_t)snprintf(out + j, n - j, "\\x%02x", *p);
        else if (len > 1) {
            size_t k = 0;
            while (k < len && p[k] && (k == 0 || (p[k] & 0xc0) == 0x80)) k++;
            if (k < len || j + len + 4 >= n) { /* a broken sequence: its first byte as \xNN */
                j += (size_t)snprintf(out + j, n - j, "\\x%02x", *p);
                used++;
                continue;
            }
            memcpy(out + j, p, len), j += len, p += len - 1;
        } else {
            out[j++] = (char)*p;
        }
        used += len;
    }
    out[j < n ? j : n - 1] = '\0';
    if (*p && j + 4 < n) snprintf(out + j, n - j, "...");
}

int orthros_eval_parse_ints(int *out, size_t *n, const char *text, const char *what, int64_t lo, int64_t hi)
{
    int64_t v[EVAL_MAX_AXIS];
    int rc = orthros_axis_parse_int(v, EVAL_MAX_AXIS, n, text, INT64_MIN / 2);
    if (rc) return orthros_error(rc, "--%s: %s", what, orthros_last_error());
    for (size_t i = 0; i < *n; i++) {
        if (v[i] < lo || v[i] > hi)
            return orthros_error(ORTHROS_EINVAL, "--%s: %lld is outside %lld..%lld%s", what, (long long)v[i],
                                 (long long)lo, (long long)hi,
                                 !strcmp(what, "depths") ? " (percent of the context)" : "");
        out[i] = (int)v[i];
    }
    return 0;
}

int orthros_eval_parse_archs(eval_run *r)
{
    return orthros_axis_parse_names(r->archs, EVAL_MAX_AXIS, &r->na, r->o->archs, orthros_arch_names);
}

int orthros_eval_config_common(orthros_eval_config *c, const eval_common *o, const char *device)
{
    memset(c, 0, sizeof *c);
    c->text_tokens = -1, c->stride = -1, c->max_new = -1, c->shots = -1, c->limit = -1; /* not given */
    snprintf(c->task, sizeof c->task, "%s", o->task);
    c->model = strdup(o->mo.model);
    c->archs = strdup(o->archs);
    c->ctxs = strdup(o->ctxs ? o->ctxs : "");
    if (!c->model || !c->archs || !c->ctxs) {
        orthros_eval_config_free(c);
        return orthros_error(ORTHROS_ENOMEM, "out of memory");
    }
    c->samples = o->samples, c->seed = o->mo.seed, c->limit = o->limit;
    snprintf(c->device, sizeof c->device, "%s", device);
    orthros_model_opts_sched(&c->sched, &o->mo);
    return 0;
}

void orthros_eval_cell_set_accuracy(orthros_eval_cell *out, int64_t correct, int64_t trials)
{
    out->n = trials, out->correct = correct, out->accuracy = (double)correct / (double)trials;
    out->ci_lo = 0, out->ci_hi = 1;
    orthros_stats_wilson(&out->ci_lo, &out->ci_hi, correct, trials, ORTHROS_STATS_Z95);
}

int orthros_eval_gen_cell_begin(gen_cell *g, orthros_eval_cell *out, orthros_model *m, int ctx, int max_new, int chunk)
{
    memset(out, 0, sizeof *out);
    out->partial = NAN;
    g->sess = NULL;
    g->t0 = orthros_now_s();
    g->gen = malloc((size_t)max_new * sizeof *g->gen);
    if (!g->gen || !(out->records = cJSON_CreateArray())) {
        free(g->gen);
        g->gen = NULL;
        return orthros_error(ORTHROS_ENOMEM, "out of memory");
    }
    int rc = orthros_session_init(&g->sess, m, 1, ctx, chunk);
    if (rc) {
        cJSON_Delete(out->records);
        out->records = NULL;
        free(g->gen);
        g->gen = NULL;
    }
    return rc;
}

int orthros_eval_gen_cell_end(gen_cell *g, orthros_eval_cell *out, const eval_cell *c, int rc, int64_t correct,
                              int64_t samples)
{
    if (!rc) {
        snprintf(out->arch, sizeof out->arch, "%s", c->arch);
        out->ctx = c->ctx, out->axis = c->axis, out->samples = (int)samples, out->samples_correct = (int)correct;
        orthros_eval_cell_set_accuracy(out, correct, samples);
        out->elapsed_s = orthros_now_s() - g->t0;
    } else {
        cJSON_Delete(out->records);
        out->records = NULL;
    }
    orthros_session_free(g->sess);
    free(g->gen);
    g->sess = NULL, g->gen = NULL;
    return rc;
}

cJSON *orthros_eval_ints_json(const int32_t *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

void orthros_eval_add_seed(cJSON *o, uint64_t seed)
{
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, seed);
    cJSON_AddNumberToObject(o, "seed", (double)seed);
    cJSON_AddStringToObject(o, "seed_hex", hex);
}

int orthros_eval_save_line(FILE *f, cJSON *j)
{
    char *t = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    int ok = t && fprintf(f, "%s\n", t) > 0;
    free(t);
    return ok ? 0 : orthros_error(ORTHROS_EIO, "cannot write the --save-prompts file");
}

/* The result file (harness/result_run.h): an earlier run's cells with --resume (same configuration, commit and
 * kernel versions, else refused), a fresh header. An existing file is not replaced before this run has a cell (or
 * with --force). */
static int open_results(eval_run *r, int argc, char **argv, orthros_eval_config *config)
{
    const eval_common *o = r->o;
    orthros_eval_file_init(&r->f);
    r->f.cfg = *config;
    memset(config, 0, sizeof *config);
    int rc = orthros_result_run_open(&r->run, argc, argv, (uint64_t)o->mo.seed, r->be, o->mo.tp);
    if (!rc && o->force && r->run.existed) rc = orthros_result_run_save(&r->run, 0);
    return rc;
}

void orthros_eval_accuracy_row(eval_run *r, const orthros_eval_cell *c, char (*v)[ORTHROS_NAME_MAX])
{
    snprintf(v[0], ORTHROS_NAME_MAX, "%s", c->arch);
    snprintf(v[1], ORTHROS_NAME_MAX, "%d", c->ctx);
    snprintf(v[2], ORTHROS_NAME_MAX, "%d", c->axis);
    snprintf(v[3], ORTHROS_NAME_MAX, "%lld", (long long)c->n);
    snprintf(v[4], ORTHROS_NAME_MAX, "%.3f", c->accuracy);
    snprintf(v[5], ORTHROS_NAME_MAX, "%.3f", c->ci_lo);
    snprintf(v[6], ORTHROS_NAME_MAX, "%.3f", c->ci_hi);
}

static void print_cell(eval_run *r, const orthros_eval_cell *c)
{
    if (!r->table.out) return; /* a task that prints its table at the end (mc, recall) */
    char v[ORTHROS_TABLE_MAX_COLS][ORTHROS_NAME_MAX];
    const char *cells[ORTHROS_TABLE_MAX_COLS];
    for (int i = 0; i < ORTHROS_TABLE_MAX_COLS; i++) cells[i] = v[i], v[i][0] = 0;
    (r->ops->row ? r->ops->row : orthros_eval_accuracy_row)(r, c, v);
    orthros_table_row(&r->table, cells);
}

/* After the grid: per architecture, the pooled accuracy over every cell of this file, with its Wilson interval. */
void orthros_eval_accuracy_summary(eval_run *r)
{
    for (size_t ia = 0; ia < r->na; ia++) {
        int64_t k = 0, n = 0;
        size_t cells = 0;
        for (size_t i = 0; i < r->f.n_cells; i++)
            if (!strcmp(r->f.cells[i].arch, r->archs[ia])) k += r->f.cells[i].correct, n += r->f.cells[i].n, cells++;
        if (!n) continue;
        double lo = 0, hi = 1;
        orthros_stats_wilson(&lo, &hi, k, n, ORTHROS_STATS_Z95);
        char line[256];
        snprintf(line, sizeof line, "summary %-12s %zu cells, %lld of %lld right: accuracy %.3f [%.3f, %.3f]", r->archs[ia],
                 cells, (long long)k, (long long)n, (double)k / (double)n, lo, hi);
        orthros_table_note(&r->table, line);
    }
}

/* The grid's progress: what is left is estimated from the time the cells run so far took per token of context
 * (a cell's cost grows with its length; its samples are the same in every cell of a run). */
typedef struct {
    size_t idx, total;
    double t0, spent;          /* start; seconds in the cells run so far */
    double units_done, units_left; /* their context lengths, and those of the cells still to run */
} progress;

/* "45 s", "3 min 20 s", "1 h 5 min". */
static void duration(char *out, size_t n, double s)
{
    if (s < 90) snprintf(out, n, "%.0f s", s);
    else if (s < 5400) snprintf(out, n, "%d min %d s", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(out, n, "%d h %d min", (int)(s / 3600), (int)fmod(s / 60, 60));
}

/* Every cell of one architecture not yet in the file. */
static int run_arch(eval_run *r, size_t ia, orthros_arch_opts *ao, progress *pg)
{
    const eval_common *o = r->o;
    const char *xn = orthros_eval_axis_name(o->task);
    orthros_model *m = NULL;
    int rc = 0;
    ao->arch = r->archs[ia];
    for (size_t ic = 0; ic < r->nc && !rc; ic++)
        for (size_t ix = 0; ix < r->nx && !rc; ix++) {
            eval_cell c = {r->archs[ia], r->ctxs[ic], r->x_from_ctx ? r->ctxs[ic] : r->xs[ix]};
            char where[96];
            if (xn) snprintf(where, sizeof where, "ctx %d %s %d", c.ctx, xn, c.axis);
            else snprintf(where, sizeof where, "ctx %d", c.ctx);
            pg->idx++;
            const orthros_eval_cell *done = orthros_eval_file_find(&r->f, c.arch, c.ctx, c.axis);
            if (done) { /* its row still goes to the table, which lists the whole grid */
                if (!o->quiet) fprintf(stderr, "[%zu/%zu] %s %s: already in %s, kept\n", pg->idx, pg->total, c.arch, where, o->json);
                print_cell(r, done);
                continue;
            }
            if (!m && (rc = orthros_model_load(&m, r->be, o->mo.model, ao, (uint64_t)o->mo.seed))) break;
            if (r->ops->check_model && (rc = r->ops->check_model(r, m))) break;
            char samples[48] = "";
            if (!orthros_eval_is_ppl(o->task) && strcmp(o->task, "recall") && strcmp(o->task, "mc"))
                snprintf(samples, sizeof samples, ", %d samples", o->samples);
            if (!o->quiet)
                fprintf(stderr, "[%zu/%zu] %s %s %s%s (elapsed %.0f s)...\n", pg->idx, pg->total,
                        orthros_eval_command_name(o->task) + 5, c.arch, where, samples, orthros_now_s() - pg->t0);
            double t1 = orthros_now_s();
            orthros_eval_cell res;
            if ((rc = r->ops->run_cell(r, &res, m, &c))) break;
            if ((rc = orthros_eval_file_add(&r->f, &res))) {
                cJSON_Delete(res.records);
                break;
            }
            double dt = orthros_now_s() - t1;
            pg->spent += dt, pg->units_done += c.ctx, pg->units_left -= c.ctx;
            if (!o->quiet) {
                const orthros_eval_cell *e = &r->f.cells[r->f.n_cells - 1];
                char left[48];
                duration(left, sizeof left, pg->units_left > 0 ? pg->spent / pg->units_done * pg->units_left : 0);
                fprintf(stderr, "[%zu/%zu] done in %.1f s (%.2f s a %s); elapsed %.0f s, about %s left\n", pg->idx, pg->total,
                        dt, e->samples > 0 ? dt / e->samples : dt, orthros_eval_is_ppl(o->task) ? "window" : "sample",
                        orthros_now_s() - pg->t0, left);
            }
            r->run.measured++;
            print_cell(r, &r->f.cells[r->f.n_cells - 1]);
            if (r->prompts) fflush(r->prompts);
            rc = orthros_result_run_save(&r->run, 0);
        }
    orthros_model_free(m);
    return rc;
}

int orthros_eval_drive(eval_run *r, int argc, char **argv, orthros_eval_config *config, const orthros_table_col *cols,
               int n_cols)
{
    const eval_common *o = r->o;
    char cmd[40];
    snprintf(cmd, sizeof cmd, "%s", orthros_eval_command_name(o->task)); /* as the user typed it: eval ruler */
    orthros_arch_opts ao;
    orthros_table_format tf = ORTHROS_TABLE_TEXT;
    int rc;
    if ((rc = orthros_model_opts_resolve(&ao, &o->mo)) || (rc = orthros_table_format_parse(&tf, o->format))) {
        orthros_eval_config_free(config);
        return orthros_cmd_fail_usage(cmd, rc);
    }
    if ((rc = orthros_backend_create(&r->be, o->mo.device))) {
        orthros_eval_config_free(config);
        return orthros_cmd_fail(cmd, rc);
    }
    snprintf(config->device, sizeof config->device, "%s", orthros_backend_name(r->be));
    r->run = (orthros_result_run){.type = &orthros_eval_type, .file = &r->f, .cmd = "eval", .nothing = "nothing was run",
                                  .path = o->json, .resume = o->resume, .force = o->force, .wait = o->wait};
    /* Another run writing --json: refused (or waited for) before the file is read. */
    if ((rc = orthros_result_run_lock(&r->run)) || (rc = open_results(r, argc, argv, config)) ||
        (n_cols > 0 && (rc = orthros_table_open(&r->table, tf, o->table_out, cols, n_cols))))
        goto done;
    if (n_cols > 0) orthros_table_context(&r->table, r->f.header, r->f.cfg.model, NAN); /* the run's model, device, commit */
    if (o->save_prompts && !(r->prompts = fopen(o->save_prompts, o->resume ? "a" : "w"))) {
        rc = orthros_error(ORTHROS_EIO, "%s: cannot open for writing: %s", o->save_prompts, strerror(errno));
        goto done;
    }
    progress pg = {.total = r->na * r->nc * r->nx, .t0 = orthros_now_s()};
    for (size_t ia = 0; ia < r->na; ia++)
        for (size_t ic = 0; ic < r->nc; ic++)
            for (size_t ix = 0; ix < r->nx; ix++)
                if (!orthros_eval_file_find(&r->f, r->archs[ia], r->ctxs[ic], r->x_from_ctx ? r->ctxs[ic] : r->xs[ix]))
                    pg.units_left += r->ctxs[ic];
    for (size_t ia = 0; ia < r->na && !rc; ia++) rc = run_arch(r, ia, &ao, &pg);
    if (!rc && !(rc = orthros_result_run_save(&r->run, 1))) {
        (r->ops->summary ? r->ops->summary : orthros_eval_accuracy_summary)(r);
        if (!o->quiet && (r->run.measured || !r->run.existed || o->force || o->resume)) fprintf(stderr, "eval: results in %s\n", o->json);
    }
done:
    orthros_eval_config_free(config);
    if (r->table.out) {
        int trc = orthros_table_close(&r->table);
        if (!rc) rc = trc;
    }
    if (rc) orthros_cmd_fail(cmd, rc);
    if (r->prompts) fclose(r->prompts);
    orthros_eval_file_free(&r->f);
    orthros_backend_free(r->be);
    orthros_result_run_close(&r->run);
    return rc ? 1 : 0;
}

int orthros_eval_task_name(orthros_cmd *c, char *name, size_t size, const char *name_arg, const char *tasks_default)
{
    /* an empty name would be left out of the file (and mc's reader requires one) */
    if (name_arg && !name_arg[0]) return orthros_cmd_usage(c, "--name is empty");
    if (name_arg) {
        snprintf(name, size, "%s", name_arg);
    } else if (tasks_default) {
        const char *base = strrchr(tasks_default, '/') ? strrchr(tasks_default, '/') + 1 : tasks_default;
        size_t n = strlen(base);
        if (n > 6 && !strcmp(base + n - 6, ".jsonl")) n -= 6;
        snprintf(name, size, "%.*s", (int)(n < size - 1 ? n : size - 1), base);
    }
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p < 0x20) return orthros_cmd_usage(c, "--name holds a control character");
    return -1;
}

int orthros_eval_drive_tasks(eval_run *r, eval_common *o, int argc, char **argv, int n, int longest, const char *tasks,
                             const char *fewshot, void (*fill)(orthros_eval_config *cfg, const void *task))
{
    o->samples = n;
    r->nc = r->nx = 1;
    r->ctxs[0] = longest, r->xs[0] = 0;
    char ctx_text[32];
    snprintf(ctx_text, sizeof ctx_text, "%d", longest);
    o->ctxs = ctx_text;
    orthros_eval_config cfg;
    int rc;
    if ((rc = orthros_eval_config_common(&cfg, o, "")) || !(cfg.text = strdup(tasks)) ||
        (fewshot && !(cfg.fewshot = strdup(fewshot)))) {
        if (!rc) orthros_eval_config_free(&cfg);
        return orthros_cmd_fail(orthros_eval_command_name(o->task), rc ? rc : orthros_error(ORTHROS_ENOMEM, "out of memory"));
    }
    fill(&cfg, r->task);
    return orthros_eval_drive(r, argc, argv, &cfg, NULL, 0);
}
