/* Eval result files (`orthros eval`), typed: one reader (which validates) and one writer, used by the eval
 * command (resume), `orthros plot` and the reports. A cell is one (task, variant, arch, ctx, x) configuration, x the
 * task's second axis (orthros_eval_axis_name), with its per-sample records. Two kinds of cell:
 *   accuracy cells (niah, mqar on the analytic checkpoint; ruler_niah, ruler_vt, ruler_cwe and recall on a text
 *   model): n trials, correct, accuracy and its Wilson interval; RULER cells also carry RULER's partial score;
 *   perplexity cells (ppl): n scored tokens over `samples` windows, the mean negative log-likelihood, the
 *   perplexity with its bootstrap interval over windows, and how many tokens were scored from linear-phase logits;
 *   multiple-choice cells (mc): n questions, lm-eval's acc and acc_norm with their stderr, and per question the
 *   log-likelihood of every choice (the reader recomputes every metric from them). */
#ifndef ORTHROS_RESULT_EVAL_H
#define ORTHROS_RESULT_EVAL_H

#include "result_bench.h"

/* The most choices a multiple-choice question may have. */
#define ORTHROS_MC_MAX_CHOICES 64

typedef struct {
    char task[16];            /* niah, mqar, ruler_niah, ruler_vt, ruler_cwe, recall, ppl, mc */
    char variant[32];         /* niah, ruler_niah: single, multikey, multivalue, multiquery; else the task's name */
    char needle[16];          /* ruler_niah: words, numbers or uuids; else empty */
    char arch[ORTHROS_NAME_MAX];
    int ctx;                  /* tokens: the context (ppl: the window; recall: the longest prompt plus --max-new) */
    int axis;                 /* the value on the second axis (orthros_eval_axis_name); 0 for recall */
    int samples, samples_correct; /* samples run and those all right; ppl: windows, and samples_correct 0 */
    int64_t n, correct;       /* trials scored (samples; questions for mqar; ppl: scored tokens) and those right */
    double accuracy, ci_lo, ci_hi; /* correct / n and its Wilson 95% interval (not in ppl cells) */
    double partial;           /* ruler_*: mean fraction of a sample's expected answers found (RULER's score); else NAN */
    double nll, ppl, ppl_lo, ppl_hi; /* ppl: mean NLL in nats per token, exp(nll), its bootstrap 95% interval (NAN
                                      * with one window) */
    int64_t linear_tokens;    /* ppl: scored tokens predicted from linear-phase (prefill) logits, i.e. orthros */
    /* mc (lm-eval's multiple choice; accuracy is acc, correct its count, n the questions): lm-eval's stderr of acc
     * (NAN with one question), acc_norm, its count and its stderr. */
    double acc_stderr, acc_norm, acc_norm_stderr;
    int64_t correct_norm;
    /* recall: SQuAD's exact match and F1 (the official normalisation; means over items, and lm-eval's stderr of
     * each; NAN in files written before they were scored). */
    double exact_match, exact_match_stderr, f1, f1_stderr;
    double elapsed_s;
    cJSON *records;           /* per-sample (ppl: per-window) records: an array of objects, as written */
} orthros_eval_cell;

/* The run configuration of an eval file: what was asked for. */
typedef struct {
    char task[16], variant[32];
    char *model, *archs, *ctxs, *xs; /* xs: the list of the second axis as given (orthros_eval_xs_key) */
    int samples, seed;
    char device[16];
    orthros_sched_config sched; /* the schedule options */
    char scoring[200];
    cJSON *analytic_recall;   /* niah, mqar: the model's token layout, as written */
    char *text;               /* ppl: the text (or token-id) file; recall: the tasks file; else NULL */
    int64_t text_tokens;      /* ppl: tokens of the text scored over (after --max-tokens); recall: items; else -1 */
    int stride;               /* ppl: --stride (0: each window's own length); else -1 */
    int max_new;              /* ruler, recall: the longest answer generated; else -1 */
    char chat[16];            /* ruler, recall: chatml or none */
    char needle[16];          /* ruler_niah: words, numbers or uuids */
    /* mc, recall: the tasks file's layout (mc: arc, hellaswag, piqa, openbookqa, winogrande, generic; recall: generic,
     * squad, squad_v2, triviaqa; empty in older recall files), the task's name in tables, the few-shot examples per
     * prompt and the file they come from (NULL: the tasks file), --limit (0: every item); -1 where not given. */
    char layout[16], name[64];
    int shots;
    int64_t limit;
    char *fewshot;
    char score[16];           /* mc: where the continuations are scored: decode or prefill */
} orthros_eval_config;

typedef struct {
    orthros_result_header hdr;
    cJSON *header;            /* tool, run (its config excepted) and environment as written */
    orthros_eval_config cfg;
    orthros_eval_cell *cells;
    size_t n_cells, cap_cells;
} orthros_eval_file;

/* The tasks an eval file may hold, NULL-terminated. */
extern const char *const orthros_eval_tasks[];
/* The JSON name of a task's second axis: "depth" (niah, ruler_niah), "pairs" (mqar), "hops" (ruler_vt), "words"
 * (ruler_cwe), "stride" (ppl); NULL for recall (one cell per architecture). */
const char *orthros_eval_axis_name(const char *task);
/* The run.config key of the second axis' list: "depths", "pairs", "hops", "words"; NULL for ppl and recall. */
const char *orthros_eval_xs_key(const char *task);
/* 1 for perplexity cells (task ppl). */
int orthros_eval_is_ppl(const char *task);
/* 1 for multiple-choice cells (task mc). */
int orthros_eval_is_mc(const char *task);
/* lm-eval's stderr of a mean of n values of which k are 1 and the rest 0: the sample standard deviation over
 * sqrt(n); NAN for n < 2. */
double orthros_eval_binary_stderr(int64_t k, int64_t n);
/* 1 for the RULER tasks on a text model (ruler_*). */
int orthros_eval_is_ruler(const char *task);
/* The kind, for the scaffolding of results.h and the lifecycle of result_run.h. */
extern const orthros_result_type orthros_eval_type;

void orthros_eval_file_init(orthros_eval_file *f);
void orthros_eval_file_free(orthros_eval_file *f);
void orthros_eval_config_free(orthros_eval_config *c);
int orthros_eval_file_read(orthros_eval_file *f, const char *path, int missing_ok, int *exists);
int orthros_eval_file_from_json(orthros_eval_file *f, const cJSON *root, const char *name);
cJSON *orthros_eval_file_to_json(const orthros_eval_file *f);
int orthros_eval_file_write(const orthros_eval_file *f, const char *path);
/* Takes ownership of c's records. */
int orthros_eval_file_add(orthros_eval_file *f, orthros_eval_cell *c);
const orthros_eval_cell *orthros_eval_file_find(const orthros_eval_file *f, const char *arch, int ctx, int axis);
/* 0 when a file of configuration b can be resumed as one of a (same task, variant, model, samples, seed, device,
 * schedule options, and the text task options: text, stride, max-new, chat, needle); else ORTHROS_EINVAL naming the
 * first field that differs. */
int orthros_eval_config_check_same(const orthros_eval_config *a, const char *a_name, const orthros_eval_config *b,
                                   const char *b_name);

#endif
