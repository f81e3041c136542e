"""Summaries of a results database: outcome counts, best grasps, epsilon distribution, failures
by kind, and plots (epsilon histogram, success rate against approach direction)."""
from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .store import read_config, read_results

__all__ = ["Summary", "summarize", "plot_summary"]

_COLS = ["id", "object", "source", "dir_x", "dir_y", "dir_z", "roll", "standoff", "preshape", "status",
         "error_kind", "error_stage", "error", "force_closure", "epsilon", "volume", "n_contacts", "approach_stop",
         "touched", "held", "slip", "lifted", "dropped", "dyn_force_closure", "dyn_epsilon", "t_total", "t_cpu"]


@dataclass
class Summary:
    """Figures of one results database (see :func:`summarize`)."""

    db: str
    name: str
    version: str
    total: int                      # candidates of the configuration
    evaluated: int                  # rows present
    by_status: dict                 # status -> rows
    by_object: dict                 # object -> {rows, force_closure, held}
    force_closure: int              # rows with force closure
    epsilon: np.ndarray             # epsilon of the force-closure grasps
    best: list                      # top rows by epsilon (dicts)
    failures: list                  # [(error_kind, error_stage, count, example message)]
    dynamic: dict | None = None     # held, dropped, mean slip ... when the run was dynamic
    timing: dict = field(default_factory=dict)
    rows: list = field(default_factory=list, repr=False)

    @property
    def ok(self) -> int:
        return self.by_status.get("ok", 0)

    def epsilon_histogram(self, bins: int = 10):
        if not len(self.epsilon):
            return np.zeros(0), np.zeros(0)
        hi = float(self.epsilon.max())
        return np.histogram(self.epsilon, bins=bins, range=(0.0, hi if hi > 0 else 1.0))

    def text(self) -> str:
        L = [f"batch '{self.name}' ({self.db}; graspsim {self.version})",
             f"candidates: {self.total}, evaluated: {self.evaluated}"
             + (f" ({self.total - self.evaluated} not yet: continue with --resume)" if self.evaluated < self.total else "")]
        L.append("outcomes: " + ", ".join(f"{k} {v} ({100.0 * v / max(1, self.evaluated):.1f}%)"
                                          for k, v in sorted(self.by_status.items())))
        L.append(f"force closure: {self.force_closure} of {self.ok} grasps evaluated "
                 f"({100.0 * self.force_closure / max(1, self.ok):.1f}%), "
                 f"{100.0 * self.force_closure / max(1, self.evaluated):.1f}% of all candidates")
        if len(self.by_object) > 1:
            for o, d in sorted(self.by_object.items()):
                L.append(f"  {o}: {d['rows']} rows, force closure {d['force_closure']}"
                         + (f", held {d['held']}" if self.dynamic else ""))
        if self.dynamic:
            d = self.dynamic
            L.append(f"lift test: held {d['held']} of {d['tested']} ({100.0 * d['held'] / max(1, d['tested']):.1f}%), "
                     f"dropped {d['dropped']}, median slip of held grasps {d['median_slip'] * 1e3:.2f} mm")
        if len(self.epsilon):
            q = np.percentile(self.epsilon, [0, 25, 50, 75, 100])
            L.append(f"epsilon (force-closure grasps, n={len(self.epsilon)}): min {q[0]:.4g}, q1 {q[1]:.4g}, "
                     f"median {q[2]:.4g}, q3 {q[3]:.4g}, max {q[4]:.4g}, mean {self.epsilon.mean():.4g}")
            counts, edges = self.epsilon_histogram()
            width = max(counts.max(), 1)
            for c, a, b in zip(counts, edges[:-1], edges[1:]):
                L.append(f"  [{a:8.4f}, {b:8.4f}) {int(c):6d} " + "#" * int(round(40 * c / width)))
        else:
            L.append("epsilon: no force-closure grasp")
        if self.best:
            L.append(f"best {len(self.best)} grasps (by epsilon):")
            L.append("      id  object        dir (az, el) deg   roll deg  standoff mm  preshape             "
                     "epsilon    volume  contacts" + ("  held  slip mm" if self.dynamic else ""))
            for r in self.best:
                az = math.degrees(math.atan2(r["dir_y"], r["dir_x"]))
                el = math.degrees(math.asin(max(-1.0, min(1.0, r["dir_z"]))))
                pre = _preshape_text(r["preshape"])
                s = (f"  {r['id']:6d}  {r['object'][:12]:12s}  ({az:7.1f}, {el:6.1f})   {math.degrees(r['roll']):8.1f}  "
                     f"{r['standoff'] * 1e3:11.1f}  {pre[:19]:19s}  {r['epsilon']:8.4f}  {r['volume']:8.3g}  "
                     f"{r['n_contacts']:8d}")
                if self.dynamic:
                    s += f"  {'yes' if r.get('held') else 'no ':>4s}  {(r.get('slip') or 0.0) * 1e3:7.2f}"
                L.append(s)
        if self.failures:
            L.append("failures by kind:")
            for kind, stage, n, msg in self.failures:
                L.append(f"  {kind} ({stage}): {n}  e.g. {msg.splitlines()[0][:100] if msg else ''}")
        else:
            L.append("failures: none")
        if self.timing:
            t = self.timing
            L.append(f"time per candidate: median {t['median_ms']:.1f} ms wall, {t['median_cpu_ms']:.1f} ms CPU; "
                     f"{t['per_cpu_s']:.1f} candidates per CPU-second")
        return "\n".join(L)

    def plot(self, directory) -> list[Path]:
        return plot_summary(self, directory)


