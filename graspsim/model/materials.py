"""Materials and the pairwise friction table (static / kinetic Coulomb coefficients)."""
from __future__ import annotations

from dataclasses import dataclass

from .readonly import ReadOnlyDict

#: GraspIt's default table: (static, kinetic) per unordered pair; 'frictionless' gives 0 with anything.
DEFAULT_FRICTION = {
    ("glass", "glass"): (0.2, 0.1), ("glass", "metal"): (0.2, 0.1), ("glass", "plastic"): (0.2, 0.1),
    ("glass", "wood"): (0.3, 0.2), ("glass", "rubber"): (1.0, 0.9), ("glass", "stone"): (0.3, 0.2),
    ("metal", "metal"): (0.2, 0.1), ("metal", "plastic"): (0.2, 0.1), ("metal", "wood"): (0.3, 0.2),
    ("metal", "rubber"): (1.0, 0.9), ("metal", "stone"): (0.4, 0.3),
    ("plastic", "plastic"): (0.3, 0.2), ("plastic", "wood"): (0.4, 0.3), ("plastic", "rubber"): (1.0, 0.9),
    ("plastic", "stone"): (0.4, 0.3),
    ("wood", "wood"): (0.4, 0.3), ("wood", "rubber"): (1.0, 0.9), ("wood", "stone"): (0.6, 0.5),
    ("rubber", "rubber"): (2.0, 1.9), ("rubber", "stone"): (1.5, 1.4),
    ("stone", "stone"): (0.7, 0.6),
}
DEFAULT_MATERIALS = ("frictionless", "glass", "metal", "plastic", "wood", "rubber", "stone")


def _key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


@dataclass(frozen=True)
class MaterialTable:
    """Symmetric table of friction (static, kinetic) and restitution per material pair."""

    friction: ReadOnlyDict
    restitution: ReadOnlyDict
    materials: tuple

    @classmethod
    def default(cls) -> "MaterialTable":
        return cls.build({}, {})

    @classmethod
    def build(cls, extra_friction: dict, restitution: dict) -> "MaterialTable":
        fr = {_key(*k): v for k, v in DEFAULT_FRICTION.items()}
        fr.update({_key(*k): tuple(v) for k, v in extra_friction.items()})
        mats = set(DEFAULT_MATERIALS)
        for a, b in list(fr) + list(restitution):
            mats.update((a, b))
        rest = {_key(*k): float(v) for k, v in restitution.items()}
        return cls(ReadOnlyDict(fr), ReadOnlyDict(rest), tuple(sorted(mats)))

    def mu(self, a: str, b: str) -> tuple[float, float]:
        """(static, kinetic) friction coefficients for materials ``a`` and ``b``."""
        if a == "frictionless" or b == "frictionless":
            return (0.0, 0.0)
        try:
            return self.friction[_key(a, b)]
        except KeyError:
            raise KeyError(f"no friction coefficient for the material pair ({a}, {b}); "
                           f"add it to the world's 'materials.friction' table") from None

    def restitution_of(self, a: str, b: str) -> float:
        return self.restitution.get(_key(a, b), 0.0)
