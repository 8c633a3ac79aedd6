"""Call access (the number held for the branch that brings it; no schema change here)

This branch's migration comes after it; the branch that brings the real one replaces this file.
"""

STATEMENTS = ()
