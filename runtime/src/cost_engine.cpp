// cost_engine.cpp -- the pricing of cost_engine.h on Eigen.  Built without exceptions and RTTI
// and with no C++ library calls, so that the runtime stays a library C programs link with a C
// compiler: Eigen allocates with malloc and aborts when that fails.
#include "cost_engine.h"

#include <Eigen/Dense>
#include <cstdlib>
#include <new>

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
