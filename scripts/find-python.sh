#!/bin/sh
# Prints a python3 that can import matplotlib (Debian's python3-matplotlib lives in
# /usr/bin/python3, which a pyenv or venv python3 earlier on PATH cannot see). Exit 1 if none.
for py in "${PYTHON:-}" python3 /usr/bin/python3; do
  [ -n "$py" ] || continue
  if "$py" -c "import matplotlib" >/dev/null 2>&1; then
    command -v "$py"
    exit 0
  fi
done
exit 1
