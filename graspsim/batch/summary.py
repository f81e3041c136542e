"""Summaries of a results database: outcome counts, best grasps, epsilon distribution, failures
by kind, and plots (epsilon histogram, success rate against approach direction)."""
from __future__ import annotations

import json
import math
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .outcomes import OUTCOMES, count_outcomes, outcome_keys, success_key
from .store import read_config, read_results

__all__ = ["Summary", "summarize", "plot_summary", "summary_figures"]

_COLS = ["id", "object", "source", "dir_x", "dir_y", "dir_z", "roll", "standoff", "preshape", "status",
         "error_kind", "error_stage", "error", "force_closure", "epsilon", "volume", "n_contacts", "approach_stop",
         "touched", "collision", "held", "slip", "lifted", "dropped", "dyn_force_closure", "dyn_epsilon", "t_total",
         "t_cpu", "rob_p_force_closure", "rob_eps_mean", "rob_eps_p05", "rob_samples"]


@dataclass
class Summary:
    """Figures of one results database (see :func:`summarize`).

    Every evaluated row has exactly one outcome (:mod:`graspsim.batch.outcomes`): ``outcomes``
    adds up to ``evaluated``, and ``evaluated`` plus the rows not yet evaluated is ``total``.
    """

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
    errors: list                    # [(error_kind, error_stage, count, example message)]
    outcomes: dict = field(default_factory=dict)     # outcome key -> rows (every key of the run's kind)
    collisions: dict = field(default_factory=dict)   # body the open hand overlapped -> pre-grasp collision rows
    dynamic: dict | None = None     # held, dropped, mean slip ... when the run was dynamic
    timing: dict = field(default_factory=dict)
    rows: list = field(default_factory=list, repr=False)
    best_by_object: dict = field(default_factory=dict)   # object -> its best row (as ``best`` ranks), if any
    best_robust: list = field(default_factory=list)      # top rows by robustness (runs that store it)
    dof_units: dict = field(default_factory=dict)        # DOF name -> (unit, scale from SI) for the preshapes

    def object_rates(self) -> dict:
        """object -> (evaluated rows, successes, success rate); every row counts (errors fail)."""
        key = "held" if self.dynamic is not None else "force_closure"
        return {o: (d["rows"], d[key], d[key] / d["rows"] if d["rows"] else 0.0)
                for o, d in sorted(self.by_object.items())}

    @property
    def ok(self) -> int:
        """Rows that went through the approach and the grasp (status ok)."""
        return self.by_status.get("ok", 0)

    @property
    def success(self) -> int:
        """Rows with the run's success outcome (force closure; held in a dynamic run)."""
        return self.outcomes.get(success_key(self.dynamic is not None), 0)

    @property
    def failures(self) -> dict:
        """Outcome key -> rows, for every outcome but success (they add up to evaluated - success)."""
        ok = success_key(self.dynamic is not None)
        return {k: n for k, n in self.outcomes.items() if k != ok}

    def epsilon_histogram(self, bins: int = 10):
        if not len(self.epsilon):
            return np.zeros(0), np.zeros(0)
        hi = float(self.epsilon.max())
        return np.histogram(self.epsilon, bins=bins, range=(0.0, hi if hi > 0 else 1.0))

    def text(self) -> str:
        dyn = self.dynamic is not None
        n = self.evaluated

        def pct(k: int, of: int) -> str:
            return f"{100.0 * k / of:.1f}%" if of else "-"

        L = [f"batch '{self.name}' ({self.db}; graspsim {self.version})"]
        head = f"candidates: {self.total}; evaluated: {n}"
        if n < self.total:
            head += f"; not evaluated yet: {self.total - n} (continue with 'graspsim batch ... --resume')"
        L.append(head)
        L.append(f"outcomes of the {n} evaluated candidates (each has exactly one):")
        width = max(len(OUTCOMES[k][0]) for k in self.outcomes) if self.outcomes else 5
        for k, c in self.outcomes.items():
            label, meaning = OUTCOMES[k]
            L.append(f"  {label:{width}s} {c:6d} {pct(c, n):>6s}  {meaning}")
        L.append(f"  {'total':{width}s} {sum(self.outcomes.values()):6d} {pct(n, n):>6s}")
        what = OUTCOMES[success_key(dyn)][0]
        L.append(f"success ({what}): {self.success} of {n} evaluated candidates ({pct(self.success, n)}); "
                 f"{self.success} of the {self.ok} that reached the grasp ({pct(self.success, self.ok)})")
        if dyn:
            L.append(f"static force closure (before the dynamic grasp): {self.force_closure} of {n} "
                     f"({pct(self.force_closure, n)})")
        if len(self.by_object) > 1:
            rates = self.object_rates()
            some = sum(1 for _, k, _ in rates.values() if k)
            L.append(f"per object ({len(rates)}; {some} with at least one {what}): evaluated, {what}, "
                     "best grasp (id, epsilon)")
            w = max(len(o) for o in rates)
            for o, (nr, k, _) in rates.items():
                b = self.best_by_object.get(o)
                best = f"best #{b['id']} epsilon {b['epsilon']:.4f}" if b else "best -"
                L.append(f"  {o:{w}s} {nr:6d} {k:6d} {pct(k, nr):>6s}  {best}")
        if dyn:
            d = self.dynamic
            L.append(f"lift test: held {d['held']} of {d['tested']} tested ({pct(d['held'], d['tested'])}), "
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
                     "epsilon    volume  contacts" + ("  held  slip mm" if dyn else ""))
            for r in self.best:
                az = math.degrees(math.atan2(r["dir_y"], r["dir_x"]))
                el = math.degrees(math.asin(max(-1.0, min(1.0, r["dir_z"]))))
                pre = _preshape_text(r["preshape"], self.dof_units)
                s = (f"  {r['id']:6d}  {r['object'][:12]:12s}  ({az:7.1f}, {el:6.1f})   {math.degrees(r['roll']):8.1f}  "
                     f"{r['standoff'] * 1e3:11.1f}  {pre[:19]:19s}  {r['epsilon']:8.4f}  {r['volume']:8.3g}  "
                     f"{r['n_contacts']:8d}")
                if dyn:
                    s += f"  {'yes' if r.get('held') else 'no ':>4s}  {(r.get('slip') or 0.0) * 1e3:7.2f}"
                L.append(s)
        if self.best_robust:
            ns = sorted({r["rob_samples"] for r in self.best_robust})
            L.append(f"best {len(self.best_robust)} grasps by robustness (probability of force closure under object "
                     f"pose and friction noise, {'/'.join(map(str, ns))} samples; then mean, 5th-percentile epsilon):")
            L.append("      id  object        P(force closure)  eps mean   eps p05   epsilon")
            for r in self.best_robust:
                L.append(f"  {r['id']:6d}  {r['object'][:12]:12s}  {r['rob_p_force_closure']:16.2f}  "
                         f"{r['rob_eps_mean']:8.4f}  {r['rob_eps_p05']:8.4f}  {r['epsilon']:8.4f}")
        fails = {k: c for k, c in self.failures.items() if c}
        nf = sum(fails.values())
        if nf:
            L.append(f"failures: {nf} of {n} evaluated candidates ({pct(nf, n)}) did not reach {what}: "
                     + ", ".join(f"{OUTCOMES[k][0]} {c}" for k, c in fails.items()))
            if self.collisions:
                L.append("  pre-grasp collisions by the body the open hand overlapped: "
                         + ", ".join(f"{b} {c}" for b, c in self.collisions.items()))
            if self.errors:
                L.append("  errors by kind (stage):")
                for kind, stage, c, msg in self.errors:
                    L.append(f"    {kind} ({stage}): {c}  e.g. {msg.splitlines()[0][:100] if msg else ''}")
        elif n:
            L.append(f"failures: none (every evaluated candidate reached {what})")
        if self.timing:
            t = self.timing
            L.append(f"time per candidate: median {t['median_ms']:.1f} ms wall, {t['median_cpu_ms']:.1f} ms CPU; "
                     f"{t['per_cpu_s']:.1f} candidates per CPU-second")
        return "\n".join(L)

    def plot(self, directory) -> list[Path]:
        return plot_summary(self, directory)