def _preshape_text(js) -> str:
    try:
        d = json.loads(js or "{}")
    except ValueError:
        return str(js)
    return ",".join(f"{k}={math.degrees(v):.0f}" for k, v in d.items()) or "-"


def summarize(db, *, top: int = 10, object: str | None = None) -> Summary:
    """Figures of the results in ``db`` (optionally of one object)."""
    meta = read_config(db)
    rows = read_results(db, columns=_COLS, where="object = ?" if object else None, params=(object,) if object else ())
    cfg = meta.get("config", {})
    by_status = Counter(r["status"] for r in rows)
    ok = [r for r in rows if r["status"] == "ok"]
    fc = [r for r in ok if r["force_closure"]]
    eps = np.array([r["epsilon"] for r in fc], dtype=float)
    best = sorted(fc, key=lambda r: (-r["epsilon"], r["id"]))[:max(0, top)]
    fails = Counter((r["error_kind"], r["error_stage"]) for r in rows if r["status"] == "error")
    example = {}
    for r in rows:
        if r["status"] == "error":
            example.setdefault((r["error_kind"], r["error_stage"]), r["error"])
    failures = [(k, s, n, example[(k, s)]) for (k, s), n in sorted(fails.items(), key=lambda x: (-x[1], x[0]))]
    dynamic = None
    if cfg.get("evaluation", {}).get("mode") == "dynamic":
        tested = [r for r in rows if r["held"] is not None]
        held = [r for r in tested if r["held"]]
        dynamic = {"tested": len(tested), "held": len(held), "dropped": sum(1 for r in tested if r["dropped"]),
                   "median_slip": float(np.median([r["slip"] for r in held])) if held else 0.0}
        best = sorted(fc, key=lambda r: (-(r["held"] or 0), -r["epsilon"], r["id"]))[:max(0, top)]
    by_object = {}
    for r in rows:
        d = by_object.setdefault(r["object"], {"rows": 0, "force_closure": 0, "held": 0})
        d["rows"] += 1
        d["force_closure"] += int(bool(r["force_closure"]))
        d["held"] += int(bool(r["held"]))
    timing = {}
    tt = [r["t_total"] for r in rows if r["t_total"] is not None]
    tc = [r["t_cpu"] for r in rows if r["t_cpu"] is not None]
    if tt and tc:
        timing = {"median_ms": 1e3 * float(np.median(tt)), "median_cpu_ms": 1e3 * float(np.median(tc)),
                  "per_cpu_s": len(tc) / max(sum(tc), 1e-12)}
    return Summary(db=str(db), name=meta.get("name", "?"), version=meta.get("graspsim_version", "?"),
                   total=int(meta.get("n_candidates", len(rows))), evaluated=len(rows), by_status=dict(by_status),
                   by_object=by_object, force_closure=len(fc), epsilon=eps, best=best, failures=failures,
                   dynamic=dynamic, timing=timing, rows=rows)


