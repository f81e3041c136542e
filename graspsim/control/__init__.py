"""Control: PD drives tracking smooth trajectories, Cartesian lines through IK, auto-grasp, lift test."""
from .pd import PDController  # noqa: F401
from .trajectory import JointTrajectory, TrajectoryError, cartesian_line, joint_trajectory, quintic  # noqa: F401
