"""Model files: YAML schema, loader and the immutable descriptions they produce."""
from .description import DOF, Inertial, Joint, Link, Object, Robot, World  # noqa: F401
from .loader import load_any, load_object, load_robot, load_world  # noqa: F401
from .materials import MaterialTable  # noqa: F401
