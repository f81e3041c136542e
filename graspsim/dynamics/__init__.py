"""Time-stepping rigid-body dynamics with contacts (Anitescu-Potra / Miller-Christensen)."""
from .drives import DriveCommand  # noqa: F401
from .simulator import Rollout, SimData, SimState, Simulator, StepInfo  # noqa: F401
