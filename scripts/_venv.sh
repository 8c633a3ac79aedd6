# Sourced by the entry scripts: makes sure .venv exists and holds this checkout's dependencies.
# Re-installs only when setup.cfg changes, so every later start is instant.
VENV=${VENV:-.venv}
_stamp="$VENV/.installed-$(cksum setup.cfg | cut -d' ' -f1)"
if [ ! -f "$_stamp" ]; then
  PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { echo "Python 3.11 or newer is needed (set PYTHON=/path/to/python3.11)" >&2; exit 1; }
  echo "Installing into $VENV (first run only)..." >&2
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV" >&2
  "$VENV/bin/python" -m pip install --quiet --upgrade pip >&2
  "$VENV/bin/python" -m pip install --quiet -e . >&2
  rm -f "$VENV"/.installed-* && touch "$_stamp"
fi
