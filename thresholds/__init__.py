"""thresholds: sample-complexity thresholds for multi-index targets.

Public surface (one concept per module):

* :func:`get_activation`, :func:`get_link` - catalogue / expression lookup (``catalog``)
* :func:`parse_expression` - whitelist parser (``expr``)
* :func:`expect_exact`, :func:`expect_numeric` - Gaussian expectations (``gaussian``)
* :func:`activation_hermite`, :func:`link_hermite`, :func:`information_exponent`,
  :func:`hermite_coefficients` - probabilists' Hermite expansions (``hermite``)
* :func:`delta_alg` - easy/hard split and optimal spectral threshold (``alg``)
* :class:`WeightLaw`, :func:`bulk_edges`, :func:`density`, :func:`stieltjes` - generalized
  Marchenko-Pastur equation (``stieltjes``)
* :func:`spectrum`, :func:`spike_threshold` - outliers, overlaps, thresholds (``outlier``)
* :func:`spectral` - preprocessed spectral estimators of a link (``spectral``)
* :class:`DMFTSetup`, :func:`solve_dmft` - DMFT of the first phase of GD (``dmft``)
* :class:`FirstPhaseLaw`, :class:`ReplicaLaw` - the law of (u, y, g_H) the Hessian engines take (``laws``)
* :func:`hessian_spectrum`, :func:`hessian_weight`, :func:`spectra_of_law` - Hessian after the first
  phase (``hessian``)
* :class:`Problem` - network, training and target of a threshold (``problem``)
* :class:`NNSetup`, :class:`NNResult` - delta_NN records (``nn``); :func:`delta_nn` - its search
  (``search``); :func:`evaluate` - the indicators at one delta (``evaluation``);
  :func:`escape_times` - grokking and finite-d thresholds (``escape``)
* :class:`PopulationLaw`, :func:`sectors` - its hard outliers in the wide limit m -> inf (``meanfield``)
* :class:`InverseBranches` (``branches``), :class:`LevelSetGram` (``levelset``) -
  conditional moments on level sets of a link
* errors: :class:`ThresholdsError` and subclasses (``errors``)
"""

import importlib
import sys
import types

# name -> module that defines it; a module is imported on first use of one of its names, so that
# ``import thresholds`` (and the CLI's lightest commands) does not pay for sympy, numba and scipy
_EXPORTS = {
    "alg": ("AlgResult", "delta_alg"),
    "branches": ("InverseBranches",),
    "catalog": ("Activation", "Link", "activation_names", "get_activation", "get_link", "link_names"),
    "errors": ("CatalogError", "ConvergenceError", "DivergenceError", "ExpressionError",
               "NotDifferentiableError", "ThresholdsError", "UnsupportedError"),
    "dmft": ("DMFTResult", "DMFTSetup", "solve_dmft"),
    "expr": ("parse_expression",),
    "gaussian": ("expect_exact", "expect_numeric"),
    "hessian": ("HessianSpectrum", "hessian_spectrum", "hessian_weight", "spectra_of_law"),
    "laws": ("FirstPhaseLaw", "ReplicaLaw"),
    "nn": ("NNResult", "NNSetup"),
    "search": ("delta_nn",),
    "evaluation": ("evaluate",),
    "escape": ("escape_times",),
    "hermite": ("HermiteCoefficient", "activation_hermite", "hermite_coefficients", "information_exponent",
                "link_hermite"),
    "levelset": ("LevelSetGram",),
    "meanfield": ("PopulationLaw", "sectors"),
    "outlier": ("spectrum", "spike_threshold"),
    "problem": ("Problem",),
    "spectral": ("spectral", "spectral_density"),
    "stieltjes": ("WeightLaw", "bulk_edges", "density", "stieltjes"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_MODULE_OF)


class _Package(types.ModuleType):
    """The package module.  The import system sets every imported submodule as an attribute of its
    package; two public functions share the name of their module (``spectral``, ``stieltjes``), and the
    package attribute stays the function, as the catalogue above lists it."""

    def __setattr__(self, name, value):
        if isinstance(value, types.ModuleType) and name in _MODULE_OF and _MODULE_OF[name] == name:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'thresholds' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
