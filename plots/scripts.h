/* The gnuplot scripts of plots/, compiled into the binary (plots/embed.cmake writes their bytes at build time), so
 * that `orthros plot` draws from an out-of-tree build or an installed copy without the source tree. --scripts DIR
 * and ORTHROS_PLOTS_DIR still take the scripts from a folder (editing them without a rebuild). */
#ifndef ORTHROS_PLOT_SCRIPTS_H
#define ORTHROS_PLOT_SCRIPTS_H

#include <stddef.h>

/* The text of script `name` ("common.gp", "niah.gp", ...) and its length, or NULL when there is none. */
const char *orthros_plot_embedded_script(const char *name, size_t *len);

#endif
