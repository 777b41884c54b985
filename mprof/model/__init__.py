"""mprof.model: SVD instantiation of cost models, Tcl modeling scripts, model files, C export.

    from mprof.model import load_model
    model = load_model("rts.model.json")
    terms = model.priced_terms(objects)         # parameter -> term value, summed over records
    model.price(terms)                          # Estimate(seconds, variance): the one pricing
    model.price_categories("rts", terms)        # category -> Estimate
"""

from .modelfile import Estimate, Model, ModuleInfo, load_model

__all__ = ["Estimate", "Model", "ModuleInfo", "load_model"]
