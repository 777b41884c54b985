// cost_engine.cpp -- the pricing of cost_engine.h on Eigen.  Built without exceptions and RTTI
// and with no C++ library calls, so that the runtime stays a library C programs link with a C
// compiler.
//
// Eigen allocates with malloc.  Built without exceptions it reports a failed allocation by
// calling the global operator new with an impossible size (Memory.h, throw_std_bad_alloc),
// counting on that to throw: a reference to the C++ library, which gcc drops (and then went on
// with a NULL block) but clang keeps, so that C programs built with clang did not link.
// Declared first, before any header, the global operator new of this file is a function of
// the runtime's, which ends the run with a message.
#include <cstddef>
void *operator new(std::size_t) __asm__("mpr_cost_engine_no_memory");

#include "cost_engine.h"

#include <Eigen/Dense>
#include <cstdlib>
#include <new>

extern "C" {
void mpr_fatal(const char *fmt, ...) __attribute__((noreturn)); // mpr_base.h
void *mpr_cost_engine_no_memory(std::size_t n);
}

void *mpr_cost_engine_no_memory(std::size_t n)
{
    (void)n; // SIZE_MAX: Eigen's way of saying that an allocation failed
    mpr_fatal("out of memory pricing a cost model");
}

struct mpr_cost_model {
    Eigen::VectorXd value;
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> cov;
    Eigen::VectorXd own_var; // of the parameters after the first ncov
};

extern "C" mpr_cost_model *mpr_cost_model_new(int n, const double *value, int ncov,
                                              const double *cov, const double *own_var)
{
    if (n < 0 || ncov < 0 || ncov > n)
        return nullptr;
    void *mem = std::malloc(sizeof(mpr_cost_model));
    if (!mem)
        return nullptr;
    mpr_cost_model *m = new (mem) mpr_cost_model;
    m->value = Eigen::Map<const Eigen::VectorXd>(value, n);
    m->cov =
        Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
            cov, ncov, ncov);
    m->own_var = Eigen::VectorXd::Zero(n - ncov);
    if (own_var)
        m->own_var = Eigen::Map<const Eigen::VectorXd>(own_var + ncov, n - ncov);
    return m;
}

extern "C" void mpr_cost_model_free(mpr_cost_model *m)
{
    if (!m)
        return;
    m->~mpr_cost_model();
    std::free(m);
}

extern "C" int mpr_cost_model_size(const mpr_cost_model *m) { return (int)m->value.size(); }

extern "C" void mpr_cost_price(const mpr_cost_model *m, const double *f, double *cost,
                               double *variance)
{
    const Eigen::Index n = m->value.size(), ncov = m->cov.rows();
    Eigen::Map<const Eigen::VectorXd> terms(f, n);
    *cost = m->value.dot(terms);
    auto fc = terms.head(ncov);
    auto fo = terms.tail(n - ncov);
    *variance = fc.dot(m->cov * fc) + m->own_var.dot(fo.cwiseAbs2());
}
