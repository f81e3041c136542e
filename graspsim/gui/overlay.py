"""The 2-D overlay: toolbar buttons, DOF sliders, status text, help, wrench-panel captions.

Drawn with pyglet shapes and labels in window pixel coordinates (origin bottom-left).  The
overlay only shows state and reports hits (:meth:`Overlay.hit`); the window decides what a hit
does.
"""
from __future__ import annotations

from dataclasses import dataclass

import pyglet
from pyglet import shapes
from pyglet.text import Label

__all__ = ["Overlay", "BUTTONS", "HELP", "Hit"]

FONT = "DejaVu Sans"

#: (action, label, key)
BUTTONS = [
    ("autograsp", "Auto-grasp", "G"), ("dyngrasp", "Dyn. grasp", "D"), ("open", "Open", "O"),
    ("run", "Run/Stop", "Space"), ("step", "Step", "N"), ("reset", "Reset", "R"), None,
    ("tool:select", "Select", "1"), ("tool:move", "Move", "2"), ("tool:pull", "Pull", "3"),
    ("tool:push", "Push", "4"), None,
    ("cones", "Cones", "C"), ("wrench", "Wrench", "W"), ("fit", "Fit", "F"), ("help", "Help", "H"), None,
    ("plan", "Plan", "P"), ("prev_grasp", "< Grasp", "B"), ("next_grasp", "Grasp >", "M"),
]

HELP = """Mouse
  left drag: orbit (Select tool) / move robot or object (Move) / pull with a spring (Pull) / push with a probe (Push)
  left click: select a robot or body        right drag or shift+left drag: pan        wheel: zoom        middle drag: orbit
Keys
  G auto-grasp   D dynamic auto-grasp   O open hand   Space run/stop dynamics   N one step   R reset
  Tab / shift+Tab select next / previous   [ ] choose DOF   - = change DOF (shift: x5)   sliders on the right
  arrows move the selected robot or body (camera-relative, 5 mm; shift 20 mm)   PageUp/PageDown up/down   Q E turn
  1 2 3 4 tools   C cones   W wrench-space panel   , . force arrow scale   F fit view   F12 screenshot   H help   Esc quit
  P plan grasps (in the background)   M / B next / previous planned grasp"""


@dataclass
class Hit:
    """What the mouse is over: a button (``action``) or a DOF slider (``dof`` index, ``fraction`` 0..1)."""

    kind: str
    action: str = ""
    dof: int = -1
    fraction: float = 0.0


