"""Grasp planning: simulated annealing over the hand's pose and eigengrasp amplitudes.

After GraspIt's planner (Ciocarlie & Allen, "Hand posture subspaces for dexterous robotic
grasping", IJRR 2009).  See docs/planner.md.
"""
from .api import GraspQualitySummary, PlannedGrasp, RobustnessSummary, free_hand_world, plan_grasps, rank_robust
from .space import GraspSpace, eigengrasps

__all__ = ["plan_grasps", "rank_robust", "free_hand_world", "PlannedGrasp", "GraspQualitySummary", "RobustnessSummary", "GraspSpace", "eigengrasps"]