def _preshape_text(js, units: dict | None = None) -> str:
    """A preshape's DOF values in degrees or millimetres (``units`` from :func:`_dof_units`; a DOF
    not in it is taken as revolute)."""
    try:
        d = json.loads(js or "{}")
    except ValueError:
        return str(js)
    units = units or {}
    return ",".join(f"{k}={v * units.get(k, ('', 180.0 / math.pi))[1]:.0f}{units.get(k, ('', 0))[0]}"
                    for k, v in d.items()) or "-"


def _dof_units(cfg: dict) -> dict:
    """DOF name -> ('', 180/pi) for revolute, ('mm', 1000) for prismatic DOFs of the run's hand, read
    from its model files; {} when they cannot be read (moved since the run)."""
    try:
        sc = cfg["scenes"][0]
        if "world_file" in sc:
            from ..model.loader import load_world as load_description

            robot = next(r.robot for r in load_description(sc["world_file"]).robots if r.name == cfg["hand"])
        else:
            from .. import load_robot

            robot = load_robot(sc["compose"]["hand_file"])
        return {n: (("", 180.0 / math.pi) if robot.joints[d.joints[0]].kind == "revolute" else ("mm", 1000.0))
                for n, d in zip(robot.dof_names, robot.dofs)}
    except Exception:  # noqa: BLE001 -- a summary of an old database still prints, in degrees
        return {}


