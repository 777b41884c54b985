"""mprof.model: SVD instantiation of cost models, Tcl modeling scripts, model files, C export.

from mprof.model import load_model
model = load_model("rts.model.json")
terms = model.term_matrix([pe.objects for pe in run.pes])  # a row per PE, records summed
model.price(terms)                          # Estimates (arrays): the one pricing
model.price_categories("rts", terms)        # category -> Estimates
model.price(model.priced_terms(objects))    # one sample from a mapping: an Estimate
"""

__all__ = ["Estimate", "Estimates", "Model", "ModuleInfo", "TermMatrix", "load_model"]


def __getattr__(name):
    # Imported on first use: SciPy takes most of a second to load, and every `mprof` command
    # (e.g. `mprof db list`) imports this package through the command-line registry.
    if name in __all__:
        from . import modelfile

        return getattr(modelfile, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
