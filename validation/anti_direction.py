"""Does the critical amplitude depend on the direction inside the antisymmetric subspace (m > 2)?

thresholds.modes computes r_c along one antisymmetric direction, that of a single neuron's start,
(m / sqrt(m - 1)) (e_1 - 1/m).  At m >= 4 the subspace also holds, e.g., the two-pair direction
(1, 1, -1, -1, ...).  Both have the same linear growth (the neurons are exchangeable); this bisects the
planted q0 (thresholds.planted.critical_overlap) along each and prints one JSON line per direction, so that
the nonlinear escape can be compared.

Run:  python -m validation.anti_direction --m 4 --delta 3 --direction pairs --low 0.1 --high 0.16 --paths 10000
"""

from __future__ import annotations

import argparse
import json
import time

from thresholds.modes import directions
from thresholds.planted import critical_overlap
from thresholds.problem import Problem


def direction(name: str, m: int) -> tuple:
    """A unit antisymmetric mode ((1/m)|v|^2 = 1): 'single' (one neuron's start) or 'pairs' (m even)."""
    if name == "single":
        return directions(m)["anti"]
    if name == "pairs" and m % 2 == 0:
        return tuple(1.0 if j < m // 2 else -1.0 for j in range(m))
    raise SystemExit(f"direction must be 'single' or 'pairs' (m even), got {name!r} at m = {m}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-a", "--activation", default="quad")
    ap.add_argument("-l", "--link", default="phase_retrieval")
    ap.add_argument("--eta", type=float, default=0.05)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--m", type=int, default=4)
    ap.add_argument("--delta", type=float, required=True)
    ap.add_argument("--direction", default="pairs")
    ap.add_argument("--low", type=float, default=0.05)
    ap.add_argument("--high", type=float, default=0.2)
    ap.add_argument("--paths", type=int, default=10_000)
    args = ap.parse_args(argv)
    problem = Problem(args.activation, args.link, eta=args.eta, m=args.m, steps=args.steps)
    v = direction(args.direction, args.m)
    t0 = time.time()
    res = critical_overlap(problem, args.delta, args.steps, low=args.low, high=args.high, paths=args.paths,
                           direction=v)
    print(json.dumps({"direction": args.direction, "v": v, "m": args.m, "delta": args.delta, "paths": args.paths,
                      "q0_low": res.low, "q0_high": res.high, "runs": res.runs, "seconds": time.time() - t0}))


if __name__ == "__main__":
    main()
