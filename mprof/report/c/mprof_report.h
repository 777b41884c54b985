/*
 * mprof_report.h -- a program prints its own Cost Profile at exit (Wen 1995, §4.4.4: "the
 * models are transformed into C functions that are linked into the library").
 *
 * Link with the C that `mprof model export-c MODEL.json -o DIR` writes (mpm_model.h/.c) and
 * with mprof_report.c (copy both files with `mprof report --c-helper DIR`).  Then:
 *
 *     #include "graph_perf.h"      // from `mprof iface compile`, before mpm_model.h
 *     #include "mpm_model.h"
 *     #include "mprof_report.h"
 *
 *     int main(...) {
 *         mprof_report_atexit();                 // prints at exit when MPROF_REPORT=1
 *         ...
 *     }
 *     // on every PE, when its work is done (thread-safe; same id+module add up over PEs):
 *     MPROF_REPORT_RECORD(mpm_graph, MPM_GRAPH, 1, "graph", my_graph_stats);
 *     mprof_report_add_time(elapsed_seconds_of_this_pe);
 *
 * The output has the shape of `mprof report` (and of the paper's Fig 4.12):
 *
 *     *** Cost Profile ***
 *     Id 1: STARTUP=  0.004 OP=  0.034 DATA=  0.060
 *     Time: Model=  2.023, Total=  2.023
 *
 * Every category the model exports is printed (a category whose terms were all ignored in
 * the fit prints 0; `mprof report` leaves those out).
 */
#ifndef MPROF_REPORT_H
#define MPROF_REPORT_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the environment variable MPROF_REPORT is set to 1. */
int mprof_report_enabled(void);

/* Adds one object's estimated seconds per category (e.g. from mpm_<module>_costs_record) to
 * the profile; calls with the same id and module are summed.  `categories` must stay valid
 * until the report is printed (the exported mpm_<module>_category_names are static).
 * Thread-safe, so every PE of the shm backend can call it. */
void mprof_report_add(uint64_t id, const char *module, const char *const *categories,
                      const double *costs, int ncats);

/* Adds one PE's measured elapsed seconds to the `Total=` figure.  Thread-safe. */
void mprof_report_add_time(double elapsed_s);

/* Prints the Cost Profile gathered so far. */
void mprof_report_print(FILE *out);

/* If MPROF_REPORT=1: registers an atexit handler that prints the Cost Profile to stdout and
 * returns 1; otherwise returns 0 and nothing is printed. */
int mprof_report_atexit(void);

/* Forgets everything gathered (for programs that report several phases). */
void mprof_report_reset(void);

/* Prices a generated statistics record with the exported model and adds it:
 *   MPROF_REPORT_RECORD(mpm_graph, MPM_GRAPH, 1, "graph", rec)
 * needs <module>_perf.h included before mpm_model.h (for mpm_<module>_costs_record). */
#define MPROF_REPORT_RECORD(fn_, UPPER_, id_, module_, rec_)                                       \
    do {                                                                                           \
        double mprof_report_costs_[UPPER_##_NCATS];                                                \
        fn_##_costs_record((rec_), mprof_report_costs_);                                           \
        mprof_report_add((id_), (module_), fn_##_category_names, mprof_report_costs_,              \
                         UPPER_##_NCATS);                                                          \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif /* MPROF_REPORT_H */
