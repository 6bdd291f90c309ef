/* orthros plot: figures from result files only (DESIGN section 5). The driver extracts the data of each
 * figure from bench, eval and anchor files into .dat files in the output directory, then runs gnuplot on the
 * fixed scripts in plots/ with a few -e variables (titles, labels, file names). */
#ifndef ORTHROS_PLOT_H
#define ORTHROS_PLOT_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Figures, in the order they are made; each is written as OUT/NAME.png or OUT/NAME.svg. */
#define ORTHROS_PLOT_FIGURES 6
extern const char *const orthros_plot_figure_names[ORTHROS_PLOT_FIGURES];

typedef struct {
    const char *out_dir;     /* created when absent */
    const char *format;      /* "png" or "svg" */
    const char *scripts_dir; /* the plots/ folder holding the .gp scripts */
    const char *gnuplot;     /* the gnuplot program (PATH is searched) */
} orthros_plot_opts;

/* Makes every figure whose data is present in files[n] (parsed result files; names[] for messages and the
 * provenance label); a figure whose data is absent is skipped with one line on stderr. *made receives the
 * number of figures written. Fails with ORTHROS_EFORMAT for a file of unknown kind, ORTHROS_EIO when a file
 * cannot be written, ORTHROS_EUNSUPPORTED when gnuplot cannot be started, and ORTHROS_EINVAL when gnuplot
 * fails on a figure. */
int orthros_plot_run(int *made, const cJSON *const *files, const char *const *names, size_t n,
                     const orthros_plot_opts *o);

int orthros_cmd_plot(int argc, char **argv);

#endif
