/* orthros plot: figures from result files only (DESIGN section 5). The driver reads and validates every input,
 * writes each figure's numbers and texts to data files in the output folder, and feeds gnuplot the fixed
 * scripts of plots/ on its stdin; no text from a file or an argument reaches gnuplot's command stream. */
#ifndef ORTHROS_PLOT_H
#define ORTHROS_PLOT_H

#include <stddef.h>

/* Figures, in the order they are made; each is written as OUT/NAME.png, .svg or .pdf. */
#define ORTHROS_PLOT_FIGURES 12
extern const char *const orthros_plot_figure_names[ORTHROS_PLOT_FIGURES];

/* Output formats, as bits of orthros_plot_opts.formats: 1 png, 2 svg, 4 pdf. */
#define ORTHROS_PLOT_FORMATS 3

typedef struct {
    const char *out_dir;     /* created when absent */
    unsigned formats;        /* a mask of 1 << (0 png, 1 svg, 2 pdf) */
    const char *scripts_dir; /* a folder holding the .gp scripts; NULL: those compiled in (plots/scripts.h) */
    const char *gnuplot;     /* the gnuplot program (PATH is searched) */
} orthros_plot_opts;

/* Reads and validates paths[n] (bench, eval and anchor files), then makes every figure whose data is present; a
 * figure whose data is absent is skipped with one line on stderr. *made receives the number of figures written.
 * Fails with ORTHROS_EFORMAT for a file that is not a valid result file (nothing is drawn), ORTHROS_EIO when a
 * file cannot be written, ORTHROS_EUNSUPPORTED when gnuplot cannot be started, and ORTHROS_EINVAL when gnuplot
 * fails on a figure. */
int orthros_plot_run(int *made, const char *const *paths, size_t n, const orthros_plot_opts *o);

int orthros_cmd_plot(int argc, char **argv);

#endif
