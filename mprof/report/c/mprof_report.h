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
 *     Model band (90 %): +-  0.041
 *
 * The band line is printed after `mprof_report_bands(mpm_halfwidth, MPM_NPARAMS)`: records
 * added with MPROF_REPORT_RECORD then add their term values too, and the band is the half
 * width of the model's total from the joint covariance of its fitted and imported parameters
 * (the parameters' uncertainty; `mprof report` adds the fit's residual scatter on top).
 *
 * Every category the model exports is printed (a category whose terms were all ignored in
 * the fit prints 0; `mprof report` leaves those out).
 */
#ifndef MPROF_REPORT_H
#define MPROF_REPORT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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

/* Turns on the band line: `halfwidth` and `nparams` are the exported model's mpm_halfwidth and
 * MPM_NPARAMS.  Call before adding records. */
void mprof_report_bands(double (*halfwidth)(const double *f), int nparams);

/* The parameter count given to mprof_report_bands (0 when bands are off). */
int mprof_report_nparams(void);

/* Adds term values f[nparams] (from mpm_<module>_terms) to the model total's term vector.
 * Thread-safe. */
void mprof_report_add_terms(const double *f, int nparams);

/* Prices a generated statistics record with the exported model and adds it:
 *   MPROF_REPORT_RECORD(mpm_graph, MPM_GRAPH, 1, "graph", rec)
 * needs <module>_perf.h included before mpm_model.h (for mpm_<module>_costs_record). */
#define MPROF_REPORT_RECORD(fn_, UPPER_, id_, module_, rec_)                                       \
    do {                                                                                           \
        double mprof_report_costs_[UPPER_##_NCATS];                                                \
        fn_##_costs_record((rec_), mprof_report_costs_);                                           \
        mprof_report_add((id_), (module_), fn_##_category_names, mprof_report_costs_,              \
                         UPPER_##_NCATS);                                                          \
        int mprof_report_np_ = mprof_report_nparams();                                             \
        if (mprof_report_np_ > 0) {                                                                \
            double *mprof_report_f_ = calloc((size_t)mprof_report_np_, sizeof(double));            \
            if (mprof_report_f_) {                                                                 \
                fn_##_terms_record((rec_), mprof_report_f_);                                       \
                mprof_report_add_terms(mprof_report_f_, mprof_report_np_);                         \
                free(mprof_report_f_);                                                             \
            }                                                                                      \
        }                                                                                          \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif /* MPROF_REPORT_H */
