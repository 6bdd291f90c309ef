/* The markdown report of the reproduce-21.9x recipe, written from result files only. */
#ifndef ORTHROS_REPORT_H
#define ORTHROS_REPORT_H

/* Writes md_path from the bench result files json_paths[n] (missing files are reported as not run) and, when not
 * NULL, an anchors file written by bench/kernels/anchors.py. */
int orthros_bench_report(const char *md_path, const char *const *json_paths, int n, const char *anchors_path);
/* The markdown report of the e2e recipe (time to first token, time per output token against its floor, total) from
 * its result files json_paths[n], missing ones reported as not run. */
int orthros_bench_e2e_report(const char *md_path, const char *const *json_paths, int n);

#endif
