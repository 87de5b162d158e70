"""Names for buttons that show only an icon: ipywidgets' Play, as a screen reader reads it.

In ipywidgets 8 a Button or ToggleButton is a <button> whose text is its `description` (that is
its accessible name) and whose `title` is its `tooltip`. Play is different: three <button>s
(play/pause, stop, repeat) that hold only an icon, <i class="fa fa-play">, with no text and no
title. No trait of ipywidgets 8 writes an aria-label (its controls never set one), and Play's
`tooltip` only becomes the title of the <div> around the three buttons, and only while its
`description` is empty (Play never shows its description anyway).

What names them here is CSS, no JavaScript: the alternative text of generated content,
`content: "<icon>" / "play"`, which browsers take as the icon's text in the button's name. The
stylesheet travels in a hidden HTML widget beside the Play. A browser that does not know that
syntax ignores the rule and shows the icon as before, unnamed.
"""
import ipywidgets as widgets

PLAY_CLASS = "asyncps-play"
# Font Awesome 4.7 (JupyterLab's) icon of each of Play's buttons: its glyph and its name
PLAY_ICONS = {"play": ("\\f04b", "play"), "pause": ("\\f04c", "pause"),
              "stop": ("\\f04d", "stop, back to the first frame"), "retweet": ("\\f079", "repeat")}


def play(tooltip, **traits):
    """An ipywidgets Play that says `tooltip` on hover, with the class `named_icons` names it by."""
    control = widgets.Play(description="", tooltip=tooltip, **traits)
    control.add_class(PLAY_CLASS)
    return control


def named_icons():
    """A hidden widget whose stylesheet gives the buttons of every Play made by `play` a name."""
    rules = "".join(f'.{PLAY_CLASS} i.fa-{icon}::before{{content:"{glyph}" / "{name}"}}'
                    for icon, (glyph, name) in PLAY_ICONS.items())
    return widgets.HTML(f"<style>{rules}</style>", layout=widgets.Layout(display="none"))