class Overlay:
    """Builds and updates the 2-D widgets for a window of a given size."""

    BUTTON_H = 24
    SLIDER_W = 240
    SLIDER_STEP = 38
    STATUS_LINES = 5

    def __init__(self, window: pyglet.window.Window):
        self.window = window
        self.batch = pyglet.graphics.Batch()
        self.bg = pyglet.graphics.Group(order=0)
        self.fg = pyglet.graphics.Group(order=1)
        self.txt = pyglet.graphics.Group(order=2)
        self._layout_key = None
        self.buttons: list[tuple[str, tuple[int, int, int, int], shapes.Rectangle, Label]] = []
        self.sliders: list[tuple[tuple[int, int, int, int], shapes.Rectangle, shapes.Rectangle, Label]] = []
        self.status_box = None
        self.status_labels: list[Label] = []
        self.help_box = None
        self.help_label = None
        self.captions: list[Label] = []
        self.hover = None

    # -- layout -------------------------------------------------------------------------------
    def layout(self, width: int, height: int, dof_names: tuple, show_help: bool, wrench_rects: tuple) -> None:
        key = (width, height, dof_names, show_help, wrench_rects)
        if key == self._layout_key:
            return
        self._layout_key = key
        for obj in [b[2] for b in self.buttons] + [b[3] for b in self.buttons]:
            obj.delete()
        for s in self.sliders:
            for obj in s[1:]:
                obj.delete()
        for obj in self.status_labels + self.captions + [self.status_box, self.help_box, self.help_label]:
            if obj is not None:
                obj.delete()
        self.buttons, self.sliders, self.status_labels, self.captions = [], [], [], []
        x, y, h = 8, height - 8 - self.BUTTON_H, self.BUTTON_H
        for b in BUTTONS:
            if b is None:
                x += 10
                continue
            action, text, key_name = b
            w = 14 + 7 * len(text)
            r = shapes.Rectangle(x, y, w, h, color=(40, 44, 52, 210), batch=self.batch, group=self.bg)
            lab = Label(text, font_name=FONT, font_size=9, x=x + w // 2, y=y + h // 2, anchor_x="center",
                        anchor_y="center", color=(235, 235, 235, 255), batch=self.batch, group=self.txt)
            self.buttons.append((action, (x, y, w, h), r, lab))
            x += w + 4
        sx = width - self.SLIDER_W - 12
        for k, name in enumerate(dof_names):
            ty = height - 48 - self.BUTTON_H - k * self.SLIDER_STEP
            track = shapes.Rectangle(sx, ty, self.SLIDER_W, 6, color=(70, 76, 88, 230), batch=self.batch,
                                     group=self.bg)
            knob = shapes.Rectangle(sx, ty - 5, 10, 16, color=(230, 140, 30, 255), batch=self.batch, group=self.fg)
            lab = Label(name, font_name=FONT, font_size=9, x=sx, y=ty + 10, color=(235, 235, 235, 255),
                        batch=self.batch, group=self.txt)
            self.sliders.append(((sx, ty - 6, self.SLIDER_W, 18), track, knob, lab))
        self.status_box = shapes.Rectangle(0, 0, min(width, 760), 97, color=(20, 22, 26, 170), batch=self.batch,
                                           group=self.bg)
        for i in range(self.STATUS_LINES):
            self.status_labels.append(Label("", font_name=FONT, font_size=10, x=8,
                                            y=8 + (self.STATUS_LINES - 1 - i) * 17,
                                            color=(240, 240, 240, 255), batch=self.batch, group=self.txt))
        for (rx, ry, rs), text in zip(wrench_rects, ("force space", "torque space")):
            self.captions.append(Label(text, font_name=FONT, font_size=9, x=rx + 4, y=ry + rs - 14,
                                       color=(230, 230, 230, 255), batch=self.batch, group=self.txt))
        self.help_box = self.help_label = None
        if show_help:
            self.help_box = shapes.Rectangle(20, 100, width - 40, 165, color=(10, 12, 16, 215), batch=self.batch,
                                             group=self.bg)
            self.help_label = Label(HELP, font_name=FONT, font_size=9, x=30, y=255, width=width - 60,
                                    multiline=True, anchor_y="top", color=(240, 240, 240, 255), batch=self.batch,
                                    group=self.txt)

    # -- per-frame state ----------------------------------------------------------------------
    def update(self, status: list[str], toggled: set, dof_fractions: list[float], dof_texts: list[str],
               dof_cursor: int) -> None:
        for action, _, rect, _ in self.buttons:
            on = action in toggled
            hov = action == self.hover
            rect.color = (200, 110, 20, 230) if on else ((70, 78, 92, 230) if hov else (40, 44, 52, 210))
        for k, ((sx, sy, sw, sh), track, knob, lab) in enumerate(self.sliders):
            if k < len(dof_fractions):
                knob.x = sx + dof_fractions[k] * (sw - knob.width)
                if lab.text != dof_texts[k]:
                    lab.text = dof_texts[k]
                track.color = (120, 128, 150, 240) if k == dof_cursor else (70, 76, 88, 230)
        lines = (status + [""] * self.STATUS_LINES)[:self.STATUS_LINES]
        for lab, text in zip(self.status_labels, lines):
            if lab.text != text:
                lab.text = text

    def draw(self) -> None:
        self.batch.draw()

    # -- hits ---------------------------------------------------------------------------------
    def hit(self, x: float, y: float) -> Hit | None:
        """The button or slider under (x, y), if any."""
        for action, (bx, by, bw, bh), _, _ in self.buttons:
            if bx <= x <= bx + bw and by <= y <= by + bh:
                return Hit("button", action=action)
        for k, ((sx, sy, sw, sh), *_rest) in enumerate(self.sliders):
            if sx - 6 <= x <= sx + sw + 6 and sy - 4 <= y <= sy + sh + 4:
                return Hit("slider", dof=k, fraction=min(max((x - sx - 5) / max(sw - 10, 1), 0.0), 1.0))
        return None

    def slider_fraction(self, k: int, x: float) -> float:
        (sx, _, sw, _), *_ = self.sliders[k]
        return min(max((x - sx - 5) / max(sw - 10, 1), 0.0), 1.0)

    def button_center(self, action: str) -> tuple[int, int]:
        """Pixel centre of a toolbar button (for scripted clicks and tests)."""
        for a, (bx, by, bw, bh), _, _ in self.buttons:
            if a == action:
                return bx + bw // 2, by + bh // 2
        raise KeyError(action)

    def slider_point(self, k: int, fraction: float) -> tuple[int, int]:
        """Pixel on DOF slider ``k`` at ``fraction`` of its range."""
        (sx, sy, sw, sh), *_ = self.sliders[k]
        return int(round(sx + 5 + fraction * (sw - 10))), sy + sh // 2