def _overlapped(row: dict, hand: str) -> set:
    """The bodies other than the hand in a pre-grasp collision row's pairs ('hand/link-body; ...';
    a body name may contain '-', a hand link name is assumed not to)."""
    out = set()
    prefix = f"{hand}/"
    for pair in (row.get("collision") or "").split(";"):
        pair = pair.strip()
        if f"-{prefix}" in pair:                       # body-hand/link
            out.add(pair[:pair.index(f"-{prefix}")])
        elif pair.startswith(prefix) and "-" in pair[len(prefix):]:   # hand/link-body
            out.add(pair[len(prefix):].split("-", 1)[1])
    return out


def summarize(db, *, top: int = 10, object: str | None = None) -> Summary:
    """Figures of the results in ``db`` (optionally of one object)."""
    meta = read_config(db)
    rows = read_results(db, columns=_COLS, where="object = ?" if object else None, params=(object,) if object else ())
    cfg = meta.get("config", {})
    dyn = cfg.get("evaluation", {}).get("mode") == "dynamic"
    by_status = Counter(r["status"] for r in rows)
    counted = count_outcomes(rows, dyn)
    outcomes = {k: counted.get(k, 0) for k in outcome_keys(dyn)}
    hand = cfg.get("hand", "")
    collisions = Counter(b for r in rows if r["status"] == "pregrasp_collision" for b in _overlapped(r, hand))
    ok = [r for r in rows if r["status"] == "ok"]
    fc = [r for r in ok if r["force_closure"]]
    eps = np.array([r["epsilon"] for r in fc], dtype=float)
    best = sorted(fc, key=lambda r: (-r["epsilon"], r["id"]))[:max(0, top)]
    errs = Counter((r["error_kind"], r["error_stage"]) for r in rows if r["status"] == "error")
    example = {}
    for r in rows:
        if r["status"] == "error":
            example.setdefault((r["error_kind"], r["error_stage"]), r["error"])
    errors = [(k, s, n, example[(k, s)]) for (k, s), n in sorted(errs.items(), key=lambda x: (-x[1], x[0]))]
    dynamic = None
    if dyn:
        tested = [r for r in rows if r["held"] is not None]
        held = [r for r in tested if r["held"]]
        dynamic = {"tested": len(tested), "held": len(held), "dropped": sum(1 for r in tested if r["dropped"]),
                   "median_slip": float(np.median([r["slip"] for r in held])) if held else 0.0}
        best = sorted(fc, key=lambda r: (-(r["held"] or 0), -r["epsilon"], r["id"]))[:max(0, top)]
    rank = (lambda r: (-(r["held"] or 0), -r["epsilon"], r["id"])) if dyn else (lambda r: (-r["epsilon"], r["id"]))
    best_by_object = {}
    for r in sorted(fc, key=rank):
        best_by_object.setdefault(r["object"], r)
    by_object = {}
    for r in rows:
        d = by_object.setdefault(r["object"], {"rows": 0, "force_closure": 0, "held": 0})
        d["rows"] += 1
        d["force_closure"] += int(bool(r["force_closure"]))
        d["held"] += int(bool(r["held"]))
    robust = [r for r in fc if r["rob_samples"] is not None]
    best_robust = sorted(robust, key=lambda r: (-r["rob_p_force_closure"], -r["rob_eps_mean"], -r["rob_eps_p05"],
                                                r["id"]))[:max(0, top)]
    timing = {}
    tt = [r["t_total"] for r in rows if r["t_total"] is not None]
    tc = [r["t_cpu"] for r in rows if r["t_cpu"] is not None]
    if tt and tc:
        timing = {"median_ms": 1e3 * float(np.median(tt)), "median_cpu_ms": 1e3 * float(np.median(tc)),
                  "per_cpu_s": len(tc) / max(sum(tc), 1e-12)}
    return Summary(db=str(db), name=meta.get("name", "?"), version=meta.get("graspsim_version", "?"),
                   total=int(meta.get("n_candidates", len(rows))), evaluated=len(rows), by_status=dict(by_status),
                   by_object=by_object, force_closure=len(fc), epsilon=eps, best=best, errors=errors,
                   outcomes=outcomes, collisions=dict(collisions.most_common()), dynamic=dynamic, timing=timing,
                   rows=rows, best_by_object=best_by_object, best_robust=best_robust, dof_units=_dof_units(cfg))


