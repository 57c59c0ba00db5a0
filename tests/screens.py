"""The widths the browser tests name, and pressing a control as a person can: seen, on screen and,
on a phone, within its width."""
from __future__ import annotations

from playwright.sync_api import expect

SCREENS = {"desktop": {"width": 1440, "height": 900}, "phone": {"width": 390, "height": 844}}


def press(page, button, width: int) -> None:
    """A person can see the control and reach it without scrolling sideways on a phone."""
    button.scroll_into_view_if_needed()
    expect(button).to_be_visible()
    expect(button).to_be_in_viewport()
    if width < 700:
        box = button.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, box
    button.click()
