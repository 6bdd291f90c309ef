/* orthros plot: figures from result files only (DESIGN section 5). The driver reads and validates every input,
 * writes each figure's numbers and texts to data files in the output folder, and feeds gnuplot the fixed
 * scripts of plots/ on its stdin; no text from a file or an argument reaches gnuplot's command stream.
 *
 * Runs are never mixed: every figure keys its series (and heatmap panels) by what makes two runs differ (model,
 * text and its token count, samples per cell, orthros tail, swa window, hybrid period, the linear formula, prefill
 * chunk, batch, tensor-parallel ranks, device, threads, kernel versions, commit). What all of a figure's inputs
 * share goes to its caption (only what ran: the swa window only when swa ran); what differs names the series. A
 * figure that would need more series than one figure can show is refused, naming what differs. */
#ifndef ORTHROS_PLOT_H
#define ORTHROS_PLOT_H

#include <stddef.h>

/* Figures, in the order they are made; each is written as OUT/NAME.png, .svg or .pdf. */
#define ORTHROS_PLOT_FIGURES 13
extern const char *const orthros_plot_figure_names[ORTHROS_PLOT_FIGURES];

/* Output formats, as bits of orthros_plot_opts.formats: 1 png, 2 svg, 4 pdf. */
#define ORTHROS_PLOT_FORMATS 3

typedef struct {
    const char *out_dir;     /* created when absent */
    unsigned formats;        /* a mask of 1 << (0 png, 1 svg, 2 pdf) */
    const char *scripts_dir; /* a folder holding the .gp scripts; NULL: those compiled in (plots/scripts.h) */
    const char *gnuplot;     /* the gnuplot program (PATH is searched) */
    int verbose;             /* name the figures skipped for want of data, and print gnuplot's warnings */
} orthros_plot_opts;

/* What a run made: figures written, skipped (their data absent from the inputs), refused (too many
 * configurations for one figure: the message names what differs), and the warnings gnuplot printed (caught:
 * shown with verbose, counted otherwise). */
typedef struct {
    int made, skipped, refused, warnings;
} orthros_plot_counts;

/* Reads and validates paths[n] (bench, kernel-bench, eval and anchor files), then makes every figure whose data is
 * present. Fails with ORTHROS_EFORMAT for a file that is not a valid result file (nothing is drawn), ORTHROS_EIO
 * when a file cannot be written, ORTHROS_EUNSUPPORTED when gnuplot cannot be started, and ORTHROS_EINVAL when
 * gnuplot fails on a figure (its messages in the error). */
int orthros_plot_run(orthros_plot_counts *counts, const char *const *paths, size_t n, const orthros_plot_opts *o);

int orthros_cmd_plot(int argc, char **argv);

#endif
