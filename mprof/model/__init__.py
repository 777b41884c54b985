"""mprof.model: SVD instantiation of cost models, Tcl modeling scripts, model files, C export.

    from mprof.model import load_model
    model = load_model("rts.model.json")
    model.category_costs("rts", stats)          # category -> seconds
    model.category_bands("rts", stats)          # category -> (seconds, 90 % half width)
"""

from .modelfile import Model, ModuleInfo, load_model

__all__ = ["Model", "ModuleInfo", "load_model"]
