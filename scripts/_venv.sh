# Sourced by the entry scripts: makes sure $VENV (.venv) exists and holds this checkout's
# dependencies. Installs only when setup.cfg changes (the stamp names its checksum), so every later
# start is instant. The first install takes a minute or two, so it says what it is doing and shows
# pip's own progress; everything goes to stderr, leaving stdout to the script (scripts/admin's JSON).
VENV=${VENV:-.venv}
_stamp="$VENV/.installed-$(cksum setup.cfg | cut -d' ' -f1)"
if [ ! -f "$_stamp" ]; then
  _started=$SECONDS
  PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3 || true)}
  if [ -z "$PYTHON" ] || ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "Python 3.11 or newer is needed (set PYTHON=/path/to/python3.11)" >&2
    exit 1
  fi
  # A venv without pip is what `python -m venv` leaves where ensurepip is missing: made again.
  if ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    echo "==> Creating $VENV with $("$PYTHON" -c 'import sys; print(sys.executable, sys.version.split()[0])')" >&2
    "$PYTHON" -m venv --clear "$VENV" >&2 || {
      echo "Could not create $VENV. On Debian or Ubuntu: apt-get install python3-venv (or python3.11-venv)" >&2
      exit 1
    }
  fi
  echo "==> Installing this checkout and its dependencies into $VENV (first run, or setup.cfg changed;" \
       "a minute or two)" >&2
  "$VENV/bin/python" -m pip install --disable-pip-version-check -e . >&2
  rm -f "$VENV"/.installed-* && touch "$_stamp"
  echo "==> Installed in $((SECONDS - _started)) s; later runs start at once" >&2
fi
