"""validation.width_check's path check: the full source basis at two path counts and the truncated basis, each
with its self-interaction (thresholds.dmft eq. (6f))."""

import numpy as np


def test_path_check_lists_the_self_interaction_of_each_basis(monkeypatch):
    from thresholds.dmft import DMFTSetup, solve_dmft
    from validation import width_check
    monkeypatch.setattr(width_check, "PATHS", 800)
    monkeypatch.setattr(width_check, "REPLICAS", 4)
    dm = solve_dmft(DMFTSetup("quad", "phase_retrieval", 3.0, 0.05, 8, m=2, paths=800, replicas=4, seed=1))
    gd = {"train_loss": np.full((3, 9), 0.5) + np.arange(3)[:, None] * 0.01}   # mean 0.51, s.e. 0.01 / sqrt(3)
    lines, zs = width_check._path_check("quad", "phase_retrieval", 3.0, 0.05, 8, 2, dm, gd)
    header = next(line for line in lines if line.startswith("| t |"))
    sizes = [float(part.split("s = ")[1].split(")")[0]) for part in header.split("|") if "s = " in part]
    # full basis: every step opens m sources, r = 16; 200 paths per replica, then 800
    assert sizes[:2] == [round(3.0 * (16 + 2) / 200, 3), round(3.0 * (16 + 2) / 800, 3)]
    assert sizes[2] <= sizes[1]                             # the truncated basis opens at most as many sources
    rows = [line for line in lines if line.startswith("| 2 |") or line.startswith("| 4 |") or line.startswith("| 8 |")]
    assert len(rows) == 3 and all(row.count("+-") == 4 for row in rows)
    z = float(rows[-1].rstrip(" |").split("|")[-1])
    assert np.isfinite(z) and len(zs) == 3 and abs(zs[-1] - z) < 0.006