def plot_summary(s: Summary, directory) -> list[Path]:
    """Save ``epsilon_hist.png`` and ``success_vs_direction.png`` in ``directory``; returns the paths.

    Success is force closure (static runs) or a held lift test (dynamic runs); the direction plot
    shows the success rate against the angle between the approach direction and straight down,
    and a map of the approach directions (azimuth, elevation) coloured by their success rate.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    out = []

    fig, ax = plt.subplots(figsize=(6, 4))
    if len(s.epsilon):
        ax.hist(s.epsilon, bins=20, color="#4878a8", edgecolor="white")
    else:
        ax.text(0.5, 0.5, "no force-closure grasp", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("epsilon quality (force-closure grasps)")
    ax.set_ylabel("grasps")
    ax.set_title(f"{s.name}: epsilon of {len(s.epsilon)} force-closure grasps ({s.evaluated} candidates)")
    fig.tight_layout()
    p = d / "epsilon_hist.png"
    fig.savefig(p, dpi=120)
    plt.close(fig)
    out.append(p)

    rows = [r for r in s.rows if r["dir_z"] is not None]
    succ_key = "held" if s.dynamic else "force_closure"
    dirs = np.array([[r["dir_x"], r["dir_y"], r["dir_z"]] for r in rows]).reshape(-1, 3)
    succ = np.array([1.0 if r[succ_key] else 0.0 for r in rows])
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    if len(rows):
        ang = np.degrees(np.arccos(np.clip(-dirs[:, 2], -1.0, 1.0)))   # 0: straight down, 90: horizontal
        edges = np.arange(0.0, 180.0 + 15.0, 15.0)
        idx = np.clip(np.digitize(ang, edges) - 1, 0, len(edges) - 2)
        rate = np.array([succ[idx == k].mean() if np.any(idx == k) else np.nan for k in range(len(edges) - 1)])
        n = np.array([np.sum(idx == k) for k in range(len(edges) - 1)])
        centers = 0.5 * (edges[:-1] + edges[1:])
        a1.bar(centers, np.nan_to_num(rate), width=13.0, color="#59a14f")
        for c, r_, k in zip(centers, rate, n):
            if k:
                a1.text(c, (0 if np.isnan(r_) else r_) + 0.01, str(int(k)), ha="center", fontsize=7)
        a1.set_xlim(0, 180)
        a1.set_ylim(0, 1.05)
        # per direction: aggregate over rolls, stand-offs, preshapes
        keys = {}
        for dvec, sv in zip(map(tuple, np.round(dirs, 9)), succ):
            keys.setdefault(dvec, []).append(sv)
        D = np.array(list(keys)).reshape(-1, 3)
        R = np.array([np.mean(v) for v in keys.values()])
        az = np.degrees(np.arctan2(D[:, 1], D[:, 0]))
        el = np.degrees(np.arcsin(np.clip(D[:, 2], -1.0, 1.0)))
        sc = a2.scatter(az, el, c=R, cmap="viridis", vmin=0.0, vmax=1.0, s=40, edgecolors="k", linewidths=0.3)
        fig.colorbar(sc, ax=a2, label="success rate")
    a1.set_xlabel("angle of the approach from straight down (deg)")
    a1.set_ylabel("force-closure rate" if not s.dynamic else "held rate")
    a1.set_title("success rate by approach angle (numbers: candidates)")
    a2.set_xlabel("approach azimuth (deg)")
    a2.set_ylabel("approach elevation (deg; -90 = moving down)")
    a2.set_xlim(-180, 180)
    a2.set_ylim(-90, 90)
    a2.set_title("approach directions")
    fig.tight_layout()
    p = d / "success_vs_direction.png"
    fig.savefig(p, dpi=120)
    plt.close(fig)
    out.append(p)
    return out
