/* orthros report (cli/report.c). */
#ifndef ORTHROS_CLI_REPORT_H
#define ORTHROS_CLI_REPORT_H

/* orthros report FILE...: the table of any result file, validated first, in any -o format; nothing is run. */
int orthros_cmd_report(int argc, char **argv);

#endif
