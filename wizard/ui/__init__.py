"""The one rendering layer (rich) for live runs, replay and export, and the terminal itself: the
operator's prompts, the event loop, Ctrl-C. May load anything but cli.
"""