def plot_summary(s: Summary, directory) -> list[Path]:
    """Save ``epsilon_hist.png``, ``success_vs_direction.png`` and, for several objects,
    ``success_by_object.png`` in ``directory``; returns the paths
    (see :func:`summary_figures`)."""
    import matplotlib.pyplot as plt

    from ..arguments import output_folder

    d = output_folder("plots folder", directory)
    out = []
    for name, fig in summary_figures(s):
        p = d / name
        fig.savefig(p, dpi=120)
        plt.close(fig)
        out.append(p)
    return out


def summary_figures(s: Summary) -> list:
    """[(file name, matplotlib Figure)]: the epsilon histogram, and the success rate against the
    approach direction.

    Success is force closure (static runs) or a held lift test (dynamic runs); the direction plot
    shows the success rate against the angle between the approach direction and straight down,
    and a map of the approach directions (azimuth, elevation) coloured by their success rate.
    Every candidate counts, pre-grasp collisions and errors as failures.  The caller closes the
    figures.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    fig, ax = plt.subplots(figsize=(6, 4))
    if len(s.epsilon):
        ax.hist(s.epsilon, bins=20, color="#4878a8", edgecolor="white")
    else:
        ax.text(0.5, 0.5, "no force-closure grasp", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("epsilon quality")
    ax.set_ylabel("grasps")
    # the run's name can be long: wrapped, so that the title stays inside the figure
    title = textwrap.fill(f"{s.name}: epsilon of the force-closure grasps", 52)
    ax.set_title(f"{title}\n{len(s.epsilon)} force-closure grasps of {s.evaluated} evaluated candidates",
                 fontsize=10)
    fig.tight_layout()
    out.append(("epsilon_hist.png", fig))

    rows = [r for r in s.rows if r["dir_z"] is not None]
    succ_key = "held" if s.dynamic else "force_closure"
    dirs = np.array([[r["dir_x"], r["dir_y"], r["dir_z"]] for r in rows]).reshape(-1, 3)
    succ = np.array([1.0 if r[succ_key] else 0.0 for r in rows])
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    what = "held rate" if s.dynamic else "force-closure rate"
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
                a1.text(c, (0 if np.isnan(r_) else r_) + 0.01, str(int(k)), ha="center", va="bottom", fontsize=7)
        # per direction: aggregate over rolls, stand-offs, preshapes
        keys = {}
        for dvec, sv in zip(map(tuple, np.round(dirs, 9)), succ):
            keys.setdefault(dvec, []).append(sv)
        D = np.array(list(keys)).reshape(-1, 3)
        R = np.array([np.mean(v) for v in keys.values()])
        # straight up or down has no azimuth: drawn at 0
        vertical = np.hypot(D[:, 0], D[:, 1]) < 1e-9
        az = np.where(vertical, 0.0, np.degrees(np.arctan2(D[:, 1], D[:, 0])))
        el = np.degrees(np.arcsin(np.clip(D[:, 2], -1.0, 1.0)))
        sc = a2.scatter(az, el, c=R, cmap="viridis", vmin=0.0, vmax=1.0, s=40, edgecolors="k", linewidths=0.3)
        fig.colorbar(sc, ax=a2, label=what)
    a1.set_xlim(0, 180)
    a1.set_ylim(0, 1.12)                      # room for the counts above a full bar
    a1.set_xticks(np.arange(0, 181, 30))
    a1.set_xlabel("angle of the approach from straight down (deg)")
    a1.set_ylabel(what)
    a1.set_title("success by approach angle (numbers: candidates)", fontsize=10)
    # margins beyond +-180 / +-90 so that markers on the edges (straight down) are drawn whole
    a2.set_xlim(-195, 195)
    a2.set_ylim(-100, 100)
    a2.set_xticks(np.arange(-180, 181, 90))
    a2.set_yticks(np.arange(-90, 91, 30))
    a2.set_xlabel("approach azimuth (deg)")
    a2.set_ylabel("approach elevation (deg; -90 = straight down)")
    a2.set_title("approach directions, coloured by success", fontsize=10)
    fig.tight_layout()
    out.append(("success_vs_direction.png", fig))
    if len(s.by_object) > 1:
        out.append(("success_by_object.png", _object_figure(s, what)))
    return out


def _object_figure(s: Summary, what: str):
    """Success rate per object, sorted from best to worst (an object set's overview)."""
    import matplotlib.pyplot as plt

    rates = s.object_rates()
    order = sorted(rates, key=lambda o: (-rates[o][2], o))
    y = [rates[o][2] for o in order]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.22 * len(order) + 1.5), 4.2))
    ax.bar(range(len(order)), y, color="#4878a8")
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels(order, rotation=90, fontsize=7 if len(order) > 20 else 9)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(what)
    ax.set_title(textwrap.fill(f"{s.name}: {what} per object ({len(order)} objects, "
                               f"{s.evaluated} candidates)", 70), fontsize=10)
    fig.tight_layout()
    return fig
