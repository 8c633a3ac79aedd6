"""Live calls (its statements come with the live-calls work; this file holds the number's place)

Migration numbers run without gaps: until that work lands, this step changes nothing, so that the
next migration can be numbered and applied. On merging, its own m0022_live_calls.py replaces this one.
"""

STATEMENTS = ()
