#!/bin/bash
# breakdown.sh NAME IMAGE PKG
n=$1; img=$2; pkg=$3
python3 measure.py $img \
  "py=cd /testbed && PYTHONDONTWRITEBYTECODE=1 /opt/venv/bin/python -c pass" \
  "imp_pytest=cd /testbed && PYTHONDONTWRITEBYTECODE=1 /opt/venv/bin/python -c 'import pytest'" \
  "imp_pkg=cd /testbed && PYTHONDONTWRITEBYTECODE=1 /opt/venv/bin/python -c 'import pytest, $pkg'" \
  "collect=@$n-collect.cmd" \
  "full=@$n.cmd" \
  "noplugin=@$n-noplugin.cmd" \
  "full2=@$n.cmd"
