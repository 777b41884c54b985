/* cost_engine.h -- the pricing of a cost model (Model.price of mprof/model/modelfile.py) behind
 * a C interface, in C++ on Eigen (cost_engine.cpp): the runtime's self-report (MPROF_MODEL,
 * selfreport.c) calls it, and so can any runtime policy that needs a cost with its uncertainty.
 *
 * A model has n parameters: value[i], the first ncov of them with a joint covariance
 * (row-major ncov x ncov), the others with a variance of their own (0 when unknown), taken as
 * independent.  Pricing term values f[0..n-1] (f[i] multiplies parameter i) gives
 *     cost     = sum_i value[i] f[i]
 *     variance = f[:ncov]' Cov f[:ncov] + sum_{i >= ncov} own_var[i] f[i]^2
 * Leave a parameter out of a price (an ignored term) by giving it f[i] = 0. */
#ifndef MPR_COST_ENGINE_H
#define MPR_COST_ENGINE_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mpr_cost_model mpr_cost_model;

/* Copies the arrays; NULL when out of memory.  own_var may be NULL (all 0). */
mpr_cost_model *mpr_cost_model_new(int n, const double *value, int ncov, const double *cov,
                                   const double *own_var);
void mpr_cost_model_free(mpr_cost_model *m);
int mpr_cost_model_size(const mpr_cost_model *m);
void mpr_cost_price(const mpr_cost_model *m, const double *f, double *cost, double *variance);

#ifdef __cplusplus
}
#endif
#endif
