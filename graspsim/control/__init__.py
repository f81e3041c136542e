"""Control: PD drives tracking smooth trajectories, Cartesian lines through IK, auto-grasp, lift test."""
from .autograsp import StaticGraspResult, static_auto_grasp  # noqa: F401
from .pd import PDController  # noqa: F401
from .trajectory import (JointTrajectory, QuinticBaseMotion, TrajectoryError, cartesian_line,  # noqa: F401
                         joint_trajectory, quintic)

auto_grasp = static_auto_grasp   # the name the GUI and scripts use for the static (kinematic) auto-grasp


def __getattr__(name):  # dynamic grasping pulls in the simulator: load lazily
    if name in ("dynamic_auto_grasp", "lift_test", "DynamicGraspResult", "LiftResult", "dynamic_open_hand",
                "approach", "start_dynamic_grasp"):
        from . import dynamic

        return getattr(dynamic, name)
    if name in ("ComputedTorqueFeedforward", "computed_torque_pd"):
        from . import feedforward

        return getattr(feedforward, name)
    raise AttributeError(f"module 'graspsim.control' has no attribute {name!r}")
