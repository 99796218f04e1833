"""The layers point one way: cli -> validation -> thresholds.  The library accepts a first-phase law
(thresholds.laws) instead of importing the validation layer that produces the finite-d one."""

import ast
import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _imported_modules(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


@pytest.mark.parametrize("path", sorted((ROOT / "thresholds").glob("*.py")), ids=lambda p: p.name)
def test_the_library_imports_neither_validation_nor_the_cli(path):
    bad = [m for m in _imported_modules(path) if m.split(".")[0] in ("validation", "cli")]
    assert not bad, f"{path.name} imports {bad}"


def test_importing_the_library_is_light():
    # names of the public surface are resolved on first use: `import thresholds` loads no sympy / numba
    import subprocess
    import sys
    code = "import sys, thresholds; print('sympy' in sys.modules, 'numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
    import thresholds
    assert all(callable(getattr(thresholds, name)) for name in thresholds.__all__)
    with pytest.raises(AttributeError):
        thresholds.no_such_name  # noqa: B018


def test_the_finite_d_law_is_supplied_by_the_caller():
    from thresholds.errors import UnsupportedError
    from thresholds.evaluation import evaluate
    from thresholds.nn import NNSetup
    with pytest.raises(UnsupportedError, match="law_source"):
        evaluate(NNSetup("quad", "3*tanh(z**2)", eta=1e-4, steps=8, law="gd", law_d=60, replicas=2), 2.0,
                 cache=False)


def test_a_user_supplied_law_gives_the_spectra_of_that_law():
    # a first-phase law built by hand: at eta -> 0, u is independent of y (the law at initialization);
    # the Hessian of that sample has the same indicator whichever way the sample reaches the engine
    from thresholds.dmft import DMFTSetup
    from thresholds.hessian import _one_law, check_supported, spectra_of_law
    from thresholds.laws import FirstPhaseLaw, ReplicaLaw
    setup = DMFTSetup("quad", "phase_retrieval", 4.0, 1e-4, 1, replicas=2, paths=4000)
    rng = np.random.default_rng(3)
    reps = []
    for _ in range(2):
        g, u = rng.standard_normal((2, 4000))
        reps.append(ReplicaLaw(u, g**2, g, np.full(4000, 1 / 4000)))
    out = spectra_of_law(setup, FirstPhaseLaw({1: reps}, "law: hand-made"), outliers="none")
    act = check_supported(setup)
    direct = [_one_law(act, setup, 4.0, r.u, r.y, r.g, r.w, False).indicator for r in reps]
    assert out[1].negative_indicator == pytest.approx(np.mean(direct), rel=1e-12)
    assert out[1].notes[0] == "law: hand-made, after 1 steps"
    with pytest.raises(ValueError):
        ReplicaLaw(np.zeros(3), np.zeros(4), np.zeros(4), np.zeros(4))
