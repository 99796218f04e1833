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
* :func:`hessian_spectrum`, :func:`hessian_weight` - Hessian after the first phase (``hessian``)
* :class:`PopulationLaw`, :func:`sectors` - its hard outliers in the wide limit m -> inf (``meanfield``)
* :class:`InverseBranches` (``branches``), :class:`LevelSetGram` (``levelset``) -
  conditional moments on level sets of a link
* errors: :class:`ThresholdsError` and subclasses (``errors``)
"""

from .alg import AlgResult, delta_alg
from .branches import InverseBranches
from .catalog import Activation, Link, activation_names, get_activation, get_link, link_names
from .errors import (CatalogError, ConvergenceError, DivergenceError, ExpressionError,
                     NotDifferentiableError, ThresholdsError, UnsupportedError)
from .dmft import DMFTResult, DMFTSetup, solve_dmft
from .expr import parse_expression
from .gaussian import expect_exact, expect_numeric
from .hessian import HessianSpectrum, hessian_spectrum, hessian_weight
from .hermite import (HermiteCoefficient, activation_hermite, hermite_coefficients,
                      information_exponent, link_hermite)
from .levelset import LevelSetGram
from .meanfield import PopulationLaw, sectors
from .outlier import spectrum, spike_threshold
from .spectral import spectral, spectral_density
from .stieltjes import WeightLaw, bulk_edges, density, stieltjes

__all__ = [
    "Activation", "AlgResult", "CatalogError", "ConvergenceError", "DivergenceError",
    "ExpressionError", "HermiteCoefficient", "InverseBranches", "LevelSetGram", "Link",
    "NotDifferentiableError", "ThresholdsError", "UnsupportedError", "activation_hermite",
    "activation_names", "delta_alg", "expect_exact", "expect_numeric", "get_activation",
    "get_link", "hermite_coefficients", "information_exponent", "link_hermite", "link_names",
    "parse_expression", "spectral", "spectral_density", "spectrum", "spike_threshold", "WeightLaw",
    "bulk_edges", "density", "stieltjes", "DMFTResult", "DMFTSetup", "solve_dmft", "HessianSpectrum",
    "hessian_spectrum", "hessian_weight", "PopulationLaw", "sectors",
]
